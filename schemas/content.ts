// Content search (POST /search/content/{searchQuery}/execute): the request body with its `tuning`, the
// content item and the response. Spec: "Content search", "Content item"; reference-notes §3. The shared
// pieces (pagination, identity, context, the path parameter) come from schemas/storefront.ts.
import { z } from 'zod';
import { PaginationSchema, StorefrontBodySchema } from './storefront.ts';

export const CONTENT_TYPES = ['article', 'page'] as const;
export type ContentType = (typeof CONTENT_TYPES)[number];

/** default ranking: text similarity 50 %, image similarity 20 %, freshness 30 % (spec) */
export const DEFAULT_CONTENT_WEIGHTS = { text: 0.5, image: 0.2, freshness: 0.3 } as const;
/** candidates re-ranked when `tuning.topK` is not sent */
export const DEFAULT_CONTENT_TOP_K = 100;

const weight = z.number().min(0, 'expected a number from 0 to 1').max(1, 'expected a number from 0 to 1');

export const ContentTuningSchema = z
  .object({
    textualWeight: weight
      .optional()
      .describe('Share of text similarity within the semantic group, 0-1; required with visualWeight.'),
    visualWeight: weight
      .optional()
      .describe('Share of image similarity within the semantic group, 0-1; required with textualWeight.'),
    topK: z
      .int('expected an integer from 1 to 100')
      .min(1, 'expected an integer from 1 to 100')
      .max(100, 'expected an integer from 1 to 100')
      .optional()
      .describe(`Candidates (best by text) re-ranked by the combined score; default ${DEFAULT_CONTENT_TOP_K}.`),
    rankingWeightOverrides: z
      .strictObject({ semantic: weight.optional(), freshness: weight.optional() })
      .optional()
      .describe(
        'Weights of the signal groups `semantic` (text + image) and `freshness`, each 0-1, normalized to sum 1; a group not sent keeps its default (0.7, 0.3).',
      ),
  })
  .superRefine((t, ctx) => {
    if ((t.textualWeight === undefined) !== (t.visualWeight === undefined)) {
      const missing = t.textualWeight === undefined ? 'textualWeight' : 'visualWeight';
      const other = missing === 'textualWeight' ? 'visualWeight' : 'textualWeight';
      ctx.addIssue({ code: 'custom', path: [missing], message: `required when tuning.${other} is given` });
    } else if (t.textualWeight === 0 && t.visualWeight === 0)
      ctx.addIssue({
        code: 'custom',
        path: ['textualWeight'],
        message: 'textualWeight and visualWeight cannot both be 0',
      });
    const o = t.rankingWeightOverrides;
    if (o && o.semantic === 0 && o.freshness === 0)
      ctx.addIssue({ code: 'custom', path: ['rankingWeightOverrides'], message: 'the weights cannot all be 0' });
  })
  .meta({ id: 'ContentSearchTuning' });
export type ContentTuning = z.infer<typeof ContentTuningSchema>;

export const ContentSearchBodySchema = StorefrontBodySchema.extend({
  content_type: z
    .enum(CONTENT_TYPES)
    .optional()
    .describe('`article` or `page`; omitted: both, merged into one ranking.'),
  pagination: PaginationSchema.optional(),
  tuning: ContentTuningSchema.optional(),
}).meta({ id: 'ContentSearchRequest' });
export type ContentSearchBody = z.infer<typeof ContentSearchBodySchema>;

export const ContentItemSchema = z
  .object({
    __typename: z.enum(['Article', 'Page']),
    content_type: z.enum(CONTENT_TYPES),
    content_id: z.number(),
    title: z.string(),
    handle: z.string(),
    summary_text: z.string().describe('HTML stripped, except images.'),
    author: z.string().nullable().describe('Null may occur for pages.'),
    tags: z.array(z.string()).describe('Empty for pages.'),
    image: z
      .object({
        url: z.string(),
        width: z.int().nullable().describe('pixels'),
        height: z.int().nullable().describe('pixels'),
        altText: z.string().nullable(),
      })
      .nullable()
      .describe('Null when the item has no image.'),
    published_at: z.string().describe('ISO 8601.'),
  })
  .meta({ id: 'ContentItem' });
export type ContentItem = z.infer<typeof ContentItemSchema>;

export const ContentSearchResponseSchema = z
  .object({
    query: z.string().describe('The query as sent.'),
    contentType: z.enum(CONTENT_TYPES).nullable().describe('The applied `content_type` filter, or null for both.'),
    results: z.array(ContentItemSchema),
    totalResults: z.int(),
    page: z.int(),
    totalPages: z.int(),
    resultsPerPage: z.int(),
    attributionToken: z.string().describe('= x-request-id.'),
    _meta: z
      .looseObject({
        weights: z
          .object({ text: z.number(), image: z.number(), freshness: z.number() })
          .optional()
          .describe('The ranking weights applied (normalized).'),
        signals: z
          .array(z.object({ text: z.number(), image: z.number(), freshness: z.number(), score: z.number() }))
          .optional()
          .describe('Per result of the page: each signal group min-max normalized (0-1) and the combined score.'),
        degraded: z
          .enum(['processing_failed'])
          .optional()
          .describe('Processing failed: the result set is empty (never an error).'),
      })
      .describe('Debug metadata.'),
  })
  .meta({ id: 'ContentSearchResponse' });
export type ContentSearchResponse = z.infer<typeof ContentSearchResponseSchema>;
