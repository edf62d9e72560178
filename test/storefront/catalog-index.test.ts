// The read API's catalog index under a backlog: a bulk import that lands while a store is loaded reaches
// the index through the real publisher (streams/catalog/notify.ts) and Redis pub/sub, and is read back in
// bounded slices (or by a reload when the backlog outgrows the store), collections and prices included.
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { productsByIds, storePrices } from '../../clickhouse/queries/catalog.ts';
import { avroType } from '../../schemas/avro/logical-types.ts';
import { CATALOG_AVRO, type CatalogTopicKey } from '../../schemas/catalog.ts';
import { normalizeCollection, normalizePrice, normalizeProduct } from '../../services/catalog/normalize.ts';
import { createLogger } from '../../services/common/logger.ts';
import { CatalogIndex, type IndexedProduct, StoreCatalog } from '../../services/storefront/results/catalog.ts';
import { channelVisible } from '../../services/storefront/results/scope.ts';
import { CATALOG_PROCESSORS } from '../../streams/catalog/index.ts';
import type { Decoded, ProcessContext } from '../../streams/runtime/types.ts';
import { shopifyCollection, shopifyProduct } from '../catalog/fixtures.ts';
import { privateDb } from '../helpers/chdb.ts';
import { productView } from './fixtures.ts';
import { type RedisServer, startRedis } from '../helpers/redis.ts';

const logger = createLogger('catalog-index-test', 'silent');
const now = '2026-01-01T00:00:00.000Z';
let db: Db;
let redis: RedisServer;
let pub: Redis;
const subs: Redis[] = [];
const indexes: CatalogIndex[] = [];

beforeAll(async () => {
  db = await privateDb(`catalog_index_${process.pid}`);
  await migrate(db);
  redis = await startRedis();
  pub = new Redis(redis.url);
});
afterAll(async () => {
  for (const i of indexes) await i.close();
  for (const r of [pub, ...subs]) r.disconnect();
  await redis?.stop();
  await db?.close();
});

/** the largest array among a query's parameters (ids, keys) */
function recording(inner: Db): { db: Db; largest: () => number; reset: () => void } {
  let largest = 0;
  const db = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== 'query') return Reflect.get(target, prop, receiver);
      return (sql: string, params?: Record<string, unknown>) => {
        for (const v of Object.values(params ?? {})) if (Array.isArray(v)) largest = Math.max(largest, v.length);
        return target.query(sql, params);
      };
    },
  });
  return { db, largest: () => largest, reset: () => (largest = 0) };
}

let offset = 0n;
/** one processor chunk: Avro, parse, insert, then the processor's own agg:catalog publication */
async function deliver(topic: CatalogTopicKey, values: unknown[]): Promise<void> {
  const p = CATALOG_PROCESSORS.find((x) => x.catalogTopic === topic);
  if (!p) throw new Error(topic);
  const type = avroType(CATALOG_AVRO[topic]);
  const batch: Decoded<unknown>[] = values.map((v) => {
    const parsed = p.parse(type.fromBuffer(type.toBuffer(v)));
    if (!parsed.ok) throw new Error(parsed.reason);
    return { value: parsed.value, position: { topic, partition: 0, offset: offset++ }, brokerTime: Date.now() };
  });
  const ctx = { db, redis: pub, logger, replay: false } as Partial<ProcessContext> as ProcessContext;
  const result = await p.process(batch as never, ctx);
  for (const w of result.writes) await db.insert(w.table, w.rows, { dedupToken: `${topic}/${offset}/${w.table}` });
  await result.afterWrite?.();
}

function bulk(store: string, from: number, n: number) {
  const ids = Array.from({ length: n }, (_, i) => from + i);
  const products = ids.map((id) => {
    const variant = { ...shopifyProduct().variants[0], id: id + 1_000_000, product_id: id, inventory_item_id: null };
    const r = normalizeProduct(
      store,
      shopifyProduct({ id, handle: `bulk-${id}`, title: `Bulk ${id}`, variants: [variant], images: [] }),
      { source: 'import', now },
    );
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    return r.value.product;
  });
  const prices = ids.map((id) => {
    const r = normalizePrice(
      store,
      {
        price_list_id: 'pl-bulk',
        variant_id: id + 1_000_000,
        currency: 'EUR',
        price: '9.00',
        ...(id % 2 ? { compare_at_price: '12.00' } : {}),
      },
      {
        source: 'import',
        now,
      },
    );
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    return r.value;
  });
  const c = normalizeCollection(
    store,
    shopifyCollection({ id: from, handle: `bulk-${from}`, product_ids: ids.toReversed() }),
    {
      source: 'import',
      now,
    },
  );
  if (!c.ok || !c.value.members) throw new Error('bad fixture');
  return { ids, products, prices, collection: [c.value.collection, c.value.members] };
}

async function loadedIndex(store: string, opts: { sliceKeys?: number; reloadBacklogKeys?: number }) {
  const rec = recording(db);
  const sub = new Redis(redis.url);
  subs.push(sub);
  const index = new CatalogIndex({ db: rec.db, subscriber: sub, logger, ...opts });
  indexes.push(index);
  await index.start();
  expect((await index.get(store)).products.size).toBe(0);
  rec.reset();
  return { index, rec };
}

describe('catalog index: a bulk import while the store is loaded', () => {
  it('reads a backlog back in bounded slices: every product, price and collection arrives', async () => {
    const store = 'idx-slices';
    const { index, rec } = await loadedIndex(store, { sliceKeys: 100 });
    const b = bulk(store, 5_000, 450);
    await deliver('products', b.products);
    await deliver('pricing', b.prices);
    await deliver('collections', b.collection);

    await expect.poll(() => index.peek(store)?.collections.size, { timeout: 10_000 }).toBe(1);
    await expect.poll(() => index.peek(store)?.prices.get('pl-bulk')?.size, { timeout: 10_000 }).toBe(450);
    const c = index.peek(store);
    if (!c) throw new Error('not loaded');
    expect(c.products.size).toBe(450);
    const col = c.collection('bulk-5000');
    if (!col) throw new Error('no collection');
    expect(c.membersOf(col).map((m) => Number(m.item.p.id))).toEqual(b.ids.toReversed());
    expect(c.prices.get('pl-bulk')?.price('1005449')).toBe('9.00');
    // each message named up to 450 keys; no read named more than one slice
    expect(rec.largest()).toBeGreaterThan(0);
    expect(rec.largest()).toBeLessThanOrEqual(100);
    expect(index.loads).toBe(1);
  });

  it('reloads the store instead when the backlog outgrows it', async () => {
    const store = 'idx-reload';
    const { index } = await loadedIndex(store, { reloadBacklogKeys: 300 });
    const b = bulk(store, 9_000, 450);
    await deliver('products', b.products);
    await expect.poll(() => index.peek(store)?.products.size, { timeout: 10_000 }).toBe(450);
    expect(index.loads).toBe(2);
    expect(index.changesApplied).toBe(0);
    // a small change after it is applied as a change
    await deliver('collections', b.collection);
    await expect.poll(() => index.peek(store)?.collection('bulk-9000')?.members.length, { timeout: 10_000 }).toBe(450);
    expect(index.loads).toBe(2);
    expect(index.changesApplied).toBe(1);
  });

  it('holds every record as the catalog serves it, on a load and on a change (values pooled per store)', async () => {
    const store = 'idx-pool';
    const { index } = await loadedIndex(store, {});
    const b = bulk(store, 20_000, 120);
    await deliver('products', b.products);
    await deliver('pricing', b.prices);
    await expect.poll(() => index.peek(store)?.prices.get('pl-bulk')?.size, { timeout: 10_000 }).toBe(120);
    // the same store read whole by a second index: both paths, the change and the load
    const sub = new Redis(redis.url);
    subs.push(sub);
    const loaded = new CatalogIndex({ db, subscriber: sub, logger });
    indexes.push(loaded);
    await loaded.start();
    const served = await productsByIds(db, store, b.ids.map(String));
    const prices = (await storePrices(db, store)).get('pl-bulk');
    expect(served).toHaveLength(120);
    for (const c of [index.peek(store), await loaded.get(store)]) {
      if (!c) throw new Error('not loaded');
      expect(served.map((p) => c.products.get(p.id)?.p)).toEqual(served);
      expect(heldPrices(c, 'pl-bulk')).toEqual(
        new Map([...(prices ?? [])].map(([vid, e]) => [vid, { price: e.price, compare_at_price: e.compare_at_price }])),
      );
      expect(c.prices.get('pl-bulk')?.currency).toBe('EUR');
    }
  });
});

/** a price list as the index holds it: variant id → its price and compare-at price */
function heldPrices(c: StoreCatalog, list: string) {
  const l = c.prices.get(list);
  return new Map(
    [...(l?.variantIds() ?? [])].map((vid) => [
      vid,
      { price: l?.price(vid), compare_at_price: l?.compareAtPrice(vid) },
    ]),
  );
}

describe('store catalog records', () => {
  it("answers every price list as the entries it was given, and a strict market's catalog as the current products of its priced variants", () => {
    const id = fc.integer({ min: 1, max: 6 });
    const list = fc.constantFrom('pl-a', 'pl-b');
    const step = fc.oneof(
      fc.record({ kind: fc.constant('put' as const), id }),
      fc.record({ kind: fc.constant('remove' as const), id }),
      fc.record({
        kind: fc.constant('price' as const),
        id,
        list,
        price: fc.constantFrom('9.00', '10.50', '11.00'),
        compare: fc.constantFrom(null, '12.00', '15.00'),
      }),
      fc.record({ kind: fc.constant('unprice' as const), id, list }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const c = new StoreCatalog('s');
        const given = new Map<string, Map<string, { price: string; compare_at_price: string | null }>>();
        for (const st of steps) {
          const pid = String(st.id);
          const vid = `${pid}1`; // productView's variant id
          if (st.kind === 'put') c.putProduct(productView(pid, 'Tee', 'shirt', 10));
          else if (st.kind === 'remove') c.removeProduct(pid);
          else if (st.kind === 'price') {
            const entry = {
              variant_id: vid,
              product_id: pid,
              currency: 'EUR',
              price: st.price,
              compare_at_price: st.compare,
            };
            c.setPrice(st.list, entry);
            if (!given.has(st.list)) given.set(st.list, new Map());
            given.get(st.list)?.set(vid, { price: st.price, compare_at_price: st.compare });
          } else {
            c.deletePrice(st.list, vid);
            given.get(st.list)?.delete(vid);
          }
          c.version++; // as CatalogIndex does after every applied change
          for (const l of ['pl-a', 'pl-b']) {
            expect(heldPrices(c, l)).toEqual(given.get(l) ?? new Map());
            if (c.prices.has(l)) expect(c.prices.get(l)?.currency).toBe(given.get(l)?.size ? 'EUR' : null);
            const expected = [...(given.get(l)?.keys() ?? [])]
              .map((v) => [...c.products.values()].find((item) => item.variants.some((x) => x.id === v))?.p.id)
              .filter((p) => p !== undefined);
            expect([...c.pricedProducts(l)].sort()).toEqual([...new Set(expected)].sort());
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it("keeps every record's ranking signals equal to the store's signal of its product, whatever the order of changes", () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('put' as const), id: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ kind: fc.constant('remove' as const), id: fc.integer({ min: 1, max: 6 }) }),
      fc.record({
        kind: fc.constant('signals' as const),
        values: fc.array(fc.tuple(fc.integer({ min: 1, max: 8 }), fc.nat(100)), { maxLength: 8 }),
      }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
        const c = new StoreCatalog('s');
        for (const st of steps) {
          if (st.kind === 'put') c.putProduct(productView(String(st.id), 'Tee', 'shirt', 10));
          else if (st.kind === 'remove') c.removeProduct(String(st.id));
          else
            c.setSignals(
              new Map(st.values.map(([id, n]) => [String(id), { revenue7d: n, trending: n / 2, popularity: n + 1 }])),
            );
          for (const [id, item] of c.products) expect(item.signal).toEqual(c.signal(id));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('shows a product on the channel exactly when it is active, published by now and not a combined listing child', () => {
    const status = fc.constantFrom('active' as const, 'draft' as const, 'archived' as const);
    const role = fc.constantFrom(null, 'parent' as const, 'child' as const);
    const published = fc.option(fc.integer({ min: 1_700_000_000, max: 1_800_000_000 }), { nil: null });
    fc.assert(
      fc.property(
        status,
        role,
        published,
        fc.integer({ min: 1_700_000_000, max: 1_800_000_000 }),
        (st, r, pub, now) => {
          const c = new StoreCatalog('s');
          c.putProduct({
            ...productView('1', 'Tee', 'shirt', 10),
            status: st,
            combined_listing_role: r,
            published_at: pub === null ? null : new Date(pub * 1000).toISOString(),
          });
          const item = c.products.get('1') as IndexedProduct;
          expect(channelVisible(item, now)).toBe(st === 'active' && r !== 'child' && pub !== null && pub <= now);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("orders each product's variants by position and shares one slot map per option layout", () => {
    const c = new StoreCatalog('s');
    const base = productView('1', 'Tee', 'shirt', 10);
    const [v] = base.variants;
    c.putProduct({
      ...base,
      variants: [
        { ...v, id: '12', position: 2 },
        { ...v, id: '11', position: 1 },
      ],
    });
    c.putProduct(productView('2', 'Tee', 'shirt', 10));
    c.putProduct(productView('3', 'Mug', 'mug', 5, { option: { name: 'Size', value: 'L' } }));
    const [one, two, three] = ['1', '2', '3'].map((id) => c.products.get(id));
    expect(one?.variants.map((x) => x.id)).toEqual(['11', '12']);
    expect(one?.p.variants.map((x) => x.id)).toEqual(['12', '11']);
    expect(two?.variants.map((x) => x.id)).toEqual(['21']);
    expect(one?.optionSlots).toBe(two?.optionSlots);
    expect([...(one?.optionSlots ?? [])]).toEqual([['color', 1]]);
    expect([...(three?.optionSlots ?? [])]).toEqual([['size', 1]]);
  });

  it('forgets the variants and inventory items of a removed product, and of a product that changed its variants', () => {
    const c = new StoreCatalog('s');
    const item = (p: ReturnType<typeof productView>, variant: string, inventoryItem: string) => ({
      ...p,
      variants: [{ ...p.variants[0], id: variant, inventory_item_id: inventoryItem }],
    });
    c.putProduct(item(productView('1', 'Tee', 'shirt', 10), '11', '901'));
    c.putProduct(item(productView('2', 'Mug', 'mug', 5), '21', '902'));
    expect(c.productOfVariant.get('11')).toBe('1');
    expect(c.productOfItem.get('902')).toBe('2');
    c.putProduct(item(productView('1', 'Tee', 'shirt', 10), '12', '903'));
    c.removeProduct('2');
    expect([...c.productOfVariant]).toEqual([['12', '1']]);
    expect([...c.productOfItem]).toEqual([['903', '1']]);
  });
});
