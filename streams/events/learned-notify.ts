// The publisher side of the `agg:search` contract (channel and message: schemas/channels.ts): after the
// `events` processor inserted a chunk, it names per store the queries whose searched-then-viewed /
// -carted / -purchased rows the chunk wrote; the read API's learned index (services/storefront/search)
// re-reads exactly those. Live mode only, and never fails the chunk: the write is committed regardless,
// and the subscriber reconciles on its periodic reload.
import { encodeSearchMessages, SEARCH_CHANNEL } from '../../schemas/channels.ts';
import type { ProcessContext } from '../runtime/types.ts';

export class LearnedQueries {
  private readonly byStore = new Map<string, Set<string>>();

  add(storeId: string, query: string): void {
    if (query.length > 1024) return; // beyond the contract; the periodic reload still sees it
    let set = this.byStore.get(storeId);
    if (!set) this.byStore.set(storeId, (set = new Set()));
    set.add(query);
  }

  get size(): number {
    let n = 0;
    for (const s of this.byStore.values()) n += s.size;
    return n;
  }

  async notify(ctx: ProcessContext): Promise<void> {
    if (ctx.replay || this.byStore.size === 0) return;
    try {
      const changes = [...this.byStore].map(([store_id, qs]) => ({ store_id, queries: [...qs] }));
      for (const message of encodeSearchMessages(changes)) await ctx.redis.publish(SEARCH_CHANNEL, message);
    } catch (err) {
      ctx.logger.warn({ err: (err as Error).message }, 'agg:search notification failed');
    }
  }
}
