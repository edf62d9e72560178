import { describe, expect, it } from 'vitest';
import { avroType } from '../../schemas/avro/logical-types.ts';
import { CATALOG_AVRO, CatalogProductSchema, catalogKey, parseCatalogKey } from '../../schemas/catalog.ts';
import {
  normalizeB2bCatalog,
  normalizeCollection,
  normalizeContent,
  normalizeInventoryLevel,
  normalizeOrder,
  normalizePrice,
  normalizeProduct,
  quoteBigIntegers,
  stripHtml,
  summarize,
} from '../../services/catalog/normalize.ts';
import {
  shopifyArticle,
  shopifyCollection,
  shopifyCombinedListing,
  shopifyGiftCard,
  shopifyOrder,
  shopifyProduct,
} from './fixtures.ts';

const opts = { source: 'webhook' as const, now: '2026-01-01T00:00:00.000Z' };

describe('product normalization', () => {
  it('turns a Shopify product into the catalog record', () => {
    const r = normalizeProduct('store-a', shopifyProduct(), opts);
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    const p = r.value.product;
    expect(p.product_id).toBe('632910392');
    expect(p.tags).toEqual(['Emotive', 'Flash Memory', 'MP3', 'Music']);
    expect(p.updated_at).toBe('2024-03-05T17:00:00.000Z');
    expect(p.published_at).toBe('2024-03-01T15:00:00.000Z');
    expect(p.created_at).toBe('2024-03-01T15:00:00.000Z');
    expect([p.vendor, p.product_type, p.status]).toEqual(['Apple', 'Cult Products', 'active']);
    expect([
      p.is_gift_card,
      p.combined_listing_parent_product_id,
      p.combined_listing_role,
      p.has_variants_that_require_components,
    ]).toEqual([false, null, null, false]);
    expect(p.images.map((i) => i.id)).toEqual(['562641783', '850703190']);
    expect(p.images[0].variant_ids).toEqual(['808950810']);
    expect(p.variants.map((v) => [v.id, v.price, v.compare_at_price, v.available, v.inventory_item_id])).toEqual([
      ['808950810', '199.00', null, true, '808950810'],
      ['49148385', '189.50', '249.00', false, '49148385'],
    ]);
    expect(p.metafields).toEqual({
      custom: { material: 'aluminium', colors: ['pink', 'red'] },
      specs: { weight_g: 21 },
    });
    expect(p.options).toEqual([{ name: 'Color', position: 1, values: ['Pink', 'Red'] }]);
    expect(CatalogProductSchema.parse(p)).toEqual(p);
    // the record survives the Avro round trip unchanged
    const t = avroType(CATALOG_AVRO.products);
    expect(t.fromBuffer(t.toBuffer(p))).toEqual(p);
  });

  it('keeps the gift-card flag and the combined-listing parent, role and component flags', () => {
    const gift = normalizeProduct('s', shopifyGiftCard(), opts);
    if (!gift.ok) throw new Error(JSON.stringify(gift.issues));
    expect(gift.value.product).toMatchObject({
      product_id: '1122334455',
      product_type: 'Gift Cards',
      created_at: '2024-01-15T08:30:00.000Z',
      is_gift_card: true,
      combined_listing_parent_product_id: null,
      combined_listing_role: null,
      has_variants_that_require_components: false,
    });
    // untracked gift-card variants are always available
    expect(gift.value.product.variants.map((v) => [v.id, v.price, v.available])).toEqual([
      ['11223344551', '25.00', true],
      ['11223344552', '50.00', true],
    ]);

    const parent = normalizeProduct('s', shopifyCombinedListing('parent'), opts);
    const child = normalizeProduct('s', shopifyCombinedListing('child'), opts);
    if (!parent.ok || !child.ok) throw new Error('combined listing fixtures do not normalize');
    // role lower-cased; the component flag is derived from the variants when the product does not say
    expect(parent.value.product).toMatchObject({
      product_type: 'Jackets',
      created_at: '2024-02-10T11:00:00.000Z',
      is_gift_card: false,
      combined_listing_role: 'parent',
      combined_listing_parent_product_id: null,
      has_variants_that_require_components: true,
    });
    expect(parent.value.product.variants[0].requires_components).toBe(true);
    // the child names its parent by gid → a digit id
    expect(child.value.product).toMatchObject({
      combined_listing_role: 'child',
      combined_listing_parent_product_id: '9900001',
      has_variants_that_require_components: false,
    });
    // the flags survive the Avro round trip
    const t = avroType(CATALOG_AVRO.products);
    for (const p of [gift.value.product, parent.value.product, child.value.product])
      expect(t.fromBuffer(t.toBuffer(p))).toEqual(p);
    // the platform's string booleans are accepted
    const stringly = normalizeProduct('s', shopifyGiftCard({ is_gift_card: 'true' }), opts);
    expect(stringly.ok && stringly.value.product.is_gift_card).toBe(true);
  });

  it('accepts gid ids, array tags, untracked and continue-selling variants', () => {
    const r = normalizeProduct(
      's',
      shopifyProduct({
        id: 'gid://shopify/Product/42',
        tags: ['a', ' b ', 'a'],
        updated_at: undefined,
        variants: [
          {
            id: 'gid://shopify/ProductVariant/7',
            title: 'x',
            price: 5,
            inventory_management: null,
            inventory_quantity: 0,
          },
          {
            id: 8,
            title: 'y',
            price: '6.5',
            inventory_management: 'shopify',
            inventory_policy: 'CONTINUE',
            inventory_quantity: -3,
            compare_at_price: '',
          },
        ],
      }),
      opts,
    );
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    expect(r.value.product.product_id).toBe('42');
    expect(r.value.product.tags).toEqual(['a', 'b']);
    expect(r.value.product.updated_at).toBe(opts.now);
    expect(r.value.product.variants.map((v) => [v.id, v.price, v.available, v.compare_at_price])).toEqual([
      ['7', '5', true, null],
      ['8', '6.5', true, null],
    ]);
  });

  it('splits per-location stock of an import into inventory records', () => {
    const r = normalizeProduct(
      's',
      shopifyProduct({
        variants: [
          {
            id: 1,
            price: '1.00',
            inventory_management: 'shopify',
            inventory_item_id: 11,
            inventory_levels: [
              { location_id: 5, available: 0 },
              { location_id: 6, available: 4 },
            ],
          },
        ],
      }),
      { ...opts, source: 'import' },
    );
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    expect(r.value.product.variants[0].available).toBe(true);
    expect(r.value.product.variants[0].inventory_quantity).toBe(4);
    expect(r.value.inventory.map((l) => [l.inventory_item_id, l.variant_id, l.location_id, l.available])).toEqual([
      ['11', '1', '5', 0],
      ['11', '1', '6', 4],
    ]);
  });

  it('reports bad fields with their paths', () => {
    const r = normalizeProduct('s', shopifyProduct({ id: 'abc', variants: [{ id: 1, price: 'cheap' }] }), opts);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.issues.map((i) => i.path).sort()).toEqual(['id', 'variants[0].price']);
  });
});

describe('collections, content, inventory, prices, orders', () => {
  it('normalizes a collection and its ordered membership', () => {
    const r = normalizeCollection(
      's',
      shopifyCollection({
        products: [
          { product_id: 3, position: 2 },
          { product_id: 1, position: 1 },
          { product_id: 3, position: 5 },
        ],
      }),
      opts,
    );
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    expect(r.value.collection.collection?.default_sort_order).toBe('best_selling');
    expect(r.value.collection.collection?.published).toBe(true);
    expect(r.value.members?.members?.product_ids).toEqual(['1', '3']);
    const without = normalizeCollection('s', shopifyCollection(), opts);
    expect(without.ok && without.value.members).toBe(null);
  });

  it('strips HTML (keeping images in summaries) and reads seo.hidden', () => {
    expect(stripHtml('<p>a&amp;b</p><p>c<br>d</p><!-- x --><style>p{}</style>')).toBe('a&b c d');
    const r = normalizeContent(
      's',
      'article',
      shopifyArticle({ metafields: [{ namespace: 'seo', key: 'hidden', value: 1, type: 'number_integer' }] }),
      opts,
    );
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    expect(r.value.summary_text).toBe(
      'Do you want to get on the <img src="https://cdn.example.com/train.jpg" alt="train"> train?',
    );
    expect(r.value.body_text).toBe('Do you want to get on the train?');
    expect(r.value.tags).toEqual(['Announcing', 'Mystery']);
    expect(r.value.seo_hidden).toBe(true);
    expect(r.value.image).toEqual({
      url: 'https://cdn.example.com/articles/train.jpg',
      width: 800,
      height: 600,
      alt_text: 'A train',
    });
    const long = summarize(`<p>${'word '.repeat(300)}</p>`);
    expect(long.length).toBeLessThanOrEqual(501);
    expect(long.endsWith('…')).toBe(true);
  });

  it('normalizes inventory levels, market and list prices, B2B catalogs', () => {
    const l = normalizeInventoryLevel(
      's',
      { inventory_item_id: 808950810, location_id: 905684977, available: 6, updated_at: '2024-01-01T00:00:00Z' },
      opts,
    );
    expect(l.ok && [l.value.inventory_item_id, l.value.location_id, l.value.available]).toEqual([
      '808950810',
      '905684977',
      6,
    ]);
    expect(normalizeInventoryLevel('s', { location_id: 1, available: 1 }, opts).ok).toBe(false);
    const p = normalizePrice('s', { market: 'CA', variant_id: 5, currency: 'cad', price: 12.5 }, opts);
    expect(p.ok && p.value.price).toEqual({
      price_list_id: 'market-ca',
      variant_id: '5',
      product_id: null,
      currency: 'CAD',
      price: '12.5',
      compare_at_price: null,
    });
    const both = normalizePrice(
      's',
      { market: 'ca', price_list_id: 'x', variant_id: 5, currency: 'cad', price: 1 },
      opts,
    );
    expect(both.ok).toBe(false);
    const c = normalizeB2bCatalog(
      's',
      {
        id: 'gid://shopify/CompanyLocationCatalog/9',
        company_location_ids: ['gid://shopify/CompanyLocation/555'],
        price_list_id: 'pl-1',
        product_ids: [1, 1, 2],
      },
      opts,
    );
    expect(c.ok && c.value.catalog).toMatchObject({
      catalog_id: '9',
      company_location_ids: ['555'],
      product_ids: ['1', '2'],
      status: 'active',
      all_products: false,
    });
  });

  it('turns an order into the commerce.orders.v1 value', () => {
    const r = normalizeOrder('s', shopifyOrder(), opts);
    if (!r.ok || r.value === null) throw new Error(JSON.stringify(r));
    expect(r.value).toMatchObject({
      store_id: 's',
      order_id: '450789469',
      customer_id: '207119551',
      session_id: 'sess-123',
      created_at: '2024-03-10T12:00:00.000Z',
      currency: 'USD',
      total_price: '598.94',
      cancelled: false,
      source: 'webhook',
    });
    expect(r.value.line_items).toEqual([
      { product_id: '632910392', variant_id: '808950810', quantity: 2, price: '199.00' },
      { product_id: '921728736', variant_id: '457924702', quantity: 1, price: '200.94' },
    ]);
    const cancelled = normalizeOrder('s', shopifyOrder({ cancelled_at: '2024-03-11T00:00:00Z' }), opts);
    expect(cancelled.ok && cancelled.value?.cancelled).toBe(true);
    const test = normalizeOrder('s', shopifyOrder({ test: true }), opts);
    expect(test.ok && test.value).toBe(null);
  });

  it('keeps int64 ids exact', () => {
    const text =
      '{"id":788032119674292922,"s":"x 12345678901234567890 y","price":1234567890123456.5,"n":-9007199254740993,"small":42,"list":[9007199254740993]}';
    expect(JSON.parse(quoteBigIntegers(text))).toEqual({
      id: '788032119674292922',
      s: 'x 12345678901234567890 y',
      price: 1234567890123456.5,
      n: '-9007199254740993',
      small: 42,
      list: ['9007199254740993'],
    });
    const r = normalizeProduct(
      's',
      JSON.parse(
        quoteBigIntegers('{"id":788032119674292922,"title":"t","variants":[{"id":642667041472713922,"price":"1.00"}]}'),
      ),
      opts,
    );
    expect(r.ok && [r.value.product.product_id, r.value.product.variants[0].id]).toEqual([
      '788032119674292922',
      '642667041472713922',
    ]);
  });

  it('keys round-trip', () => {
    const keys = [
      catalogKey({ topic: 'products', store_id: 's-1', product_id: '5' }),
      catalogKey({ topic: 'collections', store_id: 's', collection_id: '5', members: true }),
      catalogKey({ topic: 'content', store_id: 's', content_type: 'page', content_id: '9' }),
      catalogKey({ topic: 'inventory', store_id: 's', inventory_item_id: null, variant_id: '3', location_id: '4' }),
      catalogKey({ topic: 'price', store_id: 's', price_list_id: 'market-ca', variant_id: '3' }),
      catalogKey({ topic: 'b2b_catalog', store_id: 's', catalog_id: 'cat_1' }),
    ];
    expect(keys).toEqual(['s-1:5', 's:5:members', 's:page:9', 's:v3:4', 's:price:market-ca:3', 's:b2b_catalog:cat_1']);
    expect(parseCatalogKey('collections', keys[1])).toEqual({
      topic: 'collections',
      store_id: 's',
      collection_id: '5',
      members: true,
    });
    expect(parseCatalogKey('inventory', keys[3])).toEqual({
      topic: 'inventory',
      store_id: 's',
      inventory_item_id: null,
      variant_id: '3',
      location_id: '4',
    });
    expect(parseCatalogKey('pricing', keys[4])).toEqual({
      topic: 'price',
      store_id: 's',
      price_list_id: 'market-ca',
      variant_id: '3',
    });
    expect(parseCatalogKey('pricing', keys[5])).toEqual({ topic: 'b2b_catalog', store_id: 's', catalog_id: 'cat_1' });
    expect(parseCatalogKey('products', 's:abc')).toBeUndefined();
  });
});
