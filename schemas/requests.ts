// Request events: one per storefront API request, emitted by the read API itself (never by storefronts)
// to `storefront.requests.v1`. They are the source of "searches served", trending queries, attribution
// (request_id = the attributionToken events carry) and searched-then-viewed/purchased.
import { z } from 'zod';
import { DEVICE_TYPES, isoUtc, SHOPPING_CHANNELS } from './events.ts';

export const REQUEST_KINDS = [
  'search',
  'prepare',
  'autocomplete',
  'browse',
  'facets',
  'blocks',
  'similar',
  'content',
  'image_search',
  'feedback',
] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];

export const RequestEventSchema = z.object({
  request_id: z.string().describe('ULID of the request; equals the attributionToken of the response'),
  store_id: z.string(),
  kind: z.enum(REQUEST_KINDS).describe('which endpoint served the request'),
  occurred_at: isoUtc.describe('when the request was received, UTC'),
  device_type: z.enum(DEVICE_TYPES).describe('from the User-Agent; no raw User-Agent is kept'),
  session_id: z.string().nullable().describe('identity.sessionId, else the service-generated session'),
  device_id: z.string().nullable().describe('identity.deviceId'),
  customer_id: z.string().nullable().describe('identity.customerId'),
  query: z.string().nullable().describe('the query as sent (search, autocomplete, content, prepare)'),
  normalized_query: z
    .string()
    .nullable()
    .describe(
      'the query as schemas/fields.ts normalizeQuery folds it (NFKC, lower case, trimmed, whitespace collapsed)',
    ),
  search_id: z.string().nullable().describe('prepared search id (prepare, search, feedback)'),
  geo_country: z.string().nullable().describe('context.geo.country, else from the client IP'),
  geo_region: z.string().nullable(),
  market: z.string().nullable().describe('market code the request was served in'),
  shopping_channel: z.enum(SHOPPING_CHANNELS).nullable(),
  result_product_ids: z.array(z.string()).describe('product ids of the returned page, in order'),
  result_count: z.int32().min(0).describe('items on the returned page'),
  total_results: z
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER - 1)
    .nullable()
    .describe('total matches across pages, when the endpoint knows it'),
  page: z.int32().min(1).nullable(),
  limit: z.int32().min(1).nullable(),
  sort_order_code: z.string().nullable(),
  collection_handle: z.string().nullable().describe('browse, facets, collection-anchored blocks'),
  block_id: z.string().nullable(),
  anchor_id: z.string().nullable().describe('product or collection anchor (blocks, similar)'),
  content_type: z.string().nullable().describe('content search filter: article, page or null for both'),
  status_code: z.int32().describe('HTTP status of the response'),
  latency_ms: z.number().min(0).describe('time to the response, milliseconds'),
  cache_hit: z.boolean().nullable().describe('served from the results cache'),
  sdk_client: z.string().nullable().describe('X-SDK-Client header (name/version)'),
  context_json: z.string().describe('validated, normalized request context as JSON (unknown keys dropped)'),
  details_json: z
    .string()
    .nullable()
    .describe('kind-specific details as JSON (feedback rating/text, image id, applied rules)'),
});
export type RequestEvent = z.infer<typeof RequestEventSchema>;

/** A request event with the optional fields defaulted to null (for the read API's emitter). */
export function requestEvent(
  fields: Pick<
    RequestEvent,
    'request_id' | 'store_id' | 'kind' | 'occurred_at' | 'device_type' | 'status_code' | 'latency_ms'
  > &
    Partial<RequestEvent>,
): RequestEvent {
  return {
    session_id: null,
    device_id: null,
    customer_id: null,
    query: null,
    normalized_query: null,
    search_id: null,
    geo_country: null,
    geo_region: null,
    market: null,
    shopping_channel: null,
    result_product_ids: [],
    result_count: fields.result_product_ids?.length ?? 0,
    total_results: null,
    page: null,
    limit: null,
    sort_order_code: null,
    collection_handle: null,
    block_id: null,
    anchor_id: null,
    content_type: null,
    cache_hit: null,
    sdk_client: null,
    context_json: '{}',
    details_json: null,
    ...fields,
  };
}
