// Image search: POST /images/upload (multipart, field `image`) and POST /search/image (`image_id` or
// base64 `image_data` plus the standard result fields); the `agg:images` channel between the
// image-features processor (streams/images) and the read API's image index. Spec: "Image search";
// reference-notes §9.
import { z } from 'zod';
import { STORE_ID_MESSAGE, STORE_ID_RE } from './fields.ts';
import { ResultFieldsSchema } from './storefront.ts';

/** uploads and inline images at most this many bytes (15 MB = 15 360 KiB, as the reference product) */
export const IMAGE_MAX_BYTES = 15 * 1024 * 1024;
/** base64 of IMAGE_MAX_BYTES (4 characters per 3 bytes), plus a data-URL prefix */
export const IMAGE_DATA_MAX_CHARS = Math.ceil(IMAGE_MAX_BYTES / 3) * 4 + 64;
/** an uploaded image's features are kept this long (then image_id is unknown: 404) */
export const UPLOAD_TTL_SECONDS = 24 * 60 * 60;

export const ImageUploadResponseSchema = z
  .object({
    status: z.literal('success'),
    imageId: z.uuid().describe('Send it as `image_id` to POST /search/image within 24 hours.'),
  })
  .meta({ id: 'ImageUploadResponse' });
export type ImageUploadResponse = z.infer<typeof ImageUploadResponseSchema>;

/** the multipart body of an upload, for the OpenAPI document (the route parses the stream itself) */
export const ImageUploadBodySchema = z
  .object({
    image: z.string().describe('The image file: JPEG, PNG or WebP, at most 15 MB (binary).'),
  })
  .meta({ id: 'ImageUploadRequest' });

const oneOf = 'one of image_id and image_data is required';

export const ImageSearchBodySchema = ResultFieldsSchema.extend({
  image_id: z.uuid().optional().describe('From POST /images/upload (kept 24 hours); recommended.'),
  image_data: z
    .string()
    .min(1)
    .max(IMAGE_DATA_MAX_CHARS, 'the image is larger than 15 MB')
    .optional()
    .describe('A base64 JPEG, PNG or WebP (a `data:image/…;base64,` prefix is accepted), at most 15 MB decoded.'),
})
  .superRefine((b, ctx) => {
    if (b.image_id === undefined && b.image_data === undefined) {
      ctx.addIssue({ code: 'custom', path: ['image_id'], message: oneOf });
      ctx.addIssue({ code: 'custom', path: ['image_data'], message: oneOf });
    }
  })
  .meta({ id: 'ImageSearchRequest' });
export type ImageSearchBody = z.infer<typeof ImageSearchBodySchema>;

// ─── agg:images ─────────────────────────────────────────────────────────────────────────────────────────
//
// `agg:images`: the freshness contract between the image-features processor (publisher:
// streams/images/processor.ts, after each chunk's insert, live mode only) and the read API's in-process
// image index (subscriber: services/storefront/images/index.ts). A message names, per store, the items
// (products, articles, pages) whose feature rows the chunk wrote; the subscriber re-reads exactly those
// rows (clickhouse/queries/images.ts). A repeated or late message is harmless. Pub/sub has no replay: a
// subscriber that was disconnected reloads. (Kept beside the image contracts rather than in channels.ts.)

export const IMAGES_CHANNEL = 'agg:images';
export const IMAGE_ITEM_TYPES = ['product', 'article', 'page'] as const;
export type ImageItemType = (typeof IMAGE_ITEM_TYPES)[number];
export const IMAGES_MESSAGE_MAX_ITEMS = 500;

export const ImagesChangeSchema = z.object({
  store_id: z.string().regex(STORE_ID_RE, STORE_ID_MESSAGE),
  item_type: z.enum(IMAGE_ITEM_TYPES),
  item_ids: z.array(z.string().regex(/^\d+$/)).min(1).max(IMAGES_MESSAGE_MAX_ITEMS),
});
export type ImagesChange = z.infer<typeof ImagesChangeSchema>;
export const ImagesMessageSchema = z.array(ImagesChangeSchema).min(1).max(100);

export function encodeImagesMessages(changes: readonly ImagesChange[]): string[] {
  const out: string[] = [];
  for (const c of changes)
    for (let i = 0; i < c.item_ids.length; i += IMAGES_MESSAGE_MAX_ITEMS)
      out.push(
        JSON.stringify(
          ImagesMessageSchema.parse([{ ...c, item_ids: c.item_ids.slice(i, i + IMAGES_MESSAGE_MAX_ITEMS) }]),
        ),
      );
  return out;
}

export function parseImagesMessage(text: string): ImagesChange[] {
  return ImagesMessageSchema.parse(JSON.parse(text));
}
