// The publisher side of the `agg:catalog` contract (channel and message: schemas/channels.ts): after a
// catalog processor's chunk is written, the record keys it wrote (upserts and deletes) are published per
// store, so the read API's catalog index re-reads exactly those records. Live mode only (a replay into
// shadow tables has no readers); a failed PUBLISH never fails the chunk: the write is committed, and the
// index reconciles on its next reload.
import {
  type CatalogCollection,
  type CatalogContent,
  type CatalogInventoryLevel,
  type CatalogKeyRef,
  type CatalogMetaobject,
  type CatalogPricing,
  type CatalogProduct,
  type CatalogTopicKey,
  catalogKey,
} from '../../schemas/catalog.ts';
import { CATALOG_CHANNEL, type CatalogChange, encodeCatalogMessages } from '../../schemas/channels.ts';
import type { Decoded, ProcessContext, ProcessResult } from '../runtime/types.ts';
import type { CatalogProcessor, Change } from './shared.ts';

/** The record key of an upserted record (the inverse of the tombstone's parseCatalogKey). */
const RECORD_KEYS: { [T in CatalogTopicKey]: (r: never) => string } = {
  products: (r: CatalogProduct) => catalogKey({ topic: 'products', store_id: r.store_id, product_id: r.product_id }),
  collections: (r: CatalogCollection) =>
    catalogKey({
      topic: 'collections',
      store_id: r.store_id,
      collection_id: r.collection_id,
      members: r.record_type === 'members',
    }),
  content: (r: CatalogContent) =>
    catalogKey({ topic: 'content', store_id: r.store_id, content_type: r.content_type, content_id: r.content_id }),
  inventory: (r: CatalogInventoryLevel) => catalogKey({ topic: 'inventory', ...r }),
  pricing: (r: CatalogPricing) =>
    r.record_type === 'price' && r.price
      ? catalogKey({ topic: 'price', store_id: r.store_id, ...r.price })
      : catalogKey({ topic: 'b2b_catalog', store_id: r.store_id, catalog_id: r.catalog?.catalog_id ?? '' }),
  metaobjects: (r: CatalogMetaobject) =>
    catalogKey({ topic: 'metaobjects', store_id: r.store_id, metaobject_id: r.metaobject_id }),
};

const refStore = (ref: CatalogKeyRef) => ref.store_id;

/** The changes (store → keys) a chunk wrote. */
export function changesOf<R extends { store_id: string }>(
  topic: CatalogTopicKey,
  batch: readonly Decoded<Change<R>>[],
): CatalogChange[] {
  const keyOf = RECORD_KEYS[topic] as (r: R) => string;
  const byStore = new Map<string, Set<string>>();
  for (const d of batch) {
    const c = d.value;
    const [store, key] =
      c.op === 'upsert' ? [c.record.store_id, keyOf(c.record)] : [refStore(c.ref), catalogKey(c.ref)];
    let keys = byStore.get(store);
    if (!keys) byStore.set(store, (keys = new Set()));
    keys.add(key);
  }
  return [...byStore].map(([store_id, keys]) => ({ store_id, topic, keys: [...keys] }));
}

/** The processor with an `afterWrite` step that publishes the chunk's keys on agg:catalog. */
export function notifying<R extends { store_id: string }>(p: CatalogProcessor<R>): CatalogProcessor<R> {
  return {
    ...p,
    async process(batch: Decoded<Change<R>>[], ctx: ProcessContext): Promise<ProcessResult> {
      const result = await p.process(batch, ctx);
      if (ctx.replay || batch.length === 0) return result;
      const inner = result.afterWrite;
      return {
        ...result,
        afterWrite: async () => {
          await inner?.();
          try {
            for (const message of encodeCatalogMessages(changesOf(p.catalogTopic, batch)))
              await ctx.redis.publish(CATALOG_CHANNEL, message);
          } catch (err) {
            ctx.logger.warn({ err: (err as Error).message, processor: p.name }, 'catalog notification failed');
          }
        },
      };
    },
  };
}
