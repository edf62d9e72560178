// The storefront API's request and response shapes (zod 4). Types are inferred from these schemas and the
// OpenAPI document (`/api/storefront/v1/openapi.json`) is generated from them, so the contract is written
// once. Request schemas describe what a client may send (input side): where the spec asks for leniency
// (numeric strings for prices, odd quantities, a threshold that is "ignored unless > 0") the schema accepts
// the loose value and `services/storefront/context.ts` normalizes it; where the spec gives a type, a wrong
// type is a 422 naming the field. Unknown keys are dropped everywhere (zod's default `strip`).
import { z } from 'zod';
import { ConditionGroup } from './config.ts';
import { numericGidPattern, numericGidRegex } from './fields.ts';

const str = (max = 512) => z.string().max(max);

// ─── Pagination ─────────────────────────────────────────────────────────────────────────────────────────

export const PaginationSchema = z
  .object({
    page: z.int().min(1).max(100).default(1),
    limit: z.int().min(1).max(100).default(24),
  })
  .meta({ id: 'Pagination', description: 'Page and page size, each 1 to 100.' });
export type Pagination = z.infer<typeof PaginationSchema>;

// ─── identity ───────────────────────────────────────────────────────────────────────────────────────────

export const COMPANY_LOCATION_GID = numericGidRegex('CompanyLocation');

export const IdentitySchema = z
  .object({
    deviceId: str(256).optional().describe('Persistent browser identifier.'),
    sessionId: str(256)
      .optional()
      .describe('Temporary session identifier (30 minutes without activity for service-generated sessions).'),
    customerId: str(256).optional().describe('Platform customer id of a signed-in shopper.'),
    companyLocationId: z
      .string()
      .max(256)
      .regex(COMPANY_LOCATION_GID, 'expected gid://<platform>/CompanyLocation/<id>')
      .optional()
      .describe('B2B company-location global id. Requires customerId of a customer of the owning company (else 403).'),
  })
  .meta({ id: 'Identity' });
export type IdentityInput = z.infer<typeof IdentitySchema>;

// ─── context ────────────────────────────────────────────────────────────────────────────────────────────

/** a string or a number; ids and prices arrive both ways from storefront themes */
const idLike = z.union([str(256), z.number()]);

const ItemBase = {
  title: str(1024).optional(),
  price: z
    .union([z.number(), str(64)])
    .optional()
    .describe('Major currency units (29.00 = 29 dollars), number or numeric string. A non-numeric value is ignored.'),
  type: str(256).optional(),
  productId: idLike.optional().describe('Numeric id or gid://<platform>/Product/<id>.'),
  variantId: idLike.optional().describe('Numeric id or gid://<platform>/ProductVariant/<id>.'),
  options: z.record(z.string().max(256), z.union([str(512), z.number(), z.boolean()])).optional(),
};

export const CartItemSchema = z
  .object({
    ...ItemBase,
    quantity: z.unknown().optional().describe('Fractions round down; missing, non-numeric or below 1 counts as 1.'),
  })
  .meta({
    id: 'CartItem',
    description: 'Needs at least one of productId, variantId or a non-empty title; other entries are dropped.',
  });

export const PurchasedItemSchema = z
  .object(ItemBase)
  .meta({ id: 'PurchasedItem', description: 'price is the price at purchase.' });

export const ViewedItemSchema = z
  .object({
    id: idLike.optional(),
    productId: idLike.optional().describe('Alias of id.'),
    at: z.number().optional().describe('Unix milliseconds; a view without it counts but skips recency weighting.'),
    title: str(1024).optional(),
    type: str(256).optional(),
    variantId: idLike.optional(),
    options: z.record(z.string().max(256), z.union([str(512), z.number(), z.boolean()])).optional(),
  })
  .meta({ id: 'ViewedItem', description: 'Only the 20 most recent views are used.' });

export const PriorSearchSchema = z
  .object({
    searchQuery: z.string().min(1).max(255),
    hadClick: z.boolean().optional().describe('Default false.'),
    hasResults: z.boolean().optional().describe('Default false.'),
    hadResults: z.boolean().optional().describe('Accepted alias of hasResults.'),
    fromPage: str(2048).optional().describe('Accepted, unused for ranking or rules.'),
  })
  .meta({ id: 'PriorSearch' });

export const MARKET_GID = numericGidRegex('Market');
export const MarketRefSchema = z
  .string()
  .regex(
    new RegExp(`^([A-Za-z]{2}|[0-9]{1,20}|${numericGidPattern('Market')})$`),
    'expected a two-letter country code, a numeric market id or gid://<platform>/Market/<id>',
  )
  .describe('Two-letter country code, numeric market id, or market global id gid://<platform>/Market/<id>.');

export const ContextSchema = z
  .object({
    geo: z
      .object({ country: str(64).optional(), province: str(128).optional(), city: str(128).optional() })
      .optional()
      .describe('Resolved from IP for client-side requests; server-side callers should send it.'),
    productsInCart: z.array(CartItemSchema).max(250).optional(),
    freeShippingThreshold: z
      .unknown()
      .optional()
      .describe('Major currency units. Values that are not a number greater than 0 are ignored.'),
    productsViewed: z.array(ViewedItemSchema).max(250).optional(),
    productsPurchased: z.array(PurchasedItemSchema).max(250).optional(),
    priorSearches: z.array(PriorSearchSchema).max(100).optional(),
    marketing: z
      .object({
        source: str(256).optional(),
        medium: str(256).optional(),
        campaign: str(256).optional(),
        term: str(256).optional(),
        content: str(256).optional(),
        clickIds: z
          .record(z.string().max(64), z.unknown())
          .optional()
          .describe('Keyed by click-id parameter name (gclid, fbclid, …); only the network is kept.'),
      })
      .optional(),
    customer: z
      .object({
        signedIn: z.boolean().optional(),
        returning: z.boolean().optional(),
        numberOfOrders: z.int().min(0).optional(),
        averageOrderValue: z.number().min(0).optional(),
        daysBetweenOrders: z.int().min(0).optional(),
        daysSinceLastOrder: z.int().min(0).optional(),
        daysSinceOldestOrder: z.int().min(0).optional(),
        totalSpent: z.number().min(0).optional(),
        tags: z.array(str(256)).max(250).nullable().optional(),
        segments: z.unknown().optional().describe('Ignored: filled by the server from identity.customerId.'),
      })
      .optional(),
    market: MarketRefSchema.optional(),
    session: z.object({ returning: z.boolean().optional() }).optional(),
    locale: str(35).optional().describe('Case-insensitive; normalized to lowercase.'),
    currency: z
      .string()
      .regex(/^[A-Za-z]{3}$/, 'expected an ISO 4217 code')
      .optional()
      .describe('Normalized to uppercase; a currency resolved by the server from market or pricing wins.'),
    b2bCompany: str(256).optional(),
    shoppingChannel: z.enum(['web', 'app']).optional().describe('Detected from request headers when omitted.'),
    custom: z.record(z.string().max(256), z.unknown()).optional(),
  })
  .meta({ id: 'Context' });
export type ContextInput = z.infer<typeof ContextSchema>;

/** the body fields every POST endpoint shares; endpoints extend it */
export const StorefrontBodySchema = z.object({
  identity: IdentitySchema.optional(),
  context: ContextSchema.optional(),
});

// ─── errors ─────────────────────────────────────────────────────────────────────────────────────────────

export const ErrorCodes = [
  'validation_failed',
  'invalid_json',
  'unsupported_media_type',
  'payload_too_large',
  'missing_token',
  'invalid_token',
  'store_suspended',
  'b2b_forbidden',
  'not_found',
  'method_not_allowed',
  'not_acceptable',
  'rate_limited',
  'search_not_ready',
  'internal_error',
  'unavailable',
] as const;
export type ErrorCode = (typeof ErrorCodes)[number];

export const ErrorFieldSchema = z
  .object({
    path: z
      .string()
      .describe(
        'Location of the offending value: `query` for a query parameter, `context.productsInCart[0].price` in a body; "" for the whole body.',
      ),
    message: z.string(),
  })
  .meta({ id: 'ErrorField' });

export const ErrorBodySchema = z
  .object({
    error: z.object({
      code: z.enum(ErrorCodes).describe('Stable machine-readable code.'),
      message: z.string().describe('Human-readable summary; may change.'),
      fields: z.array(ErrorFieldSchema).describe('The offending fields; empty when the error is not about a field.'),
    }),
  })
  .meta({ id: 'Error' });
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

// ─── autocomplete ───────────────────────────────────────────────────────────────────────────────────────

export const AUTOCOMPLETE_MAX_QUERY = 255;

/**
 * Length in Unicode code points (what the query limits count: an emoji is one character, not two UTF-16
 * units; a lone surrogate counts as one). No array is built, unlike `[...s].length`.
 */
export function codePointLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // a high surrogate followed by a low one is one code point
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/**
 * A string of at most `max` characters counted in code points, as JSON Schema's `maxLength` counts them
 * (zod's `.max()` counts UTF-16 units): the check is a refinement, documented as `maxLength`.
 */
const maxChars = (max: number) =>
  z
    .string()
    .refine((s) => codePointLength(s) <= max, `at most ${max} characters`)
    .meta({ maxLength: max });

export const AutocompleteQuerySchema = z.object({
  query: maxChars(AUTOCOMPLETE_MAX_QUERY)
    .optional()
    .describe(
      'The partial query, at most 255 characters. Under 2 characters after sanitizing counts as empty (top trending queries).',
    ),
  limit: z.coerce.number().int().min(1).max(50).optional().describe('Number of suggestions, 1 to 50 (default 10).'),
});

export const AutocompleteResponseSchema = z
  .object({
    matchedQueries: z
      .array(z.string())
      .describe(
        'Ranked suggestions: prefix matches first, then similar queries; each the canonical query or its curated display label.',
      ),
    originalQuery: z
      .string()
      .nullable()
      .describe('The query exactly as sent; null when omitted or too short after sanitizing.'),
    normalizedQuery: z
      .string()
      .nullable()
      .describe('Lowercased, trimmed form used for matching; null when no effective query.'),
    _meta: z
      .object({ redirect: z.object({ url: z.string() }).optional() })
      .describe('`redirect` only when the query matches a configured redirect term.'),
  })
  .meta({ id: 'AutocompleteResponse', description: 'Query suggestions.' });
export type AutocompleteResponse = z.infer<typeof AutocompleteResponseSchema>;

// ─── sort orders ────────────────────────────────────────────────────────────────────────────────────────

export const SortOrderSchema = z.object({ code: z.string(), nickname: z.string() }).meta({ id: 'SortOrder' });
export const SortOrdersResponseSchema = z
  .object({ sortOrders: z.array(SortOrderSchema).describe('`relevance` is always included.') })
  .meta({ id: 'SortOrdersResponse', description: "The store's sort orders." });
export type SortOrdersResponse = z.infer<typeof SortOrdersResponseSchema>;

// ─── product results: the shared request fields ─────────────────────────────────────────────────────────

/** The filter operators and their value arity (reference notes §1). */
export const FILTER_ARITY: Record<string, [number, number]> = {
  eq: [1, 1],
  neq: [1, 1],
  in: [1, 250],
  notIn: [1, 250],
  gt: [1, 1],
  gte: [1, 1],
  lt: [1, 1],
  lte: [1, 1],
  between: [2, 2],
  notBetween: [2, 2],
  contains: [1, 1],
  doesNotContain: [1, 1],
  beginsWith: [1, 1],
  endsWith: [1, 1],
  doesNotBeginWith: [1, 1],
  doesNotEndWith: [1, 1],
  null: [0, 0],
  notNull: [0, 0],
};

/**
 * `filter_group`: the ConditionGroup of store configuration (schemas/config.ts; two nesting levels, the
 * reference operator set), plus each operator's value count (between takes exactly 2, null none, …).
 */
export const FilterGroupSchema = ConditionGroup.superRefine((g, ctx) => {
  const check = (leaf: { operator: string; values: unknown[] }, path: (string | number)[]) => {
    const [min, max] = FILTER_ARITY[leaf.operator] ?? [0, 250];
    if (leaf.values.length < min || leaf.values.length > max)
      ctx.addIssue({
        code: 'custom',
        path: [...path, 'values'],
        message:
          min === max
            ? `${leaf.operator} takes exactly ${min} value${min === 1 ? '' : 's'}`
            : `${leaf.operator} takes ${min} to ${max} values`,
      });
  };
  for (const [i, e] of g.expressions.entries()) {
    if (!('expressions' in e)) check(e, ['expressions', i]);
    else for (const [j, leaf] of e.expressions.entries()) check(leaf, ['expressions', i, 'expressions', j]);
  }
}).meta({
  id: 'FilterGroup',
  description:
    '`{conditional: AND|OR, expressions: [leaf | group]}`, a leaf `{property, operator, values}`; groups nest two levels.',
});
export type FilterGroup = z.infer<typeof FilterGroupSchema>;

const optionCode = z.string().min(1).max(255);

export const DefaultSelectedOptionSchema = z
  .object({ optionCode, value: z.string().max(255) })
  .meta({ id: 'DefaultSelectedOption', description: 'optionCode is normalized (lower case, spaces to underscores).' });

const idList = (what: string) => z.array(z.union([z.string().max(256), z.number()])).max(250, `at most 250 ${what}`);

export const DiscountEntitlementSchema = z
  .object({
    entitled: z.object({
      all: z.boolean().optional().describe('When true, every product qualifies.'),
      products: idList('products').optional().describe('Product ids or handles.'),
      variants: idList('variants').optional().describe('Variant ids.'),
      collections: z
        .array(z.string().max(255))
        .max(250, 'at most 250 collections')
        .optional()
        .describe('Collection handles.'),
      conditions: FilterGroupSchema.optional().describe('Products matching it qualify too.'),
    }),
    discount: z
      .object({ type: z.enum(['PERCENTAGE', 'FIXED_AMOUNT']), value: z.number().min(0) })
      .refine((d) => d.type !== 'PERCENTAGE' || d.value <= 100, {
        message: 'a percentage is 0 to 100',
        path: ['value'],
      }),
  })
  .meta({ id: 'DiscountEntitlement' });
export type DiscountEntitlement = z.infer<typeof DiscountEntitlementSchema>;

export const ResponseOptionsSchema = z
  .object({
    mediaPreloads: z
      .object({
        enabled: z
          .boolean()
          .optional()
          .describe('Default true; false skips the Link header (cannot enable what the store disabled).'),
        srcsetSizes: z.array(z.int().min(1).max(10_000)).min(1).max(20).optional(),
        sizes: z.string().max(512).optional().describe('Sent as the `imagesizes` of each preload.'),
      })
      .optional(),
  })
  .meta({ id: 'ResponseOptions' });

/** The product-result fields shared by browse, search, blocks, similar and image search. */
export const ResultFieldsSchema = StorefrontBodySchema.extend({
  attributes: z
    .array(z.string().min(1).max(200))
    .max(100)
    .optional()
    .describe(
      'Attributes to return (default: all but opt-in ones). Nested: `images[:2].src`, `variants[sku=X].price`, `metafields[namespace=custom]`.',
    ),
  filter_group: FilterGroupSchema.optional(),
  pagination: PaginationSchema.optional(),
  facets: z
    .array(z.string().min(1).max(200))
    .max(100)
    .optional()
    .describe('Facet codes (`vendor`, `options.Size`) or wildcards (`options.*`); a wildcard must match at least one.'),
  retrieveFacetCount: z.boolean().optional(),
  includeFacetRanges: z.boolean().optional(),
  enrichFacetMetaobjects: z.boolean().optional(),
  sort_order_code: z.string().min(1).max(64).optional(),
  defaultSelectedOptions: z.array(DefaultSelectedOptionSchema).max(50).optional(),
  discountEntitlements: z.array(DiscountEntitlementSchema).max(50).optional(),
  forceHideOutOfStock: z.boolean().optional(),
  responseOptions: ResponseOptionsSchema.optional(),
});
export type ResultFields = z.infer<typeof ResultFieldsSchema>;

export const BrowseBodySchema = ResultFieldsSchema.extend({
  dynamicLinking: z
    .object({
      products: z
        .array(z.union([z.string().min(1).max(255), z.int().positive()]))
        .max(50)
        .describe('Handles and ids, mixed; pinned to positions 1, 2, … of page 1.'),
    })
    .optional(),
  preview_id: z.uuid().optional().describe('A merchandising-rule preview (1 hour); 404 when unknown or expired.'),
}).meta({ id: 'BrowseRequest' });
export type BrowseBody = z.infer<typeof BrowseBodySchema>;

export const FacetsBodySchema = StorefrontBodySchema.extend({
  facets: ResultFieldsSchema.shape.facets,
  retrieveFacetCount: z.boolean().optional(),
  includeFacetRanges: z.boolean().optional(),
  enrichFacetMetaobjects: z.boolean().optional(),
  filter_group: FilterGroupSchema.optional(),
  discountEntitlements: ResultFieldsSchema.shape.discountEntitlements,
}).meta({ id: 'FacetsRequest' });
export type FacetsBody = z.infer<typeof FacetsBodySchema>;

export const CollectionHandleParamsSchema = z.object({
  collection_handle: z.string().min(1).max(255).describe('The collection handle (or numeric id).'),
});

// ─── product results: the response ──────────────────────────────────────────────────────────────────────

const money = z.string().describe('Major currency units, decimal string.');
const ImageOutSchema = z
  .object({
    alt: z.string().nullable(),
    src: z.string(),
    width: z.int().nullable(),
    height: z.int().nullable(),
    variant_ids: z.array(z.number()),
  })
  .partial()
  .meta({ id: 'ProductImage' });

export const VariantOutSchema = z
  .object({
    id: z.number(),
    title: z.string(),
    sku: z.string().nullable(),
    barcode: z.string().nullable(),
    price: money,
    compare_at_price: money.nullable(),
    option1: z.string().nullable(),
    option2: z.string().nullable(),
    option3: z.string().nullable(),
    selected_options: z.array(z.object({ name: z.string(), value: z.string() })),
    position: z.int(),
    available: z.boolean(),
    inventory_quantity: z.int().nullable(),
    image_id: z.number().nullable(),
    requires_components: z.boolean(),
  })
  .partial()
  .meta({ id: 'ProductVariant' });

const FREE = z.record(z.string(), z.unknown());

export const ProductRecordSchema = z
  .object({
    __typename: z.enum(['Product', 'Variant']),
    id: z.number().describe('Product id; on a variant tile the variant id.'),
    product_id: z.number().describe('Variant tiles: the parent product id.'),
    variant_id: z.number().describe('Variant tiles: the variant id.'),
    title: z.string(),
    handle: z.string(),
    body_html: z.string(),
    vendor: z.string(),
    product_type: z.string(),
    tags: z.array(z.string()),
    named_tags: z.record(z.string(), z.array(z.string())).describe('`name:value` tags grouped by name.'),
    images: z.array(ImageOutSchema),
    featured_media: ImageOutSchema.nullable(),
    available: z.boolean(),
    created_at: z.union([z.string(), z.number()]).nullable(),
    updated_at: z.union([z.string(), z.number()]).nullable(),
    published_at: z.union([z.string(), z.number()]).nullable(),
    price_range: z.object({ from: money, to: money }).partial(),
    options: z.array(z.object({ name: z.string(), position: z.int(), values: z.array(z.string()) }).partial()),
    original_options: z.array(z.object({ name: z.string(), position: z.int(), values: z.array(z.string()) }).partial()),
    metafields: z.record(z.string(), FREE),
    calculated: z
      .object({
        price_min: money,
        price_max: money,
        compare_at_price_min: money.nullable(),
        compare_at_price_max: money.nullable(),
        on_sale: z.boolean(),
        discounted: z.boolean(),
        inventory_total: z.int(),
      })
      .partial(),
    category: z.object({ id: z.string(), name: z.string(), full_name: z.string() }).partial().nullable(),
    is_gift_card: z.boolean(),
    has_variants_that_require_components: z.boolean(),
    combined_listing_parent_product_id: z.number().nullable(),
    combined_listing_role: z.string().nullable(),
    first_or_matched_variant: VariantOutSchema.nullable(),
    variants: z.array(VariantOutSchema),
    collection_titles: z.array(z.string()),
  })
  .partial()
  .meta({
    id: 'ProductRecord',
    description: 'The requested attributes of a product (or a variant tile, `__typename: Variant`).',
  });
export type ProductRecord = z.infer<typeof ProductRecordSchema>;

export const FacetDisplayEntrySchema = z
  .object({
    handle: z.string(),
    display_name: z.string(),
    fields: FREE,
    swatch: z
      .union([
        z.object({ type: z.literal('color'), colors: z.array(z.string()) }),
        z.object({ type: z.literal('image'), url: z.string(), alt: z.string().nullable() }),
      ])
      .nullable(),
  })
  .meta({ id: 'FacetDisplayEntry' });

const FacetsOut = z
  .record(z.string(), z.record(z.string(), z.number()))
  .describe('Facet code → value → count of results (tiles).');
const FacetRangesOut = z
  .record(z.string(), z.object({ min: z.number(), max: z.number() }))
  .describe('Numeric facet → min and max over the results.');
const FacetDisplayOut = z
  .record(z.string(), z.record(z.string(), FacetDisplayEntrySchema))
  .describe('Metaobject-backed facet → value handle → display entry.');

export const BannerOutSchema = z
  .object({
    id: z.string(),
    rule_id: z.string(),
    name: z.string(),
    banner_type: z.string(),
    mode: z.enum(['overtake', 'inject']),
    link: z.string().nullable(),
    sort_index: z.int(),
    web_media: z.object({ src: z.string(), alt: z.string() }).nullable(),
    mobile_media: z.object({ src: z.string(), alt: z.string() }).nullable(),
    web_layout: z.object({ placement: z.string(), width: z.int(), height: z.int(), position: z.int().nullable() }),
    mobile_layout: z.object({ placement: z.string(), width: z.int(), height: z.int(), position: z.int().nullable() }),
    schedule_start_at: z.string().nullable(),
    schedule_end_at: z.string().nullable(),
  })
  .meta({ id: 'Banner', description: 'A merchandising banner; send its id and rule_id with banner_* events.' });

export const AppliedRuleSchema = z
  .object({ id: z.string(), name: z.string(), preview: z.boolean(), banners: z.array(BannerOutSchema) })
  .meta({ id: 'AppliedRule' });

export const WorkflowStepSchema = z.object({ type: z.string(), payload: z.unknown() }).meta({ id: 'WorkflowStep' });

export const SearchRuleActionOutSchema = z
  .object({
    rule_id: z.string(),
    type: z.string(),
    changed: z.boolean().describe('Whether the action changed the request or the results.'),
    reason: z.enum(['unsupported_action_type']).optional(),
  })
  .meta({ id: 'SearchRuleAction' });

export const ResultMetaSchema = z
  .looseObject({
    collection: z.object({ id: z.number(), handle: z.string(), title: z.string() }).optional(),
    sortOrderCode: z.string().optional(),
    variantBreakouts: z.array(z.object({ id: z.string(), name: z.string(), optionCode: z.string() })).optional(),
    imagePreloads: z.object({ srcsetSizes: z.array(z.int()) }).optional(),
    discountEntitlements: z.array(DiscountEntitlementSchema).optional(),
    market: z.string().optional(),
    currency: z.string().optional(),
    query: z.string().optional().describe('Search: the query as sent.'),
    appliedSearchRules: z
      .array(z.string())
      .optional()
      .describe('Search: ids of the search rules whose targeting matched (empty when none).'),
    appliedSearchRuleActions: z.array(SearchRuleActionOutSchema).optional(),
    redirect: z
      .object({ url: z.string() })
      .optional()
      .describe('Search: a redirect term or rule matched; results are then empty.'),
    degraded: z
      .enum(['prefix_only'])
      .optional()
      .describe('Search: keyword and prefix matching ran without learned ranking, expansion or intent detection.'),
  })
  .meta({ id: 'ResultMeta', description: 'Debug and applied-configuration metadata.' });

export const ResultEnvelopeSchema = z
  .object({
    results: z.array(ProductRecordSchema),
    totalResults: z.int(),
    page: z.int(),
    totalPages: z.int(),
    resultsPerPage: z.int(),
    facets: FacetsOut,
    facetRanges: FacetRangesOut,
    facetDisplay: FacetDisplayOut,
    filters: z.record(z.string(), z.unknown()).describe('Echo of the applied filter expressions.'),
    attributionToken: z.string().describe('= x-request-id; send it with the events this response leads to.'),
    appliedRules: z
      .array(AppliedRuleSchema)
      .optional()
      .describe('Browse: the merchandising rule applied, with its banners.'),
    _meta: ResultMetaSchema,
    _workflow: z.array(WorkflowStepSchema),
  })
  .meta({ id: 'ResultEnvelope' });
export type ResultEnvelope = z.infer<typeof ResultEnvelopeSchema>;

export const FacetsResponseSchema = z
  .object({
    facets: FacetsOut.optional().describe('Only when retrieveFacetCount is true.'),
    facetRanges: FacetRangesOut.optional().describe('Only when includeFacetRanges is true.'),
    facetDisplay: FacetDisplayOut.optional().describe('Only when enrichFacetMetaobjects is true.'),
    filters: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'FacetsResponse' });
export type FacetsResponse = z.infer<typeof FacetsResponseSchema>;

// ─── search ─────────────────────────────────────────────────────────────────────────────────────────────

export const SEARCH_MAX_QUERY = 255;
/** prepared searches and the search context feedback reads live this long (spec: Limits) */
export const PREPARED_SEARCH_TTL_SECONDS = 15 * 60;

const ULID = z.string().regex(/^[0-9A-HJKMNP-TV-Z]{26}$/, 'expected a ULID');

export const SearchQueryParamsSchema = z.object({
  searchQuery: maxChars(SEARCH_MAX_QUERY)
    .refine((s) => s.trim() !== '', 'expected a query')
    .describe('The URL-encoded query, at most 255 characters.'),
});

export const SearchPrepareBodySchema = StorefrontBodySchema.extend({
  attributes: ResultFieldsSchema.shape.attributes.describe('A hint of the attributes the later execute will ask for.'),
  filter_group: FilterGroupSchema.optional(),
  pagination: PaginationSchema.optional(),
  facets: ResultFieldsSchema.shape.facets,
  retrieveFacetCount: z.boolean().optional(),
  includeFacetRanges: z.boolean().optional(),
  enrichFacetMetaobjects: z.boolean().optional(),
}).meta({ id: 'SearchPrepareRequest' });
export type SearchPrepareBody = z.infer<typeof SearchPrepareBodySchema>;

export const SearchPrepareResponseSchema = z
  .object({ search_id: ULID.describe('Send it to execute (and to feedback); valid 15 minutes.') })
  .meta({ id: 'SearchPrepareResponse' });

export const SearchExecuteBodySchema = ResultFieldsSchema.extend({
  search_id: ULID.optional().describe(
    'From prepare: its query understanding is used. Unknown or expired (15 minutes) → normal processing.',
  ),
}).meta({ id: 'SearchExecuteRequest' });
export type SearchExecuteBody = z.infer<typeof SearchExecuteBodySchema>;

const FEEDBACK_RATING = z.enum(['positive', 'negative']);
export const SearchFeedbackBodySchema = z
  .object({
    search_id: ULID.describe('The search rated (normally from prepare).'),
    rating: FEEDBACK_RATING.optional(),
    text_feedback: maxChars(2000).optional(),
    product_feedback: z
      .array(
        z.object({
          product_id: z.int().positive(),
          rating: FEEDBACK_RATING.optional(),
          feedback: maxChars(500).optional(),
        }),
      )
      .max(100)
      .optional(),
    identity: IdentitySchema.optional(),
  })
  .meta({ id: 'SearchFeedbackRequest' });
export type SearchFeedbackBody = z.infer<typeof SearchFeedbackBodySchema>;

export const SearchFeedbackResponseSchema = z
  .object({
    id: z.string().describe('ULID of the feedback record.'),
    search_id: z.string(),
    recorded: z.literal(true),
  })
  .meta({ id: 'SearchFeedbackResponse' });
