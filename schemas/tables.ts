// The contract between each topic's Avro value and the raw ClickHouse table its processor writes: every
// field of the value is a column of the table — under its own name, or under the column named here — or
// is listed in `notStored` with the reason. test/schemas/tables.test.ts checks it against the columns of
// the migrated engine, so a field added to a zod contract without a column (and a migration) fails there
// instead of being silently dropped on the way to the analysts.
import type { TopicKey } from './topics.ts';

export interface RawTableContract {
  /** the topic whose values the table holds (schemas/topics.ts) */
  topic: TopicKey;
  /** the raw table (clickhouse/migrations) */
  table: string;
  /** Avro field → the column(s) holding it, where the names differ, and how */
  columns: Record<string, { column: string | readonly string[]; how: string }>;
  /** Avro fields with no column, and why */
  notStored: Record<string, string>;
}

export const RAW_TABLES = {
  events: {
    topic: 'events',
    table: 'events_raw',
    columns: {
      timestamp: { column: 'ts', how: 'the event time (clamped by the beacon when far off)' },
      line_items: { column: 'line_items_json', how: 'JSON array of the purchase lines' },
      query: {
        column: 'query',
        how: 'normalized (schemas/fields.ts normalizeQuery) for `search` events, as sent otherwise',
      },
    },
    notStored: {},
  },
  requests: {
    topic: 'requests',
    table: 'requests_raw',
    columns: {
      occurred_at: { column: 'ts', how: 'when the request was received' },
      normalized_query: {
        column: 'query',
        how: 'normalized_query (else query) through schemas/fields.ts normalizeQuery; the trending key',
      },
      query: { column: 'query_text', how: 'the query as sent' },
      limit: { column: 'page_size', how: 'the page size asked for (`limit` is a SQL keyword)' },
    },
    notStored: {},
  },
  orders: {
    topic: 'orders',
    table: 'orders_raw',
    columns: {
      created_at: { column: 'ts', how: 'when the order was placed' },
      line_items: {
        column: ['line_no', 'product_id', 'variant_id', 'quantity', 'price', 'line_total'],
        how: 'one row per line (line_no = index in line_items); line_total = quantity × price',
      },
    },
    notStored: {},
  },
  rejected: {
    topic: 'rejected',
    table: 'rejected_events_raw',
    columns: {
      received_at: { column: 'ts', how: 'when the beacon received the event' },
    },
    notStored: {},
  },
  site: {
    topic: 'site',
    table: 'site_events_raw',
    columns: {},
    notStored: {},
  },
} as const satisfies Record<string, RawTableContract>;

export type RawTableKey = keyof typeof RAW_TABLES;
