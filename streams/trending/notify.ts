// The freshness contract between the `requests` processor and the read API's in-process autocomplete
// index. After every successful insert into trending_queries_hourly (through requests_raw and its
// materialized view), the processor publishes the rows it changed, with their *current* vote counts, on
// the Redis pub/sub channel `agg:trending`. The read API loads the full state from ClickHouse at start
// (see clickhouse/queries/trending.ts), subscribes, and replaces the votes of each (store_id, country,
// query, bucket) it receives: applying a message twice, or an older one after a newer one for the same
// key, is harmless because votes only grow within a bucket (last-writer-wins on the max is safe).
//
// Staleness bound: broker append → fetch linger (STREAMS_LINGER_MS, default 100 ms) → insert → one
// votes read-back → PUBLISH: typically 150–300 ms, under 1 s unless the processor is lagging (then the
// consumer-lag metric shows it). A subscriber that was disconnected must reload from ClickHouse
// (pub/sub has no replay).
import type { Redis } from 'ioredis';

export const TRENDING_CHANNEL = 'agg:trending';

/** One changed trending cell. `bucket` is the UTC hour, ISO 8601 (`2026-11-22T02:00:00.000Z`). */
export interface TrendingDelta {
  store_id: string;
  /** ISO 3166-1 alpha-2 country of the searches, '' when unknown */
  country: string;
  /** normalized query (lower case, trimmed, whitespace collapsed) */
  query: string;
  bucket: string;
  /** distinct voters (sessions, else devices) who searched the query in this bucket and country */
  votes: number;
}

export type TrendingMessage = TrendingDelta[];

export async function publishTrending(redis: Redis, deltas: TrendingDelta[]): Promise<void> {
  // keep each message comfortably small for subscribers
  for (let i = 0; i < deltas.length; i += 500) {
    await redis.publish(TRENDING_CHANNEL, JSON.stringify(deltas.slice(i, i + 500)));
  }
}

/** Parse a message from `agg:trending` (for subscribers); throws on a malformed one. */
export function parseTrendingMessage(text: string): TrendingMessage {
  const v = JSON.parse(text) as unknown;
  if (!Array.isArray(v)) throw new Error('agg:trending message is not an array');
  return v.map((d) => {
    const r = d as TrendingDelta;
    if (typeof r.store_id !== 'string' || typeof r.query !== 'string' || typeof r.bucket !== 'string' || typeof r.votes !== 'number') {
      throw new Error('malformed agg:trending entry');
    }
    return { store_id: r.store_id, country: String(r.country ?? ''), query: r.query, bucket: r.bucket, votes: r.votes };
  });
}
