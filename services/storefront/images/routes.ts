// Image search endpoints: POST /images/upload (multipart/form-data, field `image`: JPEG, PNG or WebP up to
// 15 MB → {status: "success", imageId}) and POST /search/image (`image_id` from an upload, or base64
// `image_data`, plus the standard result fields → the result envelope). The query image is decoded and
// described by the same feature provider the image processor used for the catalog
// (services/common/image-features.ts), and compared with the store's in-process image index.
//
// Refusals name the field: oversized → 413 (`image` / `image_data`), not an image, truncated, corrupt or
// too many pixels → 422, no file part → 422, not multipart → 415, unknown or expired image_id → 404 (an
// upload described by another image model than the deployment's now is unknown too: its features cannot
// be compared). With a learned model (IMAGE_FEATURES=http) a failing model service → 503 `unavailable`
// with Retry-After; the model refusing the image → 422.
import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { randomUUID } from 'node:crypto';
import {
  IMAGE_DATA_MAX_CHARS,
  IMAGE_MAX_BYTES,
  ImageSearchBodySchema,
  ImageUploadBodySchema,
  ImageUploadResponseSchema,
} from '../../../schemas/images.ts';
import { ErrorBodySchema, ResultEnvelopeSchema } from '../../../schemas/storefront.ts';
import {
  type ImageFeatureProvider,
  type ImageFeatures,
  ImageError,
  ImageModelError,
} from '../../common/image-features.ts';
import type { StoreDirectory } from '../../store-config/api.ts';
import { StorefrontError } from '../errors.ts';
import type { StorefrontRequestState } from '../frame.ts';
import type { CatalogIndex } from '../results/catalog.ts';
import type { ResultsInput } from '../results/engine.ts';
import { linkHeader, preloadSettings } from '../results/preload.ts';
import { executeImageSearch } from './engine.ts';
import type { StoreImages } from './index.ts';
import type { UploadStore } from './uploads.ts';

export interface ImageRoutesOptions {
  catalog: CatalogIndex;
  directory: StoreDirectory;
  images: { get(storeId: string): Promise<StoreImages> };
  uploads: UploadStore;
  provider: ImageFeatureProvider;
}

const MB = 1024 * 1024;

function refusal(err: ImageError, field: string): StorefrontError {
  if (err.reason === 'too_large')
    return new StorefrontError(413, 'payload_too_large', 'The image is larger than 15 MB.', [
      { path: field, message: err.message },
    ]);
  const what =
    err.reason === 'unsupported_format'
      ? 'Send a JPEG, PNG or WebP image.'
      : err.reason === 'truncated'
        ? 'The image is truncated or corrupt.'
        : err.reason === 'too_many_pixels'
          ? 'The image has too many pixels.'
          : 'The image could not be decoded.';
  return new StorefrontError(422, 'validation_failed', what, [{ path: field, message: err.message }]);
}

async function describe(provider: ImageFeatureProvider, bytes: Buffer, field: string): Promise<ImageFeatures> {
  try {
    return await provider.extract(bytes);
  } catch (err) {
    if (err instanceof ImageError) throw refusal(err, field);
    // the image model service (IMAGE_FEATURES=http) failed: not the image's fault, worth a retry
    if (err instanceof ImageModelError)
      throw new StorefrontError(
        503,
        'unavailable',
        'Image search is temporarily unavailable (the image model service failed); retry shortly.',
        [{ path: field, message: err.message }],
        { 'retry-after': '5' },
      );
    throw err;
  }
}

/** base64 (optionally a data URL) → bytes; a 422 naming image_data when it is not base64 */
export function decodeImageData(data: string): Buffer {
  const m = /^data:([\w.+-]+\/[\w.+-]+)?(;[\w=.-]+)*;base64,/i.exec(data);
  const b64 = (m ? data.slice(m[0].length) : data).replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(b64) || b64.length === 0)
    throw new StorefrontError(422, 'validation_failed', 'The request is invalid; see error.fields.', [
      { path: 'image_data', message: 'expected base64 image data' },
    ]);
  const bytes = Buffer.from(b64, b64.includes('-') || b64.includes('_') ? 'base64url' : 'base64');
  if (bytes.length > IMAGE_MAX_BYTES)
    throw new StorefrontError(413, 'payload_too_large', 'The image is larger than 15 MB.', [
      { path: 'image_data', message: `the decoded image is ${bytes.length} bytes; at most ${IMAGE_MAX_BYTES}` },
    ]);
  return bytes;
}

export async function imageRoutes(host: FastifyInstance, opts: ImageRoutesOptions): Promise<void> {
  // the upload in its own encapsulated context: the multipart parser exists for it alone (every other
  // endpoint keeps refusing a non-JSON body with 415)
  await host.register(async (child) => {
    await child.register(multipart, {
      limits: { fileSize: IMAGE_MAX_BYTES, files: 1, fields: 20, parts: 21, fieldSize: 64 * 1024 },
      throwFileSizeLimit: true,
    });
    const app = child.withTypeProvider<ZodTypeProvider>();
    app.post(
      '/images/upload',
      {
        bodyLimit: IMAGE_MAX_BYTES + MB,
        config: {
          links: {
            200: {
              searchByUpload: {
                operationId: 'imageSearch',
                description: 'Search products by the uploaded image: its `imageId` as `image_id`.',
                requestBody: { image_id: '$response.body#/imageId' },
              },
            },
          },
        },
        // the body is a multipart stream read by the handler; the schema only documents it (Fastify hands
        // an absent body to the validator as null: to the frame, which checks a JSON body's identity and
        // context, this request has none)
        validatorCompiler: () => (value: unknown) => ({ value: value === null ? undefined : value }),
        schema: {
          operationId: 'uploadImage',
          summary: 'Upload an image for image search',
          description:
            'multipart/form-data with the file in the field `image`: JPEG, PNG or WebP, at most 15 MB. The image is decoded and described at once; its features are kept 24 hours under the returned `imageId` (send it as `image_id` to POST /search/image). Not an image, truncated or corrupt → 422; larger than 15 MB → 413 (both naming `image`).',
          consumes: ['multipart/form-data'],
          body: ImageUploadBodySchema,
          response: { 200: ImageUploadResponseSchema },
        },
      },
      async (req) => {
        const sf = req.storefront as StorefrontRequestState;
        let bytes: Buffer | null = null;
        try {
          for await (const part of req.parts()) {
            if (part.type !== 'file') continue;
            if (part.fieldname !== 'image') {
              part.file.resume();
              continue;
            }
            bytes = await part.toBuffer();
          }
        } catch (err) {
          const e = err as { code?: string; statusCode?: number; message: string };
          if (e.code === 'FST_REQ_FILE_TOO_LARGE')
            throw new StorefrontError(413, 'payload_too_large', 'The image is larger than 15 MB.', [
              { path: 'image', message: `at most ${IMAGE_MAX_BYTES} bytes (15 MB)` },
            ]);
          if (e.code === 'FST_INVALID_MULTIPART_CONTENT_TYPE')
            throw new StorefrontError(
              415,
              'unsupported_media_type',
              'Send the image as multipart/form-data in the field `image`.',
            );
          if (e.statusCode === 413)
            throw new StorefrontError(413, 'payload_too_large', 'Send one file in the field `image`.', [
              { path: 'image', message: e.message },
            ]);
          // the multipart parser's own errors (no boundary, body ends mid-part) carry no status: the body's fault
          if (!e.statusCode || e.statusCode < 500)
            throw new StorefrontError(422, 'validation_failed', 'The multipart body is malformed or incomplete.', [
              { path: '', message: e.message },
            ]);
          throw err;
        }
        if (!bytes)
          throw new StorefrontError(422, 'validation_failed', 'The request is invalid; see error.fields.', [
            { path: 'image', message: 'required: a file in the multipart field `image`' },
          ]);
        const features = await describe(opts.provider, bytes, 'image');
        const imageId = randomUUID();
        await opts.uploads.put(sf.store.storeId, imageId, features);
        return { status: 'success' as const, imageId };
      },
    );
  });

  const app = host.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/search/image',
    {
      config: { kind: 'image_search' },
      bodyLimit: IMAGE_DATA_MAX_CHARS + MB,
      schema: {
        operationId: 'imageSearch',
        summary: 'Search products by image',
        description:
          'The products that look most like an image: `image_id` (from POST /images/upload; recommended) or `image_data` (base64 JPEG, PNG or WebP, at most 15 MB); one of them is required. Visual similarity (colour distribution, colour layout, edges and shape, perceptual hash) ranks up to 250 candidates; filters, facets, sort orders, pagination and attributes apply as in search. `_meta.similarities` gives the page’s similarity scores.',
        body: ImageSearchBodySchema,
        response: {
          200: ResultEnvelopeSchema,
          404: ErrorBodySchema.describe('Unknown or expired `image_id` (uploads are kept 24 hours).'),
        },
      },
    },
    async (req, reply) => {
      const sf = req.storefront as StorefrontRequestState;
      const store = sf.store.storeId;
      const { image_id: imageId, image_data: imageData, ...body } = req.body;
      let query: ImageFeatures;
      if (imageId !== undefined) {
        const f = await opts.uploads.get(store, imageId);
        if (f && f.model !== opts.provider.model)
          throw new StorefrontError(
            404,
            'not_found',
            'This image was uploaded under another image model; upload it again.',
            [{ path: 'image_id', message: `described by ${f.model}; image search now uses ${opts.provider.model}` }],
          );
        if (!f)
          throw new StorefrontError(
            404,
            'not_found',
            'No uploaded image with this image_id (uploads are kept 24 hours).',
            [{ path: 'image_id', message: 'unknown or expired' }],
          );
        query = f;
      } else query = await describe(opts.provider, decodeImageData(imageData as string), 'image_data');
      const [catalog, images] = await Promise.all([opts.catalog.get(store), opts.images.get(store)]);
      const input: ResultsInput = { catalog, view: sf.view, dir: opts.directory, rc: sf.context, now: Date.now() };
      const r = executeImageSearch(input, body, images.productSimilarities(query, opts.provider), {
        model: query.model,
        ...(imageId ? { imageId } : {}),
      });
      const settings = preloadSettings(sf.store, body.responseOptions);
      if (settings) {
        r.envelope._meta.imagePreloads = { srcsetSizes: settings.srcsetSizes };
        const link = linkHeader(r.images, sf.store, settings);
        if (link) reply.header('link', link);
      }
      sf.event = {
        sort_order_code: r.sortOrderCode,
        result_product_ids: r.productIds,
        result_count: r.productIds.length,
        total_results: r.envelope.totalResults,
        page: body.pagination?.page ?? 1,
        limit: body.pagination?.limit ?? 24,
        details_json: JSON.stringify({ image_id: imageId ?? null, inline: imageId === undefined, model: query.model }),
      };
      return { ...r.envelope, attributionToken: req.id };
    },
  );
}
