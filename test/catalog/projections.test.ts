// The catalog projections on a private chDB database: records go through the Avro codec and the
// processors exactly as the runtime hands them over (parse → process → insert with the runtime's dedup
// token), then the query helpers read the views.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import {
  allProducts,
  b2bCatalogProducts,
  b2bCatalogsForLocation,
  catalogFingerprint,
  collectionByHandle,
  collectionMembers,
  collectionsOfProducts,
  contentItems,
  inventoryByLocation,
  priceListPrices,
  storePrices,
  productAvailability,
  productsAvailableAtLocations,
  productsByHandles,
  productsByIds,
} from '../../clickhouse/queries/catalog.ts';
import { avroType } from '../../schemas/avro/logical-types.ts';
import { CATALOG_AVRO, type CatalogTopicKey, catalogKey } from '../../schemas/catalog.ts';
import {
  normalizeB2bCatalog,
  normalizeCollection,
  normalizeContent,
  normalizeInventoryLevel,
  normalizePrice,
  normalizeProduct,
} from '../../services/catalog/normalize.ts';
import { CATALOG_PROCESSORS, type CatalogProcessor } from '../../streams/catalog/index.ts';
import type { Decoded } from '../../streams/runtime/types.ts';
import { privateDb } from '../helpers/chdb.ts';
import {
  shopifyArticle,
  shopifyCollection,
  shopifyCombinedListing,
  shopifyGiftCard,
  shopifyProduct,
} from './fixtures.ts';

let db: Db;
const offsets = new Map<string, bigint>();

beforeAll(async () => {
  db = await privateDb(`catalog_proj_${process.pid}`);
  await migrate(db);
});
afterAll(async () => {
  await db?.close();
});

type Msg = { value: unknown } | { tombstone: string };

const processorFor = (topic: CatalogTopicKey) =>
  CATALOG_PROCESSORS.find((p) => p.catalogTopic === topic) as CatalogProcessor<unknown>;

/** Run messages through Avro, the processor and the insert, as one runtime chunk; returns the token used. */
async function deliver(
  topic: CatalogTopicKey,
  msgs: Msg[],
  opts: { brokerTime?: number; replayFrom?: bigint } = {},
): Promise<string> {
  const p = processorFor(topic);
  const type = avroType(CATALOG_AVRO[topic]);
  let next = opts.replayFrom ?? offsets.get(topic) ?? 0n;
  const first = next;
  const batch: Decoded<unknown>[] = [];
  for (const m of msgs) {
    // a tombstone reaches the processor through parseTombstone(key), a value through Avro and parse
    const parsed =
      'tombstone' in m ? p.parseTombstone(Buffer.from(m.tombstone)) : p.parse(type.fromBuffer(type.toBuffer(m.value)));
    if (!parsed.ok) throw new Error(parsed.reason);
    batch.push({
      value: parsed.value,
      position: { topic, partition: 0, offset: next },
      brokerTime: opts.brokerTime ?? Date.now(),
      tombstone: 'tombstone' in m,
    });
    next++;
  }
  if (opts.replayFrom === undefined) offsets.set(topic, next);
  const result = await p.process(batch as never, {} as never);
  const token = `${topic}/0/${first}-${next - 1n}`;
  for (const w of result.writes) await db.insert(w.table, w.rows, { dedupToken: `${token}/${w.table}` });
  return token;
}

const now = '2026-01-01T00:00:00.000Z';
function product(store: string, over: Record<string, unknown> = {}) {
  const r = normalizeProduct(store, shopifyProduct(over), { source: 'webhook', now });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.value.product;
}

describe('products', () => {
  const store = 'proj-products';

  it('projects a product with variants, images, price range and availability', async () => {
    await deliver('products', [{ value: product(store) }]);
    const [p] = await productsByIds(db, store, ['632910392']);
    expect(p).toMatchObject({
      id: '632910392',
      title: 'IPod Nano - 8GB',
      handle: 'ipod-nano',
      vendor: 'Apple',
      product_type: 'Cult Products',
      tags: ['Emotive', 'Flash Memory', 'MP3', 'Music'],
      status: 'active',
      updated_at: '2024-03-05T17:00:00.000Z',
      published_at: '2024-03-01T15:00:00.000Z',
      created_at: '2024-03-01T15:00:00.000Z',
      is_gift_card: false,
      combined_listing_parent_product_id: null,
      combined_listing_role: null,
      has_variants_that_require_components: false,
      price_range: { from: '189.50', to: '199.00' },
      available: true,
    });
    expect(p.variants.map((v) => [v.id, v.sku, v.price, v.compare_at_price, v.available])).toEqual([
      ['808950810', 'IPOD2008PINK', '199.00', null, true],
      ['49148385', 'IPOD2008RED', '189.50', '249.00', false],
    ]);
    expect(p.images[0]).toEqual({
      id: '562641783',
      src: 'https://cdn.shopify.com/s/files/1/ipod-nano.png',
      alt: 'Pink iPod',
      width: 110,
      height: 140,
      position: 1,
      variant_ids: ['808950810'],
    });
    expect(p.metafields.custom).toEqual({ material: 'aluminium', colors: ['pink', 'red'] });
    expect((await productsByHandles(db, store, ['ipod-nano', 'nope'])).map((x) => x.id)).toEqual(['632910392']);
    // other stores see nothing
    expect(await productsByIds(db, 'another-store', ['632910392'])).toEqual([]);
  });

  it('projects the gift-card flag and combined listings (parent, role, components)', async () => {
    const flags = 'proj-product-flags';
    const norm = (raw: unknown) => {
      const r = normalizeProduct(flags, raw, { source: 'webhook', now });
      if (!r.ok) throw new Error(JSON.stringify(r.issues));
      return { value: r.value.product };
    };
    await deliver('products', [
      norm(shopifyGiftCard()),
      norm(shopifyCombinedListing('parent')),
      norm(shopifyCombinedListing('child')),
    ]);
    const views = await productsByIds(db, flags, ['1122334455', '9900001', '9900002']);
    expect(
      views
        .map((p) => ({
          id: p.id,
          product_type: p.product_type,
          created_at: p.created_at,
          is_gift_card: p.is_gift_card,
          parent: p.combined_listing_parent_product_id,
          role: p.combined_listing_role,
          components: p.has_variants_that_require_components,
          variant_components: p.variants.map((v) => v.requires_components),
          price_range: p.price_range,
          available: p.available,
        }))
        .sort((a, b) => a.id.localeCompare(b.id)),
    ).toEqual([
      {
        id: '1122334455',
        product_type: 'Gift Cards',
        created_at: '2024-01-15T08:30:00.000Z',
        is_gift_card: true,
        parent: null,
        role: null,
        components: false,
        variant_components: [false, false],
        price_range: { from: '25.00', to: '50.00' },
        available: true,
      },
      {
        id: '9900001',
        product_type: 'Jackets',
        created_at: '2024-02-10T11:00:00.000Z',
        is_gift_card: false,
        parent: null,
        role: 'parent',
        components: true,
        variant_components: [true],
        price_range: { from: '120.00', to: '120.00' },
        available: true,
      },
      {
        id: '9900002',
        product_type: 'Jackets',
        created_at: '2024-02-10T11:00:00.000Z',
        is_gift_card: false,
        parent: '9900001',
        role: 'child',
        components: false,
        variant_components: [false],
        price_range: { from: '120.00', to: '120.00' },
        available: true,
      },
    ]);
    // the same columns in the table the analysts read
    const rows = await db.query<{ id: string; g: number; parent: string | null; role: string | null }>(
      `SELECT toString(product_id) AS id, is_gift_card AS g, toString(combined_listing_parent_product_id) AS parent, combined_listing_role AS role
       FROM catalog_products_current WHERE store_id = {s:String} ORDER BY product_id`,
      { s: flags },
    );
    expect(rows.map((r) => [r.id, Number(r.g), r.parent, r.role])).toEqual([
      ['9900001', 0, null, 'parent'],
      ['9900002', 0, '9900001', 'child'],
      ['1122334455', 1, null, null],
    ]);
  });

  it('applies a newer update and ignores a late older one', async () => {
    await deliver('products', [
      { value: product(store, { title: 'Newer title', updated_at: '2024-04-01T00:00:00Z' }) },
    ]);
    await deliver('products', [
      { value: product(store, { title: 'Stale title', updated_at: '2024-03-20T00:00:00Z' }) },
    ]);
    const [p] = await productsByIds(db, store, ['632910392']);
    expect(p.title).toBe('Newer title');
    expect(p.updated_at).toBe('2024-04-01T00:00:00.000Z');
  });

  it('a redelivered chunk (same token) adds no rows', async () => {
    const before = await db.query<{ n: string }>(
      'SELECT count() AS n FROM catalog_products WHERE store_id = {s:String}',
      { s: store },
    );
    const from = (offsets.get('products') ?? 0n) - 1n;
    await deliver(
      'products',
      [{ value: product(store, { title: 'Stale title', updated_at: '2024-03-20T00:00:00Z' }) }],
      { replayFrom: from },
    );
    const after = await db.query<{ n: string }>(
      'SELECT count() AS n FROM catalog_products WHERE store_id = {s:String}',
      { s: store },
    );
    expect(after[0].n).toBe(before[0].n);
  });

  it('a tombstone deletes the product; older updates after it stay ignored', async () => {
    await deliver('products', [
      { value: product(store, { id: 77, handle: 'other', updated_at: '2024-01-01T00:00:00Z' }) },
    ]);
    expect((await allProducts(db, store)).map((p) => p.id)).toEqual(['77', '632910392']);
    await deliver('products', [
      { value: product(store, { id: 78, handle: 'draft', status: 'draft', updated_at: '2024-01-01T00:00:00Z' }) },
    ]);
    expect((await allProducts(db, store, { publishedOnly: true })).map((p) => p.id)).toEqual(['77', '632910392']);
    expect((await allProducts(db, store, { after: '77', limit: 1 })).map((p) => p.id)).toEqual(['78']);
    await deliver('products', [{ tombstone: catalogKey({ topic: 'products', store_id: store, product_id: '78' }) }]);
    await deliver(
      'products',
      [{ tombstone: catalogKey({ topic: 'products', store_id: store, product_id: '632910392' }) }],
      { brokerTime: Date.parse('2025-01-01T00:00:00Z') },
    );
    await deliver('products', [
      { value: product(store, { title: 'retried old update', updated_at: '2024-04-01T00:00:00Z' }) },
    ]);
    expect(await productsByIds(db, store, ['632910392'])).toEqual([]);
    expect((await allProducts(db, store)).map((p) => p.id)).toEqual(['77']);
    const v = await db.query<{ n: string }>(
      'SELECT count() AS n FROM catalog_variants_current WHERE store_id = {s:String}',
      { s: store },
    );
    expect(Number(v[0].n)).toBe(2); // product 77's two variants only
  });
});

describe('collections', () => {
  const store = 'proj-collections';

  it('projects metadata and ordered membership; reorders replace; deletes remove', async () => {
    await deliver('products', [
      { value: product(store, { id: 1, handle: 'one' }) },
      { value: product(store, { id: 2, handle: 'two' }) },
      { value: product(store, { id: 3, handle: 'three' }) },
    ]);
    const c = normalizeCollection(store, shopifyCollection({ product_ids: [3, 1, 2] }), { source: 'webhook', now });
    if (!c.ok || !c.value.members) throw new Error('bad fixture');
    await deliver('collections', [{ value: c.value.collection }, { value: c.value.members }]);
    const col = await collectionByHandle(db, store, 'ipods');
    expect(col).toMatchObject({
      id: '841564295',
      title: 'IPods',
      default_sort_order: 'best_selling',
      published: true,
      sort_order: 'manual',
    });
    expect(await collectionByHandle(db, store, '841564295')).toMatchObject({ handle: 'ipods' });
    expect(await collectionMembers(db, store, '841564295')).toEqual([
      { product_id: '3', position: 1 },
      { product_id: '1', position: 2 },
      { product_id: '2', position: 3 },
    ]);
    expect((await collectionsOfProducts(db, store, ['1'])).get('1')).toEqual([
      { id: '841564295', handle: 'ipods', title: 'IPods' },
    ]);

    const reordered = normalizeCollection(
      store,
      shopifyCollection({ updated_at: '2024-03-03T00:00:00Z', product_ids: [2, 3] }),
      { source: 'webhook', now },
    );
    if (!reordered.ok || !reordered.value.members) throw new Error('bad fixture');
    await deliver('collections', [{ value: reordered.value.members }]);
    // a deleted product leaves the listing without renumbering the stored positions of the others
    await deliver('products', [{ tombstone: catalogKey({ topic: 'products', store_id: store, product_id: '3' }) }]);
    expect(await collectionMembers(db, store, '841564295')).toEqual([{ product_id: '2', position: 1 }]);

    await deliver('collections', [
      { tombstone: catalogKey({ topic: 'collections', store_id: store, collection_id: '841564295' }) },
      { tombstone: catalogKey({ topic: 'collections', store_id: store, collection_id: '841564295', members: true }) },
    ]);
    expect(await collectionByHandle(db, store, 'ipods')).toBeUndefined();
    expect(await collectionMembers(db, store, '841564295')).toEqual([]);
  });
});

describe('inventory, prices and B2B', () => {
  const store = 'proj-inventory';

  it('derives variant and product availability from inventory levels, per location', async () => {
    await deliver('products', [{ value: product(store) }]);
    expect((await productAvailability(db, store, ['632910392'])).get('632910392')).toBe(true);
    const level = (item: number, location: number, available: number, at: string) => {
      const r = normalizeInventoryLevel(
        store,
        { inventory_item_id: item, location_id: location, available, updated_at: at },
        { source: 'webhook', now },
      );
      if (!r.ok) throw new Error('bad level');
      return { value: r.value };
    };
    // the pink variant sells out everywhere; the red one gets stock at location 2
    await deliver('inventory', [
      level(808950810, 1, 0, '2024-05-01T00:00:00Z'),
      level(49148385, 2, 3, '2024-05-01T00:00:00Z'),
    ]);
    let [p] = await productsByIds(db, store, ['632910392']);
    expect(p.variants.map((v) => [v.id, v.available])).toEqual([
      ['808950810', false],
      ['49148385', true],
    ]);
    expect(p.available).toBe(true);
    expect(await inventoryByLocation(db, store, ['632910392'])).toEqual([
      { product_id: '632910392', variant_id: '49148385', location_id: '2', available: 3 },
      { product_id: '632910392', variant_id: '808950810', location_id: '1', available: 0 },
    ]);
    expect([...(await productsAvailableAtLocations(db, store, ['1']))]).toEqual([]);
    expect([...(await productsAvailableAtLocations(db, store, ['2']))]).toEqual(['632910392']);
    // red sells out too (a stale update arriving late changes nothing)
    await deliver('inventory', [
      level(49148385, 2, 0, '2024-05-02T00:00:00Z'),
      level(49148385, 2, 9, '2024-04-30T00:00:00Z'),
    ]);
    [p] = await productsByIds(db, store, ['632910392']);
    expect(p.available).toBe(false);
    expect((await productAvailability(db, store, ['632910392'])).get('632910392')).toBe(false);
    // disconnecting both locations (tombstones) falls back to the platform's own flags (pink: 10 in stock)
    await deliver('inventory', [
      {
        tombstone: catalogKey({
          topic: 'inventory',
          store_id: store,
          inventory_item_id: '808950810',
          variant_id: null,
          location_id: '1',
        }),
      },
      {
        tombstone: catalogKey({
          topic: 'inventory',
          store_id: store,
          inventory_item_id: '49148385',
          variant_id: null,
          location_id: '2',
        }),
      },
    ]);
    expect(await inventoryByLocation(db, store, ['632910392'])).toEqual([]);
    [p] = await productsByIds(db, store, ['632910392']);
    expect(p.variants.map((v) => v.available)).toEqual([true, false]);
  });

  it('projects market prices and B2B catalogs with their scope', async () => {
    const price = (input: Record<string, unknown>) => {
      const r = normalizePrice(store, input, { source: 'import', now });
      if (!r.ok) throw new Error(JSON.stringify(r.issues));
      return { value: r.value };
    };
    await deliver('pricing', [
      price({ market: 'ca', variant_id: 808950810, currency: 'CAD', price: '259.00', compare_at_price: '299.00' }),
      price({ price_list_id: 'pl-wholesale', variant_id: 808950810, currency: 'USD', price: '150.00' }),
    ]);
    // every list of the store at once, or exactly the (list, variant) pairs a change names
    const all = await storePrices(db, store);
    expect([...all.keys()].sort()).toEqual(['market-ca', 'pl-wholesale']);
    const pairs = await storePrices(db, store, [
      { priceListId: 'pl-wholesale', variantId: '808950810' },
      { priceListId: 'market-ca', variantId: '1' },
    ]);
    expect([...pairs.keys()]).toEqual(['pl-wholesale']);
    expect(pairs.get('pl-wholesale')?.get('808950810')?.price).toBe('150.00');
    const ca = await priceListPrices(db, store, 'market-ca', { productIds: ['632910392'] });
    expect(ca.get('808950810')).toEqual({
      variant_id: '808950810',
      product_id: '632910392',
      currency: 'CAD',
      price: '259.00',
      compare_at_price: '299.00',
    });
    expect(
      (await priceListPrices(db, store, 'pl-wholesale', { variantIds: ['808950810'] })).get('808950810')?.price,
    ).toBe('150.00');

    const coll = normalizeCollection(store, shopifyCollection({ id: 9, handle: 'b2b', product_ids: [632910392] }), {
      source: 'import',
      now,
    });
    if (!coll.ok || !coll.value.members) throw new Error('bad fixture');
    await deliver('collections', [{ value: coll.value.collection }, { value: coll.value.members }]);
    const cat = normalizeB2bCatalog(
      store,
      {
        id: 'catalog-b2b',
        title: 'Wholesale',
        company_location_ids: ['gid://shopify/CompanyLocation/555'],
        price_list_id: 'pl-wholesale',
        product_ids: [77],
        collection_ids: [9],
      },
      { source: 'import', now },
    );
    if (!cat.ok) throw new Error(JSON.stringify(cat.issues));
    await deliver('pricing', [{ value: cat.value }]);
    expect(await b2bCatalogsForLocation(db, store, 'gid://shopify/CompanyLocation/555')).toEqual([
      {
        catalog_id: 'catalog-b2b',
        title: 'Wholesale',
        price_list_id: 'pl-wholesale',
        all_products: false,
        company_location_ids: ['555'],
        product_ids: ['77'],
        collection_ids: ['9'],
      },
    ]);
    expect([...((await b2bCatalogProducts(db, store, 'catalog-b2b')) as Set<string>)].sort()).toEqual([
      '632910392',
      '77',
    ]);
    await deliver('pricing', [
      {
        tombstone: catalogKey({ topic: 'price', store_id: store, price_list_id: 'market-ca', variant_id: '808950810' }),
      },
    ]);
    expect((await priceListPrices(db, store, 'market-ca')).size).toBe(0);
    const fp1 = await catalogFingerprint(db, store);
    await deliver('pricing', [
      { tombstone: catalogKey({ topic: 'b2b_catalog', store_id: store, catalog_id: 'catalog-b2b' }) },
    ]);
    expect(await b2bCatalogsForLocation(db, store, '555')).toEqual([]);
    expect(await catalogFingerprint(db, store)).not.toBe(fp1);
  });
});

describe('content', () => {
  const store = 'proj-content';

  it('projects articles and pages; hidden and unpublished ones are left out of search', async () => {
    const article = normalizeContent(store, 'article', shopifyArticle(), { source: 'webhook', now });
    const hidden = normalizeContent(
      store,
      'page',
      {
        id: 5,
        title: 'Secret',
        handle: 'secret',
        body_html: 'x',
        published_at: '2024-01-01T00:00:00Z',
        metafields: { seo: { hidden: 1 } },
      },
      { source: 'webhook', now },
    );
    const draft = normalizeContent(
      store,
      'page',
      { id: 6, title: 'Draft', handle: 'draft', body_html: 'x', published_at: null },
      { source: 'webhook', now },
    );
    if (!article.ok || !hidden.ok || !draft.ok) throw new Error('bad fixture');
    await deliver('content', [{ value: article.value }, { value: hidden.value }, { value: draft.value }]);
    const items = await contentItems(db, store);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      content_type: 'article',
      content_id: '134645308',
      title: 'get on the train now',
      author: 'Dennis',
      tags: ['Announcing', 'Mystery'],
      image: { url: 'https://cdn.example.com/articles/train.jpg', width: 800, height: 600, altText: 'A train' },
      published_at: '2024-02-02T10:00:00.000Z',
    });
    expect((await contentItems(db, store, { includeHidden: true })).map((c) => c.content_id)).toEqual([
      '134645308',
      '5',
      '6',
    ]);
    await deliver('content', [
      {
        tombstone: catalogKey({ topic: 'content', store_id: store, content_type: 'article', content_id: '134645308' }),
      },
    ]);
    expect(await contentItems(db, store)).toEqual([]);
  });
});
