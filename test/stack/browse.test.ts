// Browse and facets against the running stack, on a demo store loaded through the catalog import path
// (catalog topics → stream processors → ClickHouse projections → the read API's in-process index, kept
// fresh from agg:catalog). Every expectation is computed from the generated demo data, independently of
// the results engine.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DemoStore } from '../../services/demo/generator/generator.ts';
import { visibleAt } from '../../services/demo/generator/quality.ts';
import { type DemoStack, demoStack, generateTestDemo } from '../helpers/demo-stack.ts';
import { sql } from '../helpers/stack.ts';
import type { ConfigKind } from '../../schemas/config.ts';
import type { WriteResult } from '../../services/store-config/writer.ts';
import { testStoreWriter, waitForApp } from '../helpers/stores.ts';

/** the demo's product objects, as the assertions read them */
interface Product {
  id: string;
  title: string;
  status?: string;
  published_at?: string | null;
  handle: string;
  vendor: string;
  tags: string[];
  images: { src: string }[];
  variants: {
    id: string;
    price: string;
    sku: string;
    option1: string | null;
    option2: string | null;
    inventory_levels?: { location_id: string; available: number }[];
  }[];
}
type Rec = Record<string, unknown> & {
  id: number;
  title: string;
  variants: {
    id: number;
    price: string;
    sku: string | null;
    option1: string | null;
    option2: string | null;
    available: boolean;
  }[];
};
interface Envelope {
  results: Rec[];
  totalResults: number;
  page: number;
  totalPages: number;
  resultsPerPage: number;
  facets: Record<string, Record<string, number>>;
  facetRanges: Record<string, { min: number; max: number }>;
  facetDisplay: Record<string, unknown>;
  filters: Record<string, unknown>;
  attributionToken: string;
  appliedRules: { id: string; preview: boolean; banners: { id: string; rule_id: string; name: string }[] }[];
  _meta: Record<string, unknown>;
  _workflow: { type: string; payload: unknown }[];
}

const demo: DemoStore = generateTestDemo({ name: 'browse', products: 240 });
const products = new Map<string, Product>();
for (const p of demo.products()) products.set(p.id, p as unknown as Product);
interface Collection {
  handle: string;
  title: string;
  product_ids: string[];
  metafields: { key: string; value: string }[];
}
const collections = demo.collections as unknown as Collection[];
const collection = (title: string): Collection => {
  const c = collections.find((x) => x.title === title);
  if (!c) throw new Error(`no demo collection ${title}`);
  return c;
};
/** the largest collection sorted best-selling by default: the one most rules are tested on */
const main = collections
  .filter((c) => c.metafields.some((m) => m.key === 'default_sort_order' && m.value === 'best_selling'))
  .sort((a, b) => b.product_ids.length - a.product_ids.length)[0];
const minPrice = (p: Product) => Math.min(...(p.variants ?? []).map((v) => Number(v.price)));

let d: DemoStack;
let storeId = '';
let sink: DemoStack['sink'];

/**
 * Milliseconds from `since` until `probe` answers true (probed every 50 ms), or Infinity after
 * `timeoutMs` (the issue's "visible in browse within 1 s" bound is measured by `npm run bench -- browse`).
 */
async function msUntil(since: number, probe: () => Promise<boolean>, timeoutMs = 10_000): Promise<number> {
  while (Date.now() - since < timeoutMs) {
    if (await probe()) return Date.now() - since;
    await new Promise((r) => setTimeout(r, 50));
  }
  return Number.POSITIVE_INFINITY;
}

/** the number of request events recorded for a request id (raw rows, so a duplicate would count twice) */
const eventsOf = async (requestId: string | null) =>
  Number(
    (await sql<{ n: string }>(`SELECT toString(count()) AS n FROM requests_raw WHERE request_id = '${requestId}'`))[0]
      ?.n ?? 0,
  );

const post = (path: string, body: unknown = {}, headers: Record<string, string> = {}) =>
  d.post<Envelope & { error?: { code: string; fields: { path: string }[] } }>(path, body, headers);
const browse = (handle: string, body: unknown = {}, headers: Record<string, string> = {}) =>
  post(`/browse/${handle}`, body, headers);

/**
 * The same browse twice, the second answered from the results cache. Each try has a key of its own (a
 * `context.custom` nonce), and is repeated while the index version moved between the two requests (a
 * catalog change still being applied, a signals refresh): that makes the second a MISS too, rightly.
 */
async function twice(handle: string, body: Record<string, unknown>) {
  let out:
    | { first: Awaited<ReturnType<typeof browse>> & { sent: unknown }; second: Awaited<ReturnType<typeof browse>> }
    | undefined;
  let attempt = 0;
  await expect
    .poll(
      async () => {
        const sent = { ...body, context: { custom: { attempt: `${Date.now()}-${attempt++}` } } };
        const first = Object.assign(await browse(handle, sent), { sent: sent });
        const second = await browse(handle, sent);
        out = { first, second };
        return [first.res.headers.get('x-service-results-cache'), second.res.headers.get('x-service-results-cache')];
      },
      { timeout: 15_000, interval: 100 },
    )
    .toEqual(['MISS', 'HIT']);
  return out as NonNullable<typeof out>;
}

beforeAll(async () => {
  // the demo store loaded through the catalog import path, every projection awaited
  d = await demoStack({ name: 'Browse test store', products: demo.productCount, demo });
  storeId = d.storeId;
  sink = d.sink;
  // … and the read API serves the whole collection
  await vi.waitFor(
    async () =>
      expect((await browse(main.handle, { pagination: { limit: 1 } })).body.totalResults).toBe(main.product_ids.length),
    { timeout: 30_000, interval: 250 },
  );
}, 180_000);

afterAll(async () => {
  await d?.close();
});

describe('browse: the envelope, pagination and sort orders', () => {
  it('pages through the collection in its default order with the whole envelope', async () => {
    const limit = 7;
    const p1 = await browse(main.handle, { pagination: { page: 1, limit } });
    expect(p1.res.status).toBe(200);
    expect(p1.body.attributionToken).toBe(p1.res.headers.get('x-request-id'));
    expect(p1.body).toMatchObject({
      totalResults: main.product_ids.length,
      page: 1,
      resultsPerPage: limit,
      totalPages: Math.ceil(main.product_ids.length / limit),
      facets: {},
      facetRanges: {},
      filters: {},
    });
    expect(p1.body._meta).toMatchObject({ collection: { handle: main.handle, title: main.title } });
    const p2 = await browse(main.handle, { pagination: { page: 2, limit } });
    const ids = [...p1.body.results, ...p2.body.results].map((r) => String(r.id));
    expect(new Set(ids).size).toBe(2 * limit);
    // best_selling (the collection's default) without any sales: the collection order
    expect(p1.body._meta.sortOrderCode).toBe('best_selling');
    expect(ids).toEqual(main.product_ids.slice(0, 2 * limit));
    // records: ISO timestamps, numbers for ids, the product's own fields
    const r = p1.body.results[0];
    const p = products.get(String(r.id)) as Product;
    expect(r).toMatchObject({ __typename: 'Product', title: p.title, handle: p.handle, vendor: p.vendor });
    expect(String(r.created_at)).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(r.variants.map((v) => String(v.id))).toEqual((p.variants ?? []).map((v) => String(v.id)));
  });

  it('orders by price (ascending and descending), newest and title; an unknown code is a 422', async () => {
    const limit = 100;
    const asc = await browse(main.handle, { sort_order_code: 'price_asc', pagination: { limit } });
    const prices = asc.body.results.map((r) => minPrice(products.get(String(r.id)) as Product));
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
    expect(prices[0]).toBe(Math.min(...main.product_ids.map((id) => minPrice(products.get(id) as Product))));
    const desc = await browse(main.handle, { sort_order_code: 'price_desc', pagination: { limit } });
    const d = desc.body.results.map((r) => minPrice(products.get(String(r.id)) as Product));
    expect(d).toEqual([...d].sort((a, b) => b - a));
    const newest = await browse(main.handle, { sort_order_code: 'newest', pagination: { limit } });
    const published = newest.body.results.map((r) => Date.parse(String(r.published_at)));
    expect(published).toEqual([...published].sort((a, b) => b - a));
    const bad = await browse(main.handle, { sort_order_code: 'no_such_order' });
    expect(bad.res.status).toBe(422);
    expect(bad.body.error?.fields[0].path).toBe('sort_order_code');
  });

  it('answers 404 for an unknown collection and 422 naming the field for bad pagination', async () => {
    const missing = await browse('no-such-collection');
    expect(missing.res.status).toBe(404);
    expect(missing.body.error?.code).toBe('not_found');
    const bad = await browse(main.handle, { pagination: { page: 0, limit: 101 } });
    expect(bad.res.status).toBe(422);
    expect(bad.body.error?.fields.map((f) => f.path).sort()).toEqual(['pagination.limit', 'pagination.page']);
  });
});

describe('browse: filters, facets and attributes', () => {
  it('filters with filter_group (nested OR inside AND) and echoes it', async () => {
    const vendor = (products.get(main.product_ids[0]) as Product).vendor as string;
    const expected = main.product_ids.filter((id) => (products.get(id) as Product).vendor === vendor);
    const only = await browse(main.handle, {
      filter_group: { conditional: 'AND', expressions: [{ property: 'vendor', operator: 'eq', values: [vendor] }] },
      pagination: { limit: 100 },
    });
    expect(only.body.totalResults).toBe(expected.length);
    expect(only.body.results.map((r) => String(r.id))).toEqual(expected.slice(0, 100));
    expect(only.body.filters).toMatchObject({ conditional: 'AND' });

    const cheap = 40;
    const group = {
      conditional: 'AND',
      expressions: [
        { property: 'price', operator: 'lt', values: [cheap] },
        {
          conditional: 'OR',
          expressions: [
            { property: 'tags', operator: 'eq', values: ['sale'] },
            { property: 'vendor', operator: 'eq', values: [vendor] },
          ],
        },
      ],
    };
    const nested = await browse(main.handle, { filter_group: group, pagination: { limit: 100 } });
    const want = main.product_ids.filter((id) => {
      const p = products.get(id) as Product;
      const tags = p.tags as string[];
      return (p.variants ?? []).some((v) => Number(v.price) < cheap) && (tags.includes('sale') || p.vendor === vendor);
    });
    expect(nested.body.totalResults).toBe(want.length);
  });

  it('refuses bad filters with the field path: operator arity, unknown property', async () => {
    const arity = await browse(main.handle, {
      filter_group: { expressions: [{ property: 'price', operator: 'between', values: [1] }] },
    });
    expect(arity.res.status).toBe(422);
    expect(arity.body.error?.fields[0].path).toBe('filter_group.expressions[0].values');
    const unknown = await browse(main.handle, {
      filter_group: { expressions: [{ property: 'colour', operator: 'eq', values: ['x'] }] },
    });
    expect(unknown.res.status).toBe(422);
    expect(unknown.body.error?.fields[0].path).toBe('filter_group.expressions[0].property');
  });

  it('counts facet values (exact codes and wildcards) and reports price ranges', async () => {
    const r = await browse(main.handle, {
      facets: ['vendor', 'options.*', 'price'],
      retrieveFacetCount: true,
      includeFacetRanges: true,
    });
    const vendors = new Map<string, number>();
    for (const id of main.product_ids) {
      const v = (products.get(id) as Product).vendor as string;
      vendors.set(v, (vendors.get(v) ?? 0) + 1);
    }
    expect(r.body.facets.vendor).toEqual(Object.fromEntries(vendors));
    expect(Object.keys(r.body.facets)).toContain('options.Color');
    const colors = new Set(
      main.product_ids.flatMap((id) => (products.get(id) as Product).variants?.map((v) => v.option1)),
    );
    expect(Object.keys(r.body.facets['options.Color']).sort()).toEqual([...colors].sort());
    const all = main.product_ids.flatMap(
      (id) => (products.get(id) as Product).variants?.map((v) => Number(v.price)) ?? [],
    );
    expect(r.body.facetRanges.price).toEqual({ min: Math.min(...all), max: Math.max(...all) });
    const none = await browse(main.handle, { facets: ['metafields.nothing.*'], retrieveFacetCount: true });
    expect(none.res.status).toBe(422);
    expect(none.body.error?.fields[0].path).toBe('facets[0]');
  });

  it('returns only the selected attributes, with nested selections', async () => {
    const first = products.get(main.product_ids[0]) as Product;
    const sku = (first.variants ?? [])[0].sku as string;
    const r = await browse(main.handle, {
      attributes: ['id', 'title', 'images[:1].src', `variants[sku=${sku}].price`, 'metafields[namespace=custom]'],
      pagination: { limit: 1 },
    });
    const rec = r.body.results[0];
    expect(Object.keys(rec).sort()).toEqual(['__typename', 'id', 'images', 'metafields', 'title', 'variants']);
    expect(rec.images).toEqual([{ src: (first.images ?? [])[0].src }]);
    expect(rec.variants).toEqual([{ price: Number((first.variants ?? [])[0].price).toFixed(2) }]);
    expect(Object.keys(rec.metafields as object)).toEqual(['custom']);
    const bad = await browse(main.handle, { attributes: ['id', 'colour'] });
    expect(bad.res.status).toBe(422);
    expect(bad.body.error?.fields[0].path).toBe('attributes[1]');
  });
});

describe('browse: prices, stock, pins and scope', () => {
  it('applies discount entitlements to prices, price sorting and filtering', async () => {
    const pct = await browse(main.handle, {
      discountEntitlements: [{ entitled: { all: true }, discount: { type: 'PERCENTAGE', value: 10 } }],
      pagination: { limit: 3 },
    });
    for (const r of pct.body.results) {
      const p = products.get(String(r.id)) as Product;
      expect(r.variants.map((v) => v.price)).toEqual(
        (p.variants ?? []).map((v) => (Math.round(Number(v.price) * 0.9 * 100) / 100).toFixed(2)),
      );
    }
    // a big fixed discount on the most expensive product makes it the cheapest
    const priciest = [...main.product_ids].sort(
      (a, b) => minPrice(products.get(b) as Product) - minPrice(products.get(a) as Product),
    )[0];
    const fixed = {
      discountEntitlements: [
        { entitled: { products: [Number(priciest)] }, discount: { type: 'FIXED_AMOUNT', value: 100_000 } },
      ],
    };
    const asc = await browse(main.handle, { ...fixed, sort_order_code: 'price_asc', pagination: { limit: 1 } });
    expect(String(asc.body.results[0].id)).toBe(priciest);
    expect(asc.body.results[0].variants[0].price).toBe('0.00');
    const free = await browse(main.handle, {
      ...fixed,
      filter_group: { expressions: [{ property: 'price', operator: 'lte', values: [0] }] },
    });
    expect(free.body.totalResults).toBe(1);
  });

  it('pins dynamicLinking products (handles and ids) on page 1 only, skipping unknown ones', async () => {
    const a = products.get(main.product_ids[9]) as Product;
    const b = main.product_ids[6];
    const r = await browse(main.handle, {
      dynamicLinking: { products: ['no-such-handle', a.handle, Number(b)] },
      pagination: { limit: 5 },
    });
    expect(r.body.results.slice(0, 2).map((x) => String(x.id))).toEqual([a.id, b]);
    const p2 = await browse(main.handle, {
      dynamicLinking: { products: [a.handle] },
      pagination: { page: 2, limit: 5 },
    });
    expect(p2.body.results.map((x) => String(x.id))).toEqual(main.product_ids.slice(5, 10));
  });

  it('picks first_or_matched_variant from defaultSelectedOptions (OR), else the first variant', async () => {
    const p = products.get(main.product_ids[0]) as Product;
    const last = (p.variants ?? [])[(p.variants ?? []).length - 1];
    const r = await browse(main.handle, {
      defaultSelectedOptions: [{ optionCode: 'Color', value: last.option1 as string }],
      attributes: ['id', 'first_or_matched_variant'],
      pagination: { limit: 1 },
    });
    expect((r.body.results[0].first_or_matched_variant as { option1: string }).option1).toBe(last.option1);
    const none = await browse(main.handle, { attributes: ['first_or_matched_variant'], pagination: { limit: 1 } });
    expect((none.body.results[0].first_or_matched_variant as { id: number }).id).toBe(Number((p.variants ?? [])[0].id));
  });

  it('prices in the market (pricing_only) and scopes B2B buyers to their catalog and price list', async () => {
    const eu = await browse(main.handle, { context: { market: 'DE' }, pagination: { limit: 3 } });
    expect(eu.res.status).toBe(200);
    expect(eu.body._meta).toMatchObject({ market: 'eu', currency: 'EUR' });
    for (const r of eu.body.results) {
      const p = products.get(String(r.id)) as Product;
      const list = new Map(
        demo
          .pricesOf(p)
          .filter((x) => x.price_list_id !== undefined && String(x.currency) === 'EUR')
          .map((x) => [String(x.variant_id), Number(x.price).toFixed(2)]),
      );
      expect(r.variants.map((v) => v.price)).toEqual(r.variants.map((v) => list.get(String(v.id))));
    }
    const identity = {
      companyLocationId: demo.b2b.companyLocation.gid,
      customerId: demo.b2b.customer.customer_id,
    };
    const b2bIds = new Set(demo.b2b.catalog.product_ids?.map(String));
    const home = collection('Home');
    const wholesale = await browse(home.handle, { identity, pagination: { limit: 100 } });
    expect(wholesale.res.status).toBe(200);
    expect(wholesale.body.totalResults).toBe(home.product_ids.filter((id) => b2bIds.has(id)).length);
    const r = wholesale.body.results[0];
    const p = products.get(String(r.id)) as Product;
    expect(r.variants[0].price).toBe((Number((p.variants ?? [])[0].price) * 0.6).toFixed(2));
    // a collection outside the buyer's catalog does not exist for them
    const apparel = await browse(collection('Apparel').handle, { identity });
    expect(apparel.res.status).toBe(404);
    // and without the customer it is a 403
    const anonymous = await browse(home.handle, { identity: { companyLocationId: identity.companyLocationId } });
    expect(anonymous.res.status).toBe(403);
  });
});

describe('browse: serving', () => {
  it('answers from the results cache the second time, and misses after a catalog change', async () => {
    const body = {
      pagination: { limit: 4 },
      sort_order_code: 'price_desc',
      facets: ['vendor'],
      retrieveFacetCount: true,
    };
    const { first, second } = await twice(main.handle, body);
    expect(second.body.attributionToken).toBe(second.res.headers.get('x-request-id'));
    expect(second.body.attributionToken).not.toBe(first.body.attributionToken);
    expect(second.body.results).toEqual(first.body.results);
    // a catalog change moves the index version: the next answer is computed again, with the change in it
    const p = products.get(String(first.body.results[0].id)) as Product;
    const title = `${p.title} (cache ${Date.now()})`;
    await sink.write(storeId, [{ type: 'product', ...p, title, updated_at: new Date().toISOString() }]);
    // the first answer that shows the new title cannot have come from the cache
    let changed: Awaited<ReturnType<typeof browse>> | undefined;
    await expect
      .poll(
        async () => {
          changed = await browse(main.handle, first.sent);
          return changed.body.results[0].title;
        },
        { timeout: 10_000, interval: 50 },
      )
      .toBe(title);
    expect(changed?.res.headers.get('x-service-results-cache')).toBe('MISS');
  });

  it('shows a catalog change (title, stock) in browse within a second of the write', async () => {
    const id = main.product_ids[2];
    const p = products.get(id) as Product;
    const title = `${p.title} (renamed ${Date.now()})`;
    const started = Date.now();
    await sink.write(storeId, [{ type: 'product', ...p, title, updated_at: new Date().toISOString() }]);
    await expect
      .poll(async () => (await browse(main.handle, { pagination: { limit: 3 } })).body.results[2]?.title, {
        timeout: 10_000,
        interval: 50,
      })
      .toBe(title);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(10_000);
    // out of stock everywhere: forceHideOutOfStock hides it, the default keeps it
    const soldOut = {
      ...p,
      title,
      updated_at: new Date(Date.now() + 1000).toISOString(),
      variants: (p.variants ?? []).map((v) => ({
        ...v,
        available: false,
        inventory_quantity: 0,
        inventory_policy: 'deny',
        inventory_levels: (v as { inventory_levels?: { location_id: string }[] }).inventory_levels?.map((l) => ({
          ...l,
          available: 0,
        })),
      })),
    };
    await sink.write(storeId, [{ type: 'product', ...soldOut }]);
    await expect
      .poll(async () => (await browse(main.handle, { forceHideOutOfStock: true })).body.totalResults, {
        timeout: 10_000,
        interval: 50,
      })
      .toBe(main.product_ids.length - 1);
    expect((await browse(main.handle, {})).body.totalResults).toBe(main.product_ids.length);
  });

  it('sends Link preloads for the first 6 products with the store srcset widths, unless turned off', async () => {
    const r = await browse(main.handle, { pagination: { limit: 10 } });
    const link = r.res.headers.get('link') ?? '';
    const parts = link.split(/,\s*(?=<)/);
    expect(parts).toHaveLength(6);
    expect(parts[0]).toMatch(/rel=preload; as=image/);
    expect(parts[0]).toContain('width=360 360w');
    expect(parts[0]).toContain('width=1080 1080w');
    const custom = await browse(main.handle, { responseOptions: { mediaPreloads: { srcsetSizes: [200] } } });
    expect(custom.res.headers.get('link')).toContain('width=200 200w');
    const off = await browse(main.handle, { responseOptions: { mediaPreloads: { enabled: false } } });
    expect(off.res.headers.get('link')).toBeNull();
    // a store that turned preloads off sends none, whatever the request asks
    const w = testStoreWriter();
    await w.updateStore(storeId, { media_preloads: { enabled: false } });
    await waitForApp(w);
    try {
      const none = await browse(main.handle, { responseOptions: { mediaPreloads: { enabled: true } } });
      expect(none.res.headers.get('link')).toBeNull();
    } finally {
      await w.updateStore(storeId, { media_preloads: { enabled: true } });
      await waitForApp(w);
    }
  });

  it('records exactly one browse request event per request, computed or from the cache', async () => {
    const { first: r, second: again } = await twice(main.handle, {
      pagination: { limit: 2 },
      sort_order_code: 'newest',
    });
    const rid = r.res.headers.get('x-request-id');
    await expect
      .poll(
        async () =>
          await sql<{ kind: string; handle: string; n: string }>(
            `SELECT toString(kind) AS kind, collection_handle AS handle, toString(length(result_product_ids)) AS n FROM requests_raw WHERE request_id = '${rid}'`,
          ),
        { timeout: 15_000, interval: 250 },
      )
      .toEqual([{ kind: 'browse', handle: main.handle, n: '2' }]);
    // a later request's event has arrived: neither request left a second row behind
    const later = await browse(main.handle, { pagination: { limit: 1 } });
    await expect
      .poll(() => eventsOf(later.res.headers.get('x-request-id')), { timeout: 15_000, interval: 250 })
      .toBe(1);
    expect([await eventsOf(rid), await eventsOf(again.res.headers.get('x-request-id'))]).toEqual([1, 1]);
  });
});

describe('browse: merchandising', () => {
  const ruleId = '01JE0000000000000000000101';
  it('applies the active rule: conditional pins, boosts, live banners; a draft rule never applies', async () => {
    const w = testStoreWriter();
    // products on the storefront now (the random seed schedules a few of the newest for later)
    const listed = main.product_ids.filter((id) => visibleAt(products.get(id) as Product));
    const pinned = listed[15];
    const pinnedDe = listed[20];
    // a vendor other than the DE pin's (a boosted DE pin would come second anyway: the seed decides vendors)
    const vendorOf = (id: string) => (products.get(id) as Product).vendor;
    const vendor = vendorOf(listed.slice(30).find((id) => vendorOf(id) !== vendorOf(pinnedDe)) as string);
    const media = { src: 'https://cdn.example.com/banner.jpg', alt: 'Banner' };
    const layout = { placement: 'inline', width: 1, height: 1, position: 3 };
    await w.putConfig(storeId, 'merch_rule', {
      id: ruleId,
      name: 'Spring push',
      collection_handle: main.handle,
      pins: [
        { product_id: pinned, position: 1 },
        {
          product_id: pinnedDe,
          position: 2,
          conditions: { expressions: [{ property: 'geo.country', operator: 'eq', values: ['DE'] }] },
        },
      ],
      // additive 1 on rank scores in (0, 1] lifts every match above every other product (a multiplicative
      // factor lifts a match by its rank: on a long collection its last matches may stay below the top)
      boosts: [
        {
          match: { expressions: [{ property: 'vendor', operator: 'eq', values: [vendor] }] },
          mode: 'additive',
          factor: 1,
        },
      ],
      banners: [
        {
          id: '01JE0000000000000000000201',
          name: 'Live',
          mode: 'inject',
          link: '/pages/spring',
          web_media: media,
          mobile_media: media,
          web_layout: layout,
          mobile_layout: layout,
        },
        {
          id: '01JE0000000000000000000202',
          name: 'Later',
          mode: 'overtake',
          web_media: media,
          mobile_media: media,
          web_layout: layout,
          mobile_layout: layout,
          schedule_start_at: new Date(Date.now() + 86_400_000).toISOString(),
        },
        {
          id: '01JE0000000000000000000203',
          name: 'No mobile media',
          mode: 'overtake',
          web_media: media,
          web_layout: layout,
          mobile_layout: layout,
        },
      ],
    });
    await w.putConfig(storeId, 'merch_rule', {
      id: '01JE0000000000000000000102',
      name: 'Draft',
      collection_handle: main.handle,
      priority: 1,
      status: 'draft',
      pins: [{ product_id: main.product_ids[40], position: 1 }],
    });
    await waitForApp(w);
    const r = await browse(main.handle, { pagination: { limit: 50 } });
    expect(r.body.appliedRules).toEqual([
      {
        id: ruleId,
        name: 'Spring push',
        preview: false,
        banners: [expect.objectContaining({ id: '01JE0000000000000000000201', rule_id: ruleId })],
      },
    ]);
    expect(r.body._workflow).toEqual([{ type: 'rule-applied', payload: ruleId }]);
    const ids = r.body.results.map((x) => String(x.id));
    expect(ids[0]).toBe(pinned);
    expect(ids[1]).not.toBe(pinnedDe);
    // the boosted vendor's products come right after the pin
    const boosted = listed.filter((id) => (products.get(id) as Product).vendor === vendor && id !== pinned);
    expect(ids.slice(1, 1 + boosted.length).sort()).toEqual(boosted.slice(0, 49).sort());
    const de = await browse(main.handle, { context: { geo: { country: 'DE' } }, pagination: { limit: 3 } });
    expect(de.body.results.map((x) => String(x.id)).slice(0, 2)).toEqual([pinned, pinnedDe]);
  });

  it('replaces the rule with a preview (no request event), 404 for an unknown preview', async () => {
    const w = testStoreWriter();
    const previewId = randomUUID();
    const pin = main.product_ids[33];
    await w.putConfig(storeId, 'merch_preview', {
      id: previewId,
      rule: {
        id: ruleId,
        name: 'Spring push v2',
        collection_handle: main.handle,
        pins: [{ product_id: pin, position: 1 }],
      },
    });
    await waitForApp(w);
    const r = await browse(main.handle, { preview_id: previewId, pagination: { limit: 2 } });
    expect(r.res.status).toBe(200);
    expect(String(r.body.results[0].id)).toBe(pin);
    expect(r.body.appliedRules[0]).toMatchObject({ id: ruleId, preview: true });
    const missing = await browse(main.handle, { preview_id: randomUUID() });
    expect(missing.res.status).toBe(404);
    // a normal request after the preview has its event; the preview's never arrives
    const after = await browse(main.handle, { pagination: { limit: 1 } });
    const rid = after.res.headers.get('x-request-id');
    await expect
      .poll(async () => (await sql(`SELECT 1 FROM requests_raw WHERE request_id = '${rid}'`)).length, {
        timeout: 15_000,
      })
      .toBe(1);
    expect(await sql(`SELECT 1 FROM requests_raw WHERE request_id = '${r.res.headers.get('x-request-id')}'`)).toEqual(
      [],
    );
  });

  it('breaks variants out into tiles per colour, unless the rule disables breakouts', async () => {
    const w = testStoreWriter();
    const target = collection('Home');
    await w.putConfig(storeId, 'variant_breakout', {
      id: 'by-color',
      name: 'By colour',
      option_code: 'Color',
      applies: 'collections',
      collection_handles: [target.handle],
    });
    await waitForApp(w);
    const tiles = target.product_ids.reduce(
      (n, id) => n + new Set((products.get(id) as Product).variants?.map((v) => v.option1)).size,
      0,
    );
    const r = await browse(target.handle, { pagination: { limit: 100 } });
    expect(r.body.totalResults).toBe(tiles);
    const t = r.body.results.find((x) => x.__typename === 'Variant') as Rec;
    const parent = products.get(String(t.product_id)) as Product;
    expect(t.title).toBe(`${parent.title} - ${t.variants[0].option1}`);
    expect(t.id).toBe(t.variant_id);
    expect(new Set(t.variants.map((v) => v.option1)).size).toBe(1);
    expect(r.body._meta.variantBreakouts).toEqual([{ id: 'by-color', name: 'By colour', optionCode: 'color' }]);
    await w.putConfig(storeId, 'merch_rule', {
      id: '01JE0000000000000000000103',
      name: 'No breakouts',
      collection_handle: target.handle,
      disable_variant_breakouts: true,
    });
    await waitForApp(w);
    const off = await browse(target.handle, { pagination: { limit: 1 } });
    expect(off.body.totalResults).toBe(target.product_ids.length);
  });
});

describe('collection facets', () => {
  it('returns only facets, ranges and filters, each on request', async () => {
    const r = await post(`/${main.handle}/facets`, {
      facets: ['vendor', 'price'],
      retrieveFacetCount: true,
      includeFacetRanges: true,
    });
    expect(r.res.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['facetRanges', 'facets', 'filters']);
    expect(Object.values(r.body.facets.vendor).reduce((a, b) => a + b, 0)).toBe(main.product_ids.length);
    // the price range comes with includeFacetRanges even when price is not a requested facet
    const ranges = await post(`/${main.handle}/facets`, { facets: ['vendor'], includeFacetRanges: true });
    expect(ranges.body.facetRanges).toEqual({ price: r.body.facetRanges.price });
    const bare = await post(`/${main.handle}/facets`, { facets: ['vendor'] });
    expect(Object.keys(bare.body)).toEqual(['filters']);
    const missing = await post('/no-such-collection/facets', {});
    expect(missing.res.status).toBe(404);
    // exactly one `facets` request event per request, without products (a cached answer too)
    const again = await post(`/${main.handle}/facets`, {
      facets: ['vendor', 'price'],
      retrieveFacetCount: true,
      includeFacetRanges: true,
    });
    expect(again.res.headers.get('x-service-results-cache')).toBe('HIT');
    const rid = r.res.headers.get('x-request-id');
    await expect
      .poll(
        async () =>
          await sql<{ kind: string; handle: string; n: string }>(
            `SELECT toString(kind) AS kind, collection_handle AS handle, toString(length(result_product_ids)) AS n FROM requests_raw WHERE request_id = '${rid}'`,
          ),
        { timeout: 15_000, interval: 250 },
      )
      .toEqual([{ kind: 'facets', handle: main.handle, n: '0' }]);
    const later = await post(`/${main.handle}/facets`, { facets: ['vendor'] });
    await expect
      .poll(() => eventsOf(later.res.headers.get('x-request-id')), { timeout: 15_000, interval: 250 })
      .toBe(1);
    expect([await eventsOf(rid), await eventsOf(again.res.headers.get('x-request-id'))]).toEqual([1, 1]);
  });

  it('describes swatch metaobjects in facetDisplay on the facets endpoint, only when asked', async () => {
    const code = 'metafields.shopify.color-pattern';
    const r = await post(`/${main.handle}/facets`, {
      facets: [code],
      retrieveFacetCount: true,
      enrichFacetMetaobjects: true,
    });
    expect(Object.keys(r.body).sort()).toEqual(['facetDisplay', 'facets', 'filters']);
    const handles = Object.keys(r.body.facets[code]).sort();
    expect(handles.length).toBeGreaterThan(1);
    const display = r.body.facetDisplay[code] as Record<string, { handle: string; display_name: string }>;
    expect(Object.keys(display).sort()).toEqual(handles);
    for (const h of handles) {
      const m = demo.metaobjects.find((x) => x.handle === h) as { display_name?: string; displayName?: string };
      expect(display[h]).toMatchObject({ handle: h, display_name: m.display_name ?? m.displayName });
    }
    // display entries without counts: only facetDisplay and filters
    const only = await post(`/${main.handle}/facets`, { facets: [code], enrichFacetMetaobjects: true });
    expect(Object.keys(only.body).sort()).toEqual(['facetDisplay', 'filters']);
    expect(only.body.facetDisplay).toEqual(r.body.facetDisplay);
  });
});

describe('collection facets: channel visibility', () => {
  it('counts only products visible on the channel: B2B-only, combined-listing children and future ones left out', async () => {
    const home = collection('Home');
    const identity = { companyLocationId: demo.b2b.companyLocation.gid, customerId: demo.b2b.customer.customer_id };
    const vendors = async (extra: object = {}) =>
      (await post(`/${home.handle}/facets`, { facets: ['vendor'], retrieveFacetCount: true, ...extra })).body.facets
        .vendor;
    const before = await vendors();
    const source = products.get(home.product_ids[0]) as Product;
    const now = () => new Date().toISOString();
    // one variant each (one tile under the colour breakout), a vendor of its own
    const make = (n: number, vendor: string, extra: object) => ({
      ...(source as unknown as Record<string, unknown>),
      id: String(9_099_999_300 + n),
      handle: `${source.handle}-facet-${n}`,
      vendor,
      variants: [
        { ...source.variants[0], id: String(9_099_999_310 + n), inventory_item_id: null, inventory_levels: [] },
      ],
      images: [],
      updated_at: now(),
      ...extra,
    });
    // in the B2B catalog only (not published on the online store), published next month, a combined-listing child
    const b2bOnly = make(1, 'Facet B2B Only', { published_at: null });
    const future = make(2, 'Facet Future', { published_at: new Date(Date.now() + 30 * 86_400_000).toISOString() });
    const child = make(3, 'Facet Child', {});
    const members = collections.find((c) => c.handle === home.handle) as unknown as Record<string, unknown>;
    await sink.write(storeId, [
      { type: 'product', ...b2bOnly },
      { type: 'product', ...future },
      { type: 'product', ...child },
      {
        type: 'collection',
        ...members,
        product_ids: [...home.product_ids, b2bOnly.id, future.id, child.id],
        updated_at: now(),
      },
    ]);
    // the index knows all three: the buyer sees the B2B-only and the future product; the child is a plain product so far
    await expect
      .poll(
        async () => {
          const buyer = await vendors({ identity });
          return [(await vendors())['Facet Child'], buyer['Facet B2B Only'], buyer['Facet Future']];
        },
        { timeout: 15_000, interval: 100 },
      )
      .toEqual([1, 1, 1]);
    await sink.write(storeId, [
      {
        type: 'product',
        ...child,
        combined_listing_role: 'child',
        combined_listing_parent_product_id: source.id,
        updated_at: now(),
      },
    ]);
    await expect.poll(async () => (await vendors())['Facet Child'], { timeout: 15_000, interval: 100 }).toBeUndefined();
    // the shop counts none of the three; the buyer counts their catalog's products, never a child
    expect(await vendors()).toEqual(before);
    const buyer = await vendors({ identity });
    expect([buyer['Facet B2B Only'], buyer['Facet Future'], buyer['Facet Child']]).toEqual([1, 1, undefined]);
  });

  it('counts a product whose scheduled publication arrives at once, though the answer before it was cached', async () => {
    const home = collection('Home');
    const identity = { companyLocationId: demo.b2b.companyLocation.gid, customerId: demo.b2b.customer.customer_id };
    const facets = (extra: object = {}) =>
      post(`/${home.handle}/facets`, { facets: ['vendor'], retrieveFacetCount: true, ...extra });
    const source = products.get(home.product_ids[1]) as Product;
    const publishAt = Date.now() + 8_000;
    const soon = {
      ...(source as unknown as Record<string, unknown>),
      id: '9099999304',
      handle: `${source.handle}-facet-soon`,
      vendor: 'Facet Soon',
      variants: [{ ...source.variants[0], id: '9099999314', inventory_item_id: null, inventory_levels: [] }],
      images: [],
      published_at: new Date(publishAt).toISOString(),
      updated_at: new Date().toISOString(),
    };
    const members = collections.find((c) => c.handle === home.handle) as unknown as Record<string, unknown>;
    await sink.write(storeId, [
      { type: 'product', ...soon },
      {
        type: 'collection',
        ...members,
        // the products of the test before stay members
        product_ids: [...home.product_ids, '9099999301', '9099999302', '9099999303', soon.id],
        updated_at: new Date().toISOString(),
      },
    ]);
    // the index has it (the B2B buyer sees unpublished catalog products); the shop does not, from the cache too
    await expect
      .poll(async () => (await facets({ identity })).body.facets.vendor['Facet Soon'], {
        timeout: 7_000,
        interval: 100,
      })
      .toBe(1);
    const [first, cached] = [await facets(), await facets()];
    expect(first.body.facets.vendor['Facet Soon']).toBeUndefined();
    expect(cached.res.headers.get('x-service-results-cache')).toBe('HIT');
    expect(Date.now()).toBeLessThan(publishAt);
    // its time arrives: the next answer counts it (the results cache TTL is minutes)
    await expect
      .poll(async () => (await facets()).body.facets.vendor['Facet Soon'], { timeout: 20_000, interval: 200 })
      .toBe(1);
  });
});

describe('browse: signals, boosts, swatches and market catalogs', () => {
  it('orders best-selling by 7-day revenue from the order stream', async () => {
    // a collection without merchandising rules (main has some by now)
    const other = collections
      .filter((c) => c.handle !== main.handle && c.product_ids.length > 12)
      .filter((c) => c.metafields.some((m) => m.key === 'default_sort_order' && m.value === 'best_selling'))[0];
    const top = products.get(other.product_ids[10]) as Product;
    const second = products.get(other.product_ids[12]) as Product;
    const at = new Date().toISOString();
    const order = (id: number, p: Product, quantity: number) => ({
      type: 'order' as const,
      id,
      created_at: at,
      updated_at: at,
      processed_at: at,
      cancelled_at: null,
      currency: 'USD',
      total_price: (Number(p.variants[0].price) * quantity).toFixed(2),
      test: false,
      line_items: [{ product_id: p.id, variant_id: p.variants[0].id, quantity, price: p.variants[0].price }],
    });
    await sink.write(storeId, [order(880_000_001, top, 40), order(880_000_002, second, 2)]);
    await expect
      .poll(
        async () =>
          (await browse(other.handle, { sort_order_code: 'best_selling', pagination: { limit: 2 } })).body.results.map(
            (r) => String(r.id),
          ),
        { timeout: 30_000, interval: 250 },
      )
      .toEqual([top.id, second.id]);
  });

  it('applies a sort order boost: tagged products rise, each group keeps the price order', async () => {
    const w = testStoreWriter();
    await w.putConfig(storeId, 'sort_order', {
      code: 'sale_first',
      nickname: 'Sale first',
      scope: 'collection',
      expressions: [
        { attribute: 'price', direction: 'asc' },
        { attribute: 'tag:sale', direction: 'desc', boost: { mode: 'additive', factor: 2 } },
      ],
    });
    await waitForApp(w);
    const r = await browse(main.handle, { sort_order_code: 'sale_first', pagination: { limit: 100 } });
    const rows = r.body.results.map((x) => products.get(String(x.id)) as Product);
    const sale = rows.filter((p) => p.tags.includes('sale'));
    expect(sale.length).toBeGreaterThan(0);
    expect(rows.slice(0, sale.length)).toEqual(sale);
    const prices = sale.map(minPrice);
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
  });

  it('facets swatch metafields on metaobject handles and describes them in facetDisplay', async () => {
    const code = 'metafields.shopify.color-pattern';
    const r = await browse(main.handle, { facets: [code], retrieveFacetCount: true, enrichFacetMetaobjects: true });
    const handles = Object.keys(r.body.facets[code]);
    const colours = new Set(
      main.product_ids.flatMap((id) => (products.get(id) as Product).variants.map((v) => v.option1)),
    );
    expect(handles.length).toBe(colours.size);
    const display = r.body.facetDisplay[code] as Record<
      string,
      { handle: string; display_name: string; swatch: { type: string } }
    >;
    for (const h of handles) {
      const m = demo.metaobjects.find((x) => x.handle === h);
      expect(display[h]).toMatchObject({ handle: h, display_name: m?.display_name ?? m?.displayName });
      expect(['color', 'image']).toContain(display[h].swatch.type);
    }
    // without the flag: plain facets, no display entries
    const plain = await browse(main.handle, { facets: [code], retrieveFacetCount: true });
    expect(plain.body.facetDisplay).toEqual({});
  });

  it('returns collection titles only when asked (opt-in attribute)', async () => {
    const r = await browse(main.handle, { attributes: ['id', 'collection_titles'], pagination: { limit: 1 } });
    expect(r.body.results[0].collection_titles).toContain(main.title);
    const all = await browse(main.handle, { pagination: { limit: 1 } });
    expect(all.body.results[0]).not.toHaveProperty('collection_titles');
  });

  it('counts facets over visible products only: a draft member is left out', async () => {
    const before = await post(`/${main.handle}/facets`, { facets: ['vendor'], retrieveFacetCount: true });
    const source = products.get(main.product_ids[0]) as Product;
    const draftId = '9099999001';
    const now = new Date().toISOString();
    const draft = {
      ...(source as unknown as Record<string, unknown>),
      id: draftId,
      handle: `${source.handle}-draft`,
      status: 'draft',
      published_at: null,
      updated_at: now,
      variants: source.variants.map((v, i) => ({
        ...v,
        id: String(9_099_999_100 + i),
        inventory_item_id: null,
        inventory_levels: [],
      })),
      images: [],
    };
    const members = collections.find((c) => c.handle === main.handle) as unknown as Record<string, unknown>;
    await sink.write(storeId, [
      { type: 'product', ...draft },
      { type: 'collection', ...members, product_ids: [...main.product_ids, draftId], updated_at: now },
    ]);
    await expect
      .poll(
        async () =>
          (
            await sql(
              `SELECT 1 FROM catalog_collection_products WHERE store_id = '${storeId}' AND product_id = ${draftId}`,
            )
          ).length,
        {
          timeout: 15_000,
        },
      )
      .toBeGreaterThan(0);
    const after = await post(`/${main.handle}/facets`, { facets: ['vendor'], retrieveFacetCount: true });
    expect(after.body.facets).toEqual(before.body.facets);
    expect((await browse(main.handle, {})).body.totalResults).toBe(main.product_ids.length);
  });

  it('restricts a strict market to the products its price list prices, at its prices', async () => {
    const w = testStoreWriter();
    const priced = main.product_ids.slice(3, 6).map((id) => products.get(id) as Product);
    await w.putConfig(storeId, 'market', {
      code: 'ch',
      name: 'Switzerland',
      countries: ['ch'],
      currency: 'chf',
      price_list_id: 'swiss',
    });
    await sink.write(
      storeId,
      priced.flatMap((p) =>
        p.variants.map((v) => ({
          type: 'price' as const,
          price_list_id: 'swiss',
          variant_id: v.id,
          product_id: p.id,
          currency: 'CHF',
          price: '99.00',
          compare_at_price: null,
        })),
      ),
    );
    await w.updateStore(storeId, { market_mode: 'strict' });
    await waitForApp(w);
    try {
      await expect
        .poll(
          async () => {
            // every entry of the list applied: the three products, each variant at the list's price
            const r = await browse(main.handle, { context: { market: 'CH' }, pagination: { limit: 50 } });
            return [r.body.totalResults, [...new Set(r.body.results.flatMap((x) => x.variants.map((v) => v.price)))]];
          },
          { timeout: 15_000, interval: 200 },
        )
        .toEqual([priced.length, ['99.00']]);
      const r = await browse(main.handle, { context: { market: 'CH' }, pagination: { limit: 50 } });
      expect(r.body.results.map((x) => String(x.id)).sort()).toEqual(priced.map((p) => p.id).sort());
      expect(new Set(r.body.results.flatMap((x) => x.variants.map((v) => v.price)))).toEqual(new Set(['99.00']));
      expect(r.body._meta).toMatchObject({ market: 'ch', currency: 'CHF' });
      // ignore: no market, the base catalog and prices
      await w.updateStore(storeId, { market_mode: 'ignore' });
      await waitForApp(w);
      const ignored = await browse(main.handle, { context: { market: 'CH' }, pagination: { limit: 1 } });
      expect(ignored.body.totalResults).toBe(main.product_ids.length);
      expect(ignored.body._meta).not.toHaveProperty('market');
      const p = products.get(String(ignored.body.results[0].id)) as Product;
      expect(ignored.body.results[0].variants[0].price).toBe(Number(p.variants[0].price).toFixed(2));
    } finally {
      await w.updateStore(storeId, { market_mode: 'pricing_only' });
      await waitForApp(w);
    }
  });
});

describe('browse: the remaining sort and price rules', () => {
  it('combines weighted expressions into one normalized score', async () => {
    const w = testStoreWriter();
    // price ascending (weight 3) against the sale tag (weight 1): a sale product wins unless it is far dearer
    await w.putConfig(storeId, 'sort_order', {
      code: 'cheap_or_sale',
      nickname: 'Cheap or on sale',
      scope: 'collection',
      expressions: [
        { attribute: 'price', direction: 'asc', weight: 3 },
        { attribute: 'tag:sale', direction: 'desc', weight: 1 },
      ],
    });
    await waitForApp(w);
    const r = await browse(main.handle, { sort_order_code: 'cheap_or_sale', pagination: { limit: 100 } });
    // the score computed here from the demo data, independently
    const ids = main.product_ids.filter((id) => products.has(id));
    const prices = ids.map((id) => minPrice(products.get(id) as Product));
    const lo = Math.min(...prices);
    const hi = Math.max(...prices);
    const score = (id: string) => {
      const p = products.get(id) as Product;
      return (3 * (1 - (minPrice(p) - lo) / (hi - lo)) + (p.tags.includes('sale') ? 1 : 0)) / 4;
    };
    const got = r.body.results.map((x) => score(String(x.id)));
    expect(got).toEqual([...got].sort((a, b) => b - a));
    expect(r.body.totalResults).toBe(main.product_ids.length);
  });

  it('refuses a sort order of the search scope on browse', async () => {
    const w = testStoreWriter();
    await w.putConfig(storeId, 'sort_order', {
      code: 'search_only',
      nickname: 'Search only',
      scope: 'search',
      expressions: [{ attribute: 'price', direction: 'asc' }],
    });
    await waitForApp(w);
    const r = await browse(main.handle, { sort_order_code: 'search_only' });
    expect(r.res.status).toBe(422);
    expect(r.body.error?.fields).toEqual([
      { path: 'sort_order_code', message: 'sort order search_only is for search only' },
    ]);
  });

  it('entitles variants, collections and products matching conditions', async () => {
    const p = products.get(main.product_ids[1]) as Product;
    const v = p.variants[0];
    const byVariant = await browse(main.handle, {
      discountEntitlements: [{ entitled: { variants: [Number(v.id)] }, discount: { type: 'FIXED_AMOUNT', value: 1 } }],
      filter_group: { expressions: [{ property: 'id', operator: 'eq', values: [Number(p.id)] }] },
    });
    const prices = byVariant.body.results[0].variants.map((x) => x.price);
    expect(prices[0]).toBe((Number(v.price) - 1).toFixed(2));
    expect(prices.slice(1)).toEqual(p.variants.slice(1).map((x) => Number(x.price).toFixed(2)));
    const byCollection = await browse(main.handle, {
      discountEntitlements: [{ entitled: { collections: [main.handle] }, discount: { type: 'PERCENTAGE', value: 50 } }],
      pagination: { limit: 1 },
    });
    const q = products.get(String(byCollection.body.results[0].id)) as Product;
    expect(byCollection.body.results[0].variants[0].price).toBe(
      (Math.round(Number(q.variants[0].price) * 50) / 100).toFixed(2),
    );
    const vendor = p.vendor;
    const byCondition = await browse(main.handle, {
      discountEntitlements: [
        {
          entitled: { conditions: { expressions: [{ property: 'vendor', operator: 'eq', values: [vendor] }] } },
          discount: { type: 'PERCENTAGE', value: 100 },
        },
      ],
      filter_group: { expressions: [{ property: 'price', operator: 'eq', values: [0] }] },
    });
    expect(byCondition.body.totalResults).toBe(
      main.product_ids.filter((id) => (products.get(id) as Product).vendor === vendor).length,
    );
  });

  it('titles variant tiles with the product title alone when the breakout leaves the value out', async () => {
    const w = testStoreWriter();
    const target = collection('Accessories');
    await w.putConfig(storeId, 'variant_breakout', {
      id: 'plain-titles',
      name: 'Plain titles',
      option_code: 'Color',
      applies: 'both',
      include_option_value_in_title: false,
      collection_handles: [target.handle],
    });
    await waitForApp(w);
    const r = await browse(target.handle, { attributes: ['id', 'title'], pagination: { limit: 5 } });
    const t = r.body.results.find((x) => x.__typename === 'Variant') as Rec;
    expect(t.title).toBe((products.get(String(t.product_id)) as Product).title);
  });
});

describe('browse: configured default sorts, merchandising freshness and rule details', () => {
  const sortOrder = (code: string) => {
    const o = demo.config.sort_order.find((x) => x.code === code);
    if (!o) throw new Error(`no demo sort order ${code}`);
    return o;
  };
  const sale = collection('Sale');
  const liveRule = '01JE0000000000000000000301';
  /** the live rule's pin: the dearest in-stock sale product (never first of the collection's price_asc order
   * on its own; the member at index 6 is sold out by a later test) */
  const livePin = sale.product_ids
    .filter(
      (id, i) =>
        i !== 6 &&
        (products.get(id) as Product).variants.some((v) => (v as { available?: boolean }).available !== false),
    )
    .sort((a, b) => minPrice(products.get(b) as Product) - minPrice(products.get(a) as Product))[0];

  it('sorts a collection by the sort order configured as its default before the metafield; the lowest code wins', async () => {
    const w = testStoreWriter();
    const gifts = collection('Gifts Under 50');
    const defaultOf = async () =>
      (await browse(gifts.handle, { pagination: { limit: 100 } })).body as Envelope & {
        _meta: { sortOrderCode: string };
      };
    // the demo collection's service.default_sort_order metafield
    expect((await defaultOf())._meta.sortOrderCode).toBe('price_asc');
    await w.putConfig(storeId, 'sort_order', { ...sortOrder('price_desc'), default_for_collections: [gifts.handle] });
    await w.putConfig(storeId, 'sort_order', { ...sortOrder('newest'), default_for_collections: [gifts.handle] });
    await waitForApp(w);
    try {
      const r = await defaultOf();
      expect(r._meta.sortOrderCode).toBe('newest');
      expect(r.totalResults).toBe(gifts.product_ids.length);
      const published = r.results.map((x) => Date.parse(String(x.published_at)));
      expect(published).toEqual([...published].sort((a, b) => b - a));
      // the request's own sort order still wins
      const asked = await browse(gifts.handle, { sort_order_code: 'price_asc', pagination: { limit: 1 } });
      expect(asked.body._meta.sortOrderCode).toBe('price_asc');
      // a search-only sort order cannot be a collection default: refused when written
      await expect(
        w.putConfig(storeId, 'sort_order', {
          code: 'search_default',
          nickname: 'Search default',
          scope: 'search',
          expressions: [{ attribute: 'price', direction: 'asc' }],
          default_for_collections: [gifts.handle],
        }),
      ).rejects.toMatchObject({
        issues: [
          {
            path: 'default_for_collections',
            message: 'a sort order of the search scope cannot be the default of a collection',
          },
        ],
      });
      // newest no longer claims it: price_desc is the configured default
      await w.putConfig(storeId, 'sort_order', sortOrder('newest'));
      await waitForApp(w);
      const desc = await defaultOf();
      expect(desc._meta.sortOrderCode).toBe('price_desc');
      const prices = desc.results.map((x) => minPrice(products.get(String(x.id)) as Product));
      expect(prices).toEqual([...prices].sort((a, b) => b - a));
    } finally {
      await w.putConfig(storeId, 'sort_order', sortOrder('newest'));
      await w.putConfig(storeId, 'sort_order', sortOrder('price_desc'));
      await waitForApp(w);
    }
    // no configured default: the metafield again
    expect((await defaultOf())._meta.sortOrderCode).toBe('price_asc');
  });

  it('shows a merchandising change in browse within a second of the write, as a cache MISS of the same body', async () => {
    const w = testStoreWriter();
    const { first } = await twice(sale.handle, { pagination: { limit: 5 } });
    const body = first.sent;
    expect(first.body.appliedRules).toEqual([]);
    const pin = livePin;
    expect(String(first.body.results[0].id)).not.toBe(pin);
    // putConfig resolves once Kafka acknowledged the record: the clock starts there
    await w.putConfig(storeId, 'merch_rule', {
      id: liveRule,
      name: 'Sale pin',
      collection_handle: sale.handle,
      priority: 50,
      pins: [{ product_id: pin, position: 1 }],
    });
    const acked = Date.now();
    let seen: Awaited<ReturnType<typeof browse>> | undefined;
    const elapsed = await msUntil(acked, async () => {
      seen = await browse(sale.handle, body);
      return seen.body.appliedRules[0]?.id === liveRule;
    });
    // the issue's 1 s bound is a figure of `npm run bench -- browse` (freshness p95); here, on a machine
    // shared with every other suite, the rule must show up and the figure is printed
    console.log(`browse: a new merchandising rule applied ${elapsed} ms after the write was acknowledged`);
    expect(elapsed, `the new merchandising rule was not applied within ${10_000} ms`).toBeLessThan(10_000);
    expect(String(seen?.body.results[0].id)).toBe(pin);
    // the configuration change made the cached answer of the same body unreachable
    expect(seen?.res.headers.get('x-service-results-cache')).toBe('MISS');
    expect((await browse(sale.handle, body)).res.headers.get('x-service-results-cache')).toBe('HIT');
  });

  it('applies a rule only inside its schedule and when the request matches its conditions', async () => {
    const w = testStoreWriter();
    const day = 86_400_000;
    const rule = (id: string, name: string, priority: number, pin: string, extra: object) => ({
      id,
      name,
      collection_handle: sale.handle,
      priority,
      pins: [{ product_id: pin, position: 1 }],
      ...extra,
    });
    await w.putConfig(
      storeId,
      'merch_rule',
      rule('01JE0000000000000000000302', 'Ended', 0, sale.product_ids[1], {
        schedule: {
          start_at: new Date(Date.now() - 2 * day).toISOString(),
          end_at: new Date(Date.now() - day).toISOString(),
        },
      }),
    );
    await w.putConfig(
      storeId,
      'merch_rule',
      rule('01JE0000000000000000000303', 'Tomorrow', 1, sale.product_ids[2], {
        schedule: { start_at: new Date(Date.now() + day).toISOString(), end_at: null },
      }),
    );
    await w.putConfig(
      storeId,
      'merch_rule',
      rule('01JE0000000000000000000304', 'French shoppers', 10, sale.product_ids[3], {
        conditions: { expressions: [{ property: 'geo.country', operator: 'eq', values: ['FR'] }] },
      }),
    );
    await waitForApp(w);
    const applied = async (context: object) => {
      const r = await browse(sale.handle, { context, pagination: { limit: 1 } });
      return [r.body.appliedRules.map((x) => x.id), String(r.body.results[0].id)];
    };
    // out of schedule (ended, not started) never; the conditional rule for FR only; else the live rule
    expect(await applied({})).toEqual([[liveRule], livePin]);
    expect(await applied({ geo: { country: 'DE' } })).toEqual([[liveRule], livePin]);
    expect(await applied({ geo: { country: 'FR' } })).toEqual([['01JE0000000000000000000304'], sale.product_ids[3]]);
  });

  it('answers 404 for a preview older than its hour, and never for a live one of the same rule', async () => {
    const w = testStoreWriter();
    const rule = { id: liveRule, name: 'Sale pin v2', collection_handle: sale.handle, pins: [] };
    const live = await w.putConfig(storeId, 'merch_preview', { rule });
    // the writer stamps every preview with created_at = now: the expired one goes through its producer
    const produce = (
      w as unknown as {
        produce(store: string, kind: ConfigKind, id: string, payload: unknown): Promise<WriteResult>;
      }
    ).produce.bind(w);
    const expiredId = randomUUID();
    const expired = await produce(storeId, 'merch_preview', expiredId, {
      id: expiredId,
      rule: { ...live.value.rule, name: 'Sale pin (expired)' },
      created_at: new Date(Date.now() - 2 * 3_600_000).toISOString(),
      expires_at: new Date(Date.now() - 3_600_000).toISOString(),
    });
    await waitForApp(expired);
    const r = await browse(sale.handle, { preview_id: expiredId });
    expect(r.res.status).toBe(404);
    expect(r.body.error).toMatchObject({ code: 'not_found', fields: [{ path: 'preview_id' }] });
    const ok = await browse(sale.handle, { preview_id: live.itemId, pagination: { limit: 1 } });
    expect(ok.res.status).toBe(200);
    expect(ok.body.appliedRules).toEqual([{ id: liveRule, name: 'Sale pin v2', preview: true, banners: [] }]);
  });

  it('shows a banner with device conditions to mobile devices only', async () => {
    const summer = collection('Summer Edit');
    const banners = async (userAgent: string) => {
      const r = await browse(summer.handle, { pagination: { limit: 1 } }, { 'user-agent': userAgent });
      expect(r.body.appliedRules.map((x) => x.id)).toEqual(['01JDDEM0000000000000000R01']);
      return r.body.appliedRules[0].banners.map((b) => b.id);
    };
    const desktop = await banners(
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36',
    );
    const mobile = await banners(
      'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
    );
    // the demo rule's mobile-only banner (N03) next to the unconditional ones
    expect(desktop).toEqual(['01JDDEM0000000000000000N01', '01JDDEM0000000000000000N02']);
    expect(mobile.sort()).toEqual([...desktop, '01JDDEM0000000000000000N03'].sort());
  });

  it('pins dynamicLinking before the merchandising pins, skipping sold-out and invisible products', async () => {
    const now = () => new Date().toISOString();
    // the sold-out member
    const soldOut = products.get(sale.product_ids[6]) as Product;
    await sink.write(storeId, [
      {
        type: 'product',
        ...soldOut,
        updated_at: now(),
        variants: soldOut.variants.map((v) => ({
          ...v,
          available: false,
          inventory_quantity: 0,
          inventory_policy: 'deny',
          inventory_levels: v.inventory_levels?.map((l) => ({ ...l, available: 0 })),
        })),
      },
    ]);
    // an invisible member: first published (so the index surely knows it), then a draft
    const source = products.get(sale.product_ids[0]) as Product;
    const hidden = {
      ...(source as unknown as Record<string, unknown>),
      id: '9099999201',
      handle: `${source.handle}-dl-hidden`,
      variants: [{ ...source.variants[0], id: '9099999202', inventory_item_id: null, inventory_levels: [] }],
      images: [],
    };
    const members = collections.find((c) => c.handle === sale.handle) as unknown as Record<string, unknown>;
    await sink.write(storeId, [
      { type: 'product', ...hidden, updated_at: now() },
      { type: 'collection', ...members, product_ids: [...sale.product_ids, hidden.id], updated_at: now() },
    ]);
    const byId = (id: string, extra: object = {}) =>
      browse(sale.handle, {
        ...extra,
        filter_group: { expressions: [{ property: 'id', operator: 'eq', values: [Number(id)] }] },
      });
    await expect
      .poll(async () => (await byId(hidden.id)).body.totalResults, { timeout: 15_000, interval: 100 })
      .toBe(1);
    await sink.write(storeId, [{ type: 'product', ...hidden, status: 'draft', published_at: null, updated_at: now() }]);
    await expect
      .poll(
        async () => [
          (await byId(hidden.id)).body.totalResults,
          (await byId(soldOut.id, { forceHideOutOfStock: true })).body.totalResults,
        ],
        { timeout: 15_000, interval: 100 },
      )
      .toEqual([0, 0]);
    // a linked product that is visible and available
    const available = (
      await browse(sale.handle, { forceHideOutOfStock: true, pagination: { limit: 100 } })
    ).body.results
      .map((x) => String(x.id))
      .filter((id) => id !== livePin);
    const linked = products.get(available[available.length - 1]) as Product;
    const r = await browse(sale.handle, {
      dynamicLinking: { products: [soldOut.handle, hidden.handle, Number(hidden.id), linked.handle] },
      pagination: { limit: 5 },
    });
    expect(r.body.appliedRules.map((x) => x.id)).toEqual([liveRule]);
    // the linked product first, the rule's pin (position 1) after it; the sold-out and hidden ones are not
    // pinned: the page is the unlinked page with only the linked product moved to the front (the sold-out
    // one may still be on it where the sort puts it)
    const unlinked = (await browse(sale.handle, { pagination: { limit: 6 } })).body.results.map((x) => String(x.id));
    expect(unlinked[0]).toBe(livePin);
    expect(r.body.results.map((x) => String(x.id))).toEqual(
      [linked.id, ...unlinked.filter((id) => id !== linked.id)].slice(0, 5),
    );
    expect(r.body.results.map((x) => String(x.id))).not.toContain(hidden.id);
  });

  it('orders trending and popularity by the stream aggregates; best-selling leaves out sales older than 7 days', async () => {
    // products with orders so far (best-selling test) and collections other tests change
    const busy = new Set(
      collections
        .filter((c) => c.handle !== main.handle && c.product_ids.length > 12)
        .filter((c) => c.metafields.some((m) => m.key === 'default_sort_order' && m.value === 'best_selling'))[0]
        .product_ids.slice(10, 13),
    );
    const used = new Set([main.handle, sale.handle, 'home', 'accessories', 'footwear', 'apparel', 'summer-edit']);
    const target = collections.find(
      (c) =>
        !used.has(c.handle) &&
        c.product_ids.length >= 8 &&
        c.metafields.some((m) => m.key === 'default_sort_order' && m.value === 'best_selling') &&
        !c.product_ids.some((id) => busy.has(id)),
    ) as Collection;
    expect(target).toBeDefined();
    const old = products.get(target.product_ids[5]) as Product;
    const recent = products.get(target.product_ids[7]) as Product;
    const order = (id: number, p: Product, quantity: number, daysAgo: number) => {
      const at = new Date(Date.now() - daysAgo * 86_400_000).toISOString();
      return {
        type: 'order' as const,
        id,
        created_at: at,
        updated_at: at,
        processed_at: at,
        cancelled_at: null,
        currency: 'USD',
        total_price: (Number(p.variants[0].price) * quantity).toFixed(2),
        test: false,
        line_items: [{ product_id: p.id, variant_id: p.variants[0].id, quantity, price: p.variants[0].price }],
      };
    };
    // 20 units 10 days ago: popular (100), not trending (no recent sales against a baseline), no 7-day revenue;
    // 1 unit today: trending (6), less popular (5), the only 7-day revenue
    await sink.write(storeId, [order(880_000_101, old, 20, 10), order(880_000_102, recent, 1, 0)]);
    const top = async (code: string, n: number) =>
      (await browse(target.handle, { sort_order_code: code, pagination: { limit: n } })).body.results.map((x) =>
        String(x.id),
      );
    await expect
      .poll(async () => [await top('trending', 2), await top('popularity', 2)], { timeout: 30_000, interval: 250 })
      .toEqual([
        [recent.id, old.id],
        [old.id, recent.id],
      ]);
    // best-selling: the recent sale first, then the collection order (the old sale counts for nothing)
    expect(await top('best_selling', 8)).toEqual(
      [recent.id, ...target.product_ids.filter((id) => id !== recent.id)].slice(0, 8),
    );
  });

  it('does not serve an answer cached before a scheduled rule starts once it has started', async () => {
    const w = testStoreWriter();
    const soonRule = '01JE0000000000000000000305';
    const startsAt = Date.now() + 8_000;
    await w.putConfig(storeId, 'merch_rule', {
      id: soonRule,
      name: 'Starts soon',
      collection_handle: sale.handle,
      priority: 5,
      pins: [{ product_id: sale.product_ids[8], position: 1 }],
      schedule: { start_at: new Date(startsAt).toISOString(), end_at: null },
    });
    await waitForApp(w);
    try {
      const body = { pagination: { limit: 3 } };
      const seen = async () => {
        const r = await browse(sale.handle, body);
        return [r.res.headers.get('x-service-results-cache'), r.body.appliedRules[0]?.id, String(r.body.results[0].id)];
      };
      const before = [await seen(), await seen()];
      expect(Date.now(), 'both answers came before the start').toBeLessThan(startsAt);
      expect(before).toEqual([
        ['MISS', liveRule, livePin],
        ['HIT', liveRule, livePin],
      ]);
      await new Promise((r) => setTimeout(r, startsAt - Date.now() + 50));
      // no configuration or catalog change happened: the start itself makes the cached answer unreachable
      expect(await seen()).toEqual(['MISS', soonRule, sale.product_ids[8]]);
    } finally {
      await w.deleteConfig(storeId, 'merch_rule', soonRule);
      await waitForApp(w);
    }
  });
});

describe('browse: defaultSelectedOptions with filters and breakouts', () => {
  it('is skipped under an option filter: the first variant by position', async () => {
    const p = main.product_ids
      .map((id) => products.get(id) as Product)
      .find((x) => x.variants[0].option1 !== x.variants[x.variants.length - 1].option1) as Product;
    const last = p.variants[p.variants.length - 1];
    const select = (expressions: object[]) =>
      browse(main.handle, {
        defaultSelectedOptions: [{ optionCode: 'Color', value: last.option1 as string }],
        filter_group: { expressions: [{ property: 'id', operator: 'eq', values: [Number(p.id)] }, ...expressions] },
        attributes: ['id', 'first_or_matched_variant'],
      });
    // without a variant filter: the first variant of the selected colour
    const plain = await select([]);
    const matched = p.variants.find((v) => v.option1 === last.option1) as Product['variants'][number];
    expect(matched.id).not.toBe(p.variants[0].id);
    expect((plain.body.results[0].first_or_matched_variant as { id: number }).id).toBe(Number(matched.id));
    const filtered = await select([{ property: 'options.Color', operator: 'eq', values: [last.option1] }]);
    expect(filtered.body.totalResults).toBe(1);
    expect((filtered.body.results[0].first_or_matched_variant as { id: number }).id).toBe(Number(p.variants[0].id));
  });

  it('makes variant tiles follow the entries of the other options, within their own option value', async () => {
    const footwear = collection('Footwear');
    // a product with a colour sold in at least two sizes
    const p = footwear.product_ids
      .map((id) => products.get(id) as Product)
      .find((x) => x.variants.filter((v) => v.option1 === x.variants[0].option1).length >= 2) as Product;
    const colour = p.variants[0].option1 as string;
    const size = p.variants.filter((v) => v.option1 === colour)[1].option2 as string;
    const r = await browse(footwear.handle, {
      defaultSelectedOptions: [
        { optionCode: 'Color', value: colour },
        { optionCode: 'Size', value: size },
      ],
      filter_group: { expressions: [{ property: 'id', operator: 'eq', values: [Number(p.id)] }] },
      attributes: ['id', 'variants', 'first_or_matched_variant'],
      pagination: { limit: 50 },
    });
    const colours = new Set(p.variants.map((v) => v.option1));
    expect(r.body.totalResults).toBe(colours.size);
    for (const t of r.body.results) {
      expect(t.__typename).toBe('Variant');
      const tileColour = t.variants[0].option1;
      const group = p.variants.filter((v) => v.option1 === tileColour);
      // the selected size within the tile's colour, else its first variant; the colour entry does not pick
      const want = group.find((v) => v.option2 === size) ?? group[0];
      expect((t.first_or_matched_variant as { id: number }).id, `tile ${tileColour}`).toBe(Number(want.id));
    }
    const own = r.body.results.find((t) => t.variants[0].option1 === colour) as Rec;
    expect((own.first_or_matched_variant as { id: number }).id).not.toBe(Number(p.variants[0].id));
  });
});
