// The publisher side of the `agg:related` contract (channel and message: schemas/channels.ts): after a
// processor inserted a chunk of behavioural pair rows (co-view, co-cart, co-purchase, viewed-then-bought),
// it names per store the products on either side of those rows; the read API's relations index
// (services/storefront/blocks) re-reads exactly those. Live mode only, and never fails the chunk: the
// write is committed regardless, and the subscriber reconciles on its periodic reload.
import { encodeRelatedMessages, RELATED_CHANNEL } from '../../schemas/channels.ts';
import type { ProcessContext } from '../runtime/types.ts';

export class RelatedProducts {
  private readonly byStore = new Map<string, Set<string>>();

  add(storeId: string, ...productIds: string[]): void {
    let set = this.byStore.get(storeId);
    if (!set) this.byStore.set(storeId, (set = new Set()));
    for (const id of productIds) if (/^\d{1,20}$/.test(id)) set.add(id);
  }

  async notify(ctx: ProcessContext): Promise<void> {
    if (ctx.replay || this.byStore.size === 0) return;
    try {
      const changes = [...this.byStore]
        .filter(([, ids]) => ids.size > 0)
        .map(([store_id, ids]) => ({ store_id, product_ids: [...ids] }));
      for (const message of encodeRelatedMessages(changes)) await ctx.redis.publish(RELATED_CHANNEL, message);
    } catch (err) {
      ctx.logger.warn({ err: (err as Error).message }, 'agg:related notification failed');
    }
  }
}
