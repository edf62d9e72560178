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
