// The recommendation endpoints' contracts: POST /blocks/{blockId}/products and
// POST /search/product/{searchProductId} (similar products). Both answer the product result envelope of
// schemas/storefront.ts; blocks add the `block` object and Unix-second timestamps.
import { z } from 'zod';
import { ANCHOR_TYPES, STRATEGY_KEYS, STRATEGY_TYPES, type StrategyKey } from './config.ts';
import { ContentItemSchema } from './content.ts';
import { ProductRecordSchema, ResultEnvelopeSchema, ResultFieldsSchema } from './storefront.ts';

const anchorRef = z.string().trim().min(1).max(255);

export const BlockParamsSchema = z.object({
  blockId: z
    .string()
    .min(1)
    .max(128)
    .describe(
      'The block ULID. A theme block metaobject handle (a prefix plus the lower-case ULID) matches no block: strip the prefix and upper-case the rest.',
    ),
});

export const BlockBodySchema = ResultFieldsSchema.extend({
  anchor_id: anchorRef
    .optional()
    .describe(
      'Required for product (numeric id or product GID), article (numeric id or article GID) and collection (numeric id or handle) anchors.',
    ),
  anchor_handle: anchorRef.optional().describe('Deprecated: use anchor_id.').meta({ deprecated: true }),
  variant_id: z
    .int()
    .positive()
    .optional()
    .describe(
      "Product anchors with a variant-aware strategy (similar products, photographed together, metafield references): the anchor product's variant to recommend for; ignored otherwise.",
    ),
  excludeProductIds: z
    .array(z.string().min(1).max(256))
    .max(250)
    .optional()
    .describe('Numeric ids or product GIDs, removed before ranking, safeguards and fallbacks.'),
}).meta({ id: 'BlockRequest' });
export type BlockBody = z.infer<typeof BlockBodySchema>;

export const BlockObjectSchema = z
  .object({
    id: z.string().describe('The block ULID.'),
    title: z.string(),
    anchor_type: z.enum(ANCHOR_TYPES),
    strategy_type: z.enum(STRATEGY_TYPES),
    strategy_key: z.enum(Object.keys(STRATEGY_KEYS) as [StrategyKey, ...StrategyKey[]]),
  })
  .meta({ id: 'Block', description: 'The block that answered (the requested one; fallbacks are in _meta).' });

export const BlockResponseSchema = ResultEnvelopeSchema.extend({
  results: z
    .array(z.union([ProductRecordSchema, ContentItemSchema]))
    .describe('Product records; content items (articles, pages) for a related-content block.'),
  block: BlockObjectSchema.nullable().describe('Null when the id names no block (e.g. a prefixed theme handle).'),
}).meta({ id: 'BlockResponse', description: 'The result envelope of a block; timestamps are Unix seconds.' });
export type BlockResponse = z.infer<typeof BlockResponseSchema>;

export const SimilarParamsSchema = z.object({
  searchProductId: z
    .string()
    .regex(/^\d{1,20}$/, 'expected a numeric product id')
    .describe('The product whose similar products are wanted.'),
});

export const SimilarBodySchema = ResultFieldsSchema.meta({ id: 'SimilarProductsRequest' });
export type SimilarBody = z.infer<typeof SimilarBodySchema>;
