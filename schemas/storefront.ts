// The storefront API's request and response shapes (zod 4). Types are inferred from these schemas and the
// OpenAPI document (`/api/storefront/v1/openapi.json`) is generated from them, so the contract is written
// once. Request schemas describe what a client may send (input side): where the spec asks for leniency
// (numeric strings for prices, odd quantities, a threshold that is "ignored unless > 0") the schema accepts
// the loose value and `services/storefront/context.ts` normalizes it; where the spec gives a type, a wrong
// type is a 422 naming the field. Unknown keys are dropped everywhere (zod's default `strip`).
import { z } from 'zod';
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
