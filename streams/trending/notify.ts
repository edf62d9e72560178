// The publisher side of the `agg:trending` contract (channel and message: schemas/channels.ts) between the
// processors that feed trending votes (`requests`: searches served, `events`: `search` events from
// POST /beacon) and the read API's in-process autocomplete index. After every successful insert (through
// the materialized views into trending_queries_hourly and trending_search_events_hourly), a processor
// publishes the cells its chunk touched with their *current* votes, read back from the view
// `trending_queries` (both sources, a voter counted once) by the one cell loader
// (clickhouse/queries/trending.ts). Which rows feed a cell is decided by the views: a chunk offers the
// (store, country, query, hour) of each of its searches with a query — both views count no other row,
// whatever else they require (status, bots) — and the read-back keeps the cells that exist, so a chunk
// without a search (product views, carts, browse and blocks requests: most chunks) reads nothing back.
// test/streams/trending-offered.test.ts holds the views to it. A cell whose votes did not change is
// published unchanged, which the contract makes harmless.
//
// Staleness bound: broker append → fetch linger (STREAMS_LINGER_MS, default 100 ms, for `search` events;
// STREAMS_BATCHED_LINGER_MS, default 500 ms, for request events) → insert → one votes read-back → PUBLISH:
// typically 150–300 ms from `/beacon` and 450–700 ms from searches served, under 1 s unless the processor
// is lagging (then the consumer-lag metric shows it). A subscriber that was disconnected must reload from ClickHouse
// (pub/sub has no replay).
import type { Redis } from 'ioredis';
import { type TrendingKey, trendingCellsOf } from '../../clickhouse/queries/trending.ts';
import { encodeTrendingMessages, TRENDING_CHANNEL, type TrendingCell } from '../../schemas/channels.ts';
import type { ProcessContext } from '../runtime/types.ts';

/** Publish cells on `agg:trending` (validated against the contract, split into small messages). */
export async function publishTrending(redis: Redis, cells: readonly TrendingCell[]): Promise<void> {
  for (const message of encodeTrendingMessages(cells)) await redis.publish(TRENDING_CHANNEL, message);
}

/** Collects the cells a chunk touches (rows with a `ts` in ClickHouse text form, `YYYY-MM-DD HH:MM:SS…`). */
export class TrendingKeys {
  private keys = new Map<string, TrendingKey>();
  /** a row of the chunk: `type` is its event type or request kind; only a `search` with a query can vote */
  add(type: string, store_id: string, country: string, query: string, ts: string): void {
    if (type !== 'search' || query === '') return;
    const bucket = `${ts.slice(0, 10)}T${ts.slice(11, 13)}:00:00.000Z`;
    this.keys.set(`${store_id}|${country}|${query}|${bucket}`, { store_id, country, query, bucket });
  }
  get size(): number {
    return this.keys.size;
  }
  /** the cells offered so far */
  cells(): TrendingKey[] {
    return [...this.keys.values()];
  }
  /** An `afterWrite` step: publish the touched cells' current votes (live mode only; never fails the chunk). */
  async notify(ctx: ProcessContext): Promise<void> {
    if (ctx.replay || this.keys.size === 0) return;
    try {
      await publishTrending(ctx.redis, await trendingCellsOf(ctx.db, this.cells()));
    } catch (err) {
      // the write is committed regardless; subscribers reconcile on their periodic reload
      ctx.logger.warn({ err: (err as Error).message }, 'trending notification failed');
    }
  }
}
