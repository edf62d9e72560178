// The freshness contract between the processors that feed trending votes (`requests`: searches served,
// `events`: `search` events from POST /beacon) and the read API's in-process autocomplete index. After
// every successful insert (through the materialized views into trending_queries_hourly and
// trending_search_events_hourly), the processor publishes the cells it changed, with their *current*
// vote counts read from the view `trending_queries` (both sources, a voter counted once), on
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
import type { ProcessContext } from '../runtime/types.ts';

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
    if (
      typeof r.store_id !== 'string' ||
      typeof r.query !== 'string' ||
      typeof r.bucket !== 'string' ||
      typeof r.votes !== 'number'
    ) {
      throw new Error('malformed agg:trending entry');
    }
    return { store_id: r.store_id, country: String(r.country ?? ''), query: r.query, bucket: r.bucket, votes: r.votes };
  });
}

/** A trending cell a chunk touched: `bucket` is the UTC hour as `YYYY-MM-DD HH:00:00`. */
export interface TrendingKey {
  store_id: string;
  country: string;
  query: string;
  bucket: string;
}

/** Collects the cells a chunk touches (rows with a `ts` in ClickHouse text form). */
export class TrendingKeys {
  private keys = new Map<string, TrendingKey>();
  add(store_id: string, country: string, query: string, ts: string): void {
    const bucket = `${ts.slice(0, 13)}:00:00`;
    this.keys.set(`${store_id}|${country}|${query}|${bucket}`, { store_id, country, query, bucket });
  }
  get size(): number {
    return this.keys.size;
  }
  /** An `afterWrite` step: publish the touched cells' current votes (live mode only; never fails the chunk). */
  async notify(ctx: ProcessContext): Promise<void> {
    if (ctx.replay || this.keys.size === 0) return;
    try {
      await publishTrending(ctx.redis, await this.currentVotes(ctx));
    } catch (err) {
      // the write is committed regardless; subscribers reconcile on their periodic reload
      ctx.logger.warn({ err: (err as Error).message }, 'trending notification failed');
    }
  }

  private async currentVotes(ctx: ProcessContext): Promise<TrendingDelta[]> {
    const keys = [...this.keys.values()];
    const current = await ctx.db.query<{
      store_id: string;
      country: string;
      query: string;
      bucket_text: string;
      votes: string | number;
    }>(
      `SELECT store_id, country, query, toString(bucket) AS bucket_text, uniqExactMerge(voters) AS votes
       FROM trending_queries
       WHERE store_id IN {stores:Array(String)} AND bucket IN {buckets:Array(DateTime('UTC'))} AND query IN {queries:Array(String)}
       GROUP BY store_id, country, query, bucket_text`,
      {
        stores: [...new Set(keys.map((k) => k.store_id))],
        buckets: [...new Set(keys.map((k) => k.bucket))],
        queries: [...new Set(keys.map((k) => k.query))],
      },
    );
    const deltas: TrendingDelta[] = [];
    for (const c of current) {
      if (!this.keys.has(`${c.store_id}|${c.country}|${c.query}|${c.bucket_text}`)) continue;
      deltas.push({
        store_id: c.store_id,
        country: c.country,
        query: c.query,
        bucket: `${c.bucket_text.replace(' ', 'T')}.000Z`,
        votes: Number(c.votes),
      });
    }
    return deltas;
  }
}
