// Redis pub/sub channels between processes: the channel name and the message shape, parsed with zod on
// both sides (the publisher before PUBLISH, the subscriber on receipt).
//
// `agg:trending`: the freshness contract between the processors that feed trending votes (`requests`,
// `events`; publisher: streams/trending/notify.ts) and the read API's in-process autocomplete index
// (subscriber: services/storefront/autocomplete/feed.ts). A message is a JSON array of the changed
// trending cells with their *current* votes, read from the view `trending_queries` after the insert
// (clickhouse/queries/trending.ts loads cells in this same shape). A subscriber replaces the votes of each
// (store_id, country, query, bucket) it receives: votes only grow within a bucket, so a repeated, late or
// unchanged cell is harmless. Pub/sub has no replay: a subscriber that was disconnected reloads.
import { z } from 'zod';
import { STORE_ID_MESSAGE, STORE_ID_RE } from './fields.ts';

export const TRENDING_CHANNEL = 'agg:trending';

/** cells per message at most: the publisher splits larger sets, keeping each message small */
export const TRENDING_MESSAGE_MAX_CELLS = 500;

/** One trending cell: the distinct voters of a normalized query in a store, country and UTC hour. */
export const TrendingCellSchema = z.object({
  store_id: z.string().regex(STORE_ID_RE, STORE_ID_MESSAGE),
  /** ISO 3166-1 alpha-2 country of the searches (upper case), '' when unknown */
  country: z.string().regex(/^(?:[A-Z]{2})?$/, "expected an upper-case ISO 3166-1 alpha-2 code or ''"),
  /** normalized query (schemas/fields.ts normalizeQuery) */
  query: z.string().min(1),
  /** the UTC hour the votes fall in, ISO 8601 (`2026-11-22T02:00:00.000Z`) */
  bucket: z.iso
    .datetime({ precision: 3, offset: false })
    .refine((b) => b.endsWith(':00:00.000Z'), 'expected the start of an hour'),
  /** distinct voters (sessions, else devices) who searched the query in this bucket and country */
  votes: z.int().min(1),
});
export type TrendingCell = z.infer<typeof TrendingCellSchema>;

export const TrendingMessageSchema = z.array(TrendingCellSchema).max(TRENDING_MESSAGE_MAX_CELLS);
export type TrendingMessage = z.infer<typeof TrendingMessageSchema>;

/** The PUBLISH payloads for a set of cells (validated; split into messages of at most the maximum). */
export function encodeTrendingMessages(cells: readonly TrendingCell[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < cells.length; i += TRENDING_MESSAGE_MAX_CELLS)
    out.push(JSON.stringify(TrendingMessageSchema.parse(cells.slice(i, i + TRENDING_MESSAGE_MAX_CELLS))));
  return out;
}

/** Parse a message from `agg:trending`; throws on a malformed one. */
export function parseTrendingMessage(text: string): TrendingMessage {
  return TrendingMessageSchema.parse(JSON.parse(text));
}

// ─── agg:catalog ────────────────────────────────────────────────────────────────────────────────────────
//
// `agg:catalog`: the freshness contract between the catalog projections (publisher: streams/catalog/
// notify.ts, after each chunk's insert, live mode only) and the read API's in-process catalog index
// (subscriber: services/storefront/results/catalog.ts). A message is a JSON array of changes, each the
// Kafka record keys (schemas/catalog.ts catalogKey) of one store and catalog topic that the chunk wrote
// (upserts and deletes alike); the subscriber re-reads those records from the projections by key. A
// repeated or late message is harmless (a re-read gives the current state). Staleness bound: broker
// append → fetch linger → insert → PUBLISH → one point read (typically 150-400 ms). Pub/sub has no replay:
// a subscriber that was disconnected reloads.

export const CATALOG_CHANNEL = 'agg:catalog';

/** keys per message at most: the publisher splits larger sets */
export const CATALOG_MESSAGE_MAX_KEYS = 500;

export const CatalogChangeSchema = z.object({
  store_id: z.string().regex(STORE_ID_RE, STORE_ID_MESSAGE),
  topic: z.enum(['products', 'collections', 'content', 'inventory', 'pricing', 'metaobjects']),
  /** the record keys (`store:…`) of the changed records */
  keys: z.array(z.string().min(1).max(512)).min(1).max(CATALOG_MESSAGE_MAX_KEYS),
});
export type CatalogChange = z.infer<typeof CatalogChangeSchema>;

export const CatalogMessageSchema = z.array(CatalogChangeSchema).min(1).max(100);

/** The PUBLISH payloads for a set of changes (validated; at most CATALOG_MESSAGE_MAX_KEYS keys per message). */
export function encodeCatalogMessages(changes: readonly CatalogChange[]): string[] {
  const out: string[] = [];
  for (const c of changes)
    for (let i = 0; i < c.keys.length; i += CATALOG_MESSAGE_MAX_KEYS)
      out.push(
        JSON.stringify(CatalogMessageSchema.parse([{ ...c, keys: c.keys.slice(i, i + CATALOG_MESSAGE_MAX_KEYS) }])),
      );
  return out;
}

/** Parse a message from `agg:catalog`; throws on a malformed one. */
export function parseCatalogMessage(text: string): CatalogChange[] {
  return CatalogMessageSchema.parse(JSON.parse(text));
}

// `agg:search`: the freshness contract between the `events` processor (publisher:
// streams/events/learned-notify.ts) and the read API's learned index of search
// (subscriber: services/storefront/search/services.ts). A message names, per store, the normalized
// queries whose rows in searched_then_viewed / searched_then_carted / searched_then_purchased a chunk
// wrote; the subscriber re-reads those queries (clickhouse/queries/learned.ts). A repeated or late
// message is harmless (a re-read gives the current state). Pub/sub has no replay: a subscriber that was
// disconnected reloads.

export const SEARCH_CHANNEL = 'agg:search';

/** queries per message at most: the publisher splits larger sets */
export const SEARCH_MESSAGE_MAX_QUERIES = 200;

export const SearchChangeSchema = z.object({
  store_id: z.string().regex(STORE_ID_RE, STORE_ID_MESSAGE),
  queries: z.array(z.string().min(1).max(1024)).min(1).max(SEARCH_MESSAGE_MAX_QUERIES),
});
export type SearchChange = z.infer<typeof SearchChangeSchema>;

export const SearchMessageSchema = z.array(SearchChangeSchema).min(1).max(100);

/** The PUBLISH payloads for a set of changes (validated; at most SEARCH_MESSAGE_MAX_QUERIES per message). */
export function encodeSearchMessages(changes: readonly SearchChange[]): string[] {
  const out: string[] = [];
  for (const c of changes)
    for (let i = 0; i < c.queries.length; i += SEARCH_MESSAGE_MAX_QUERIES)
      out.push(
        JSON.stringify(
          SearchMessageSchema.parse([{ ...c, queries: c.queries.slice(i, i + SEARCH_MESSAGE_MAX_QUERIES) }]),
        ),
      );
  return out;
}

/** Parse a message from `agg:search`; throws on a malformed one. */
export function parseSearchMessage(text: string): SearchChange[] {
  return SearchMessageSchema.parse(JSON.parse(text));
}

// ─── agg:related ────────────────────────────────────────────────────────────────────────────────────────
//
// `agg:related`: the freshness contract between the processors that write the behavioural pair
// aggregates (publishers: streams/related/notify.ts, called by `events` for co_view_pairs, co_cart_pairs
// and viewed_then_bought, and by `orders` for co_purchase_pairs) and the read API's relations index of
// the recommendation blocks (subscriber: services/storefront/blocks/relations.ts). A message names, per
// store, the products whose rows (as either side of a pair) a chunk wrote; the subscriber re-reads those
// products' rows. A repeated or late message is harmless (a re-read gives the current state). Pub/sub
// has no replay: a subscriber that was disconnected reloads.

export const RELATED_CHANNEL = 'agg:related';

/** products per message at most: the publisher splits larger sets */
export const RELATED_MESSAGE_MAX_PRODUCTS = 500;

export const RelatedChangeSchema = z.object({
  store_id: z.string().regex(STORE_ID_RE, STORE_ID_MESSAGE),
  product_ids: z
    .array(z.string().regex(/^\d{1,20}$/))
    .min(1)
    .max(RELATED_MESSAGE_MAX_PRODUCTS),
});
export type RelatedChange = z.infer<typeof RelatedChangeSchema>;

export const RelatedMessageSchema = z.array(RelatedChangeSchema).min(1).max(100);

/** The PUBLISH payloads for a set of changes (validated; at most RELATED_MESSAGE_MAX_PRODUCTS per message). */
export function encodeRelatedMessages(changes: readonly RelatedChange[]): string[] {
  const out: string[] = [];
  for (const c of changes)
    for (let i = 0; i < c.product_ids.length; i += RELATED_MESSAGE_MAX_PRODUCTS)
      out.push(
        JSON.stringify(
          RelatedMessageSchema.parse([{ ...c, product_ids: c.product_ids.slice(i, i + RELATED_MESSAGE_MAX_PRODUCTS) }]),
        ),
      );
  return out;
}

/** Parse a message from `agg:related`; throws on a malformed one. */
export function parseRelatedMessage(text: string): RelatedChange[] {
  return RelatedMessageSchema.parse(JSON.parse(text));
}
