// Ranked collection lists (services/storefront/results/ranked.ts) against the reference path: every browse
// and facets answer with the in-process LRU on equals the answer computed from scratch (budget 0), over
// random request bodies and contexts interleaved with catalog changes, configuration changes and time
// passing a scheduled publication; and requests that differ only in page, attributes or shopper share one
// computed list.
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { CollectionView } from '../../clickhouse/queries/catalog.ts';
import type { BrowseBody, FacetsBody } from '../../schemas/storefront.ts';
import { normalizeContext } from '../../services/storefront/context.ts';
import { StoreCatalog } from '../../services/storefront/results/catalog.ts';
import { browse, collectionFacets, type ResultsInput } from '../../services/storefront/results/engine.ts';
import { RANKED_BUDGET_TILES, rankedLists } from '../../services/storefront/results/ranked.ts';
import { StoreViews } from '../../services/storefront/store-view.ts';
import { productView } from './fixtures.ts';
import { MemoryDirectory } from './harness.ts';

const T0 = Date.UTC(2026, 10, 27, 12);
const VENDORS = ['Acme', 'Birch', 'Cobalt', 'Dune'];
const HANDLE = 'everything';

function collection(id: string, handle: string): CollectionView {
  return {
    id,
    handle,
    title: handle,
    body_html: '',
    collection_type: 'custom',
    sort_order: 'manual',
    default_sort_order: null,
    published: true,
    published_at: '2026-01-01T00:00:00Z',
    image: null,
    metafields: {},
    updated_at: '2026-01-01T00:00:00Z',
  };
}

/** a store of 60 products (four vendors, prices, stock, three published 1–3 minutes after T0), two collections,
 * a configured sort order and a merchandising rule (a boost and a pin) for shoppers in Germany */
function store() {
  const dir = new MemoryDirectory();
  const { storeId } = dir.addStore();
  const catalog = new StoreCatalog(storeId);
  const ids: string[] = [];
  for (let i = 0; i < 60; i++) {
    const id = String(7000 + i);
    ids.push(id);
    const p = productView(id, `Product ${i}`, i % 3 === 0 ? 'Dress' : 'Shirt', 10 + ((i * 37) % 90), {
      vendor: VENDORS[i % VENDORS.length],
      published_at: i < 57 ? '2026-01-01T00:00:00Z' : new Date(T0 + (i - 56) * 60_000).toISOString(),
    });
    if (i % 7 === 0) p.variants = p.variants.map((v) => ({ ...v, available: false, inventory_quantity: 0 }));
    catalog.putProduct(p);
  }
  catalog.putCollection(collection('1', HANDLE), ids);
  catalog.putCollection(
    collection('2', 'odd'),
    ids.filter((_, i) => i % 2 === 1),
  );
  dir.put(storeId, 'sort_order', {
    code: 'price_asc',
    nickname: 'Price',
    expressions: [{ attribute: 'price', direction: 'asc' }],
  });
  // for shoppers in Germany only
  dir.put(storeId, 'merch_rule', {
    id: '01JE0000000000000000000301',
    name: 'Push Birch',
    collection_handle: HANDLE,
    conditions: { expressions: [{ property: 'geo.country', operator: 'eq', values: ['DE'] }] },
    boosts: [
      {
        match: { expressions: [{ property: 'vendor', operator: 'eq', values: ['Birch'] }] },
        mode: 'additive',
        factor: 1,
      },
    ],
    pins: [{ product_id: ids[30], position: 1 }],
  });
  const views = new StoreViews(dir);
  const view = () => views.get(dir.getStore(storeId) as NonNullable<ReturnType<MemoryDirectory['getStore']>>);
  const input = (context: Record<string, unknown> | undefined, now: number): ResultsInput => {
    const v = view();
    const ctx = normalizeContext(v, undefined, context as never, { deviceType: 'desktop' });
    if (!ctx.ok) throw new Error('context');
    return { catalog, view: v, dir, rc: ctx.context, now };
  };
  return { dir, storeId, catalog, ids, input };
}

/** the answer with the LRU as configured, then the reference (budget 0: nothing kept, nothing read) */
function both<T>(run: () => T): { lru: T; reference: T } {
  const lru = run();
  const budget = rankedLists.budget;
  rankedLists.budget = 0;
  try {
    return { lru, reference: run() };
  } finally {
    rankedLists.budget = budget;
  }
}

afterEach(() => {
  rankedLists.budget = RANKED_BUDGET_TILES;
  rankedLists.clear();
});

// few distinct values of what the key is made of (so requests meet the lists earlier ones left), any page
const bodyArb: fc.Arbitrary<BrowseBody> = fc
  .record({
    sort: fc.constantFrom(undefined, 'relevance', 'price_asc'),
    filter: fc.boolean(),
    discount: fc.boolean(),
    hide: fc.boolean(),
    page: fc.integer({ min: 1, max: 4 }),
    limit: fc.integer({ min: 1, max: 20 }),
    attributes: fc.constantFrom(undefined, ['id'], ['id', 'title', 'variants']),
  })
  .map(
    (b) =>
      ({
        ...(b.sort ? { sort_order_code: b.sort } : {}),
        ...(b.filter ? { filter_group: { expressions: [{ property: 'price', operator: 'lt', values: [50] }] } } : {}),
        ...(b.discount
          ? {
              discountEntitlements: [
                {
                  entitled: { all: false, products: ['7003', '7010', '7021'] },
                  discount: { type: 'PERCENTAGE', value: 90 },
                },
              ],
            }
          : {}),
        forceHideOutOfStock: b.hide,
        pagination: { page: b.page, limit: b.limit },
        ...(b.attributes ? { attributes: b.attributes } : {}),
        facets: ['vendor', 'product_type'],
        retrieveFacetCount: true,
        includeFacetRanges: true,
      }) as BrowseBody,
  );

const contextArb = fc.option(
  fc.record({ geo: fc.record({ country: fc.constantFrom('US', 'DE') }), custom: fc.record({ n: fc.nat(5) }) }),
  { nil: undefined },
);

type Op =
  | { kind: 'browse'; handle: string; body: BrowseBody; context: Record<string, unknown> | undefined }
  | { kind: 'facets'; handle: string; body: FacetsBody }
  | { kind: 'reprice'; index: number; price: number }
  | { kind: 'config' }
  | { kind: 'time'; minutes: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('browse' as const),
      handle: fc.constantFrom(HANDLE, 'odd'),
      body: bodyArb,
      context: contextArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('facets' as const),
      handle: fc.constantFrom(HANDLE, 'odd'),
      body: bodyArb.map((b) => ({
        facets: b.facets,
        retrieveFacetCount: b.retrieveFacetCount,
        includeFacetRanges: b.includeFacetRanges,
        filter_group: b.filter_group,
      })) as fc.Arbitrary<FacetsBody>,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('reprice' as const),
      index: fc.nat(59),
      price: fc.integer({ min: 1, max: 200 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'config' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('time' as const), minutes: fc.integer({ min: 0, max: 2 }) }) },
);

describe('ranked collection lists', () => {
  it('answer every browse and facets request exactly as the reference path, across catalog, configuration and time changes', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 5, maxLength: 60 }), (ops) => {
        rankedLists.clear();
        const s = store();
        let now = T0;
        let configs = 0;
        for (const op of ops) {
          if (op.kind === 'browse') {
            const { lru, reference } = both(() => browse(s.input(op.context, now), op.handle, op.body));
            expect(lru).toEqual(reference);
          } else if (op.kind === 'facets') {
            const { lru, reference } = both(() => collectionFacets(s.input(undefined, now), op.handle, op.body));
            expect(lru).toEqual(reference);
          } else if (op.kind === 'reprice') {
            // as CatalogIndex applies a change: the record replaced, the version bumped
            const id = s.ids[op.index];
            const p = s.catalog.products.get(id)?.p;
            if (!p) continue;
            s.catalog.putProduct({ ...p, variants: p.variants.map((v) => ({ ...v, price: op.price.toFixed(2) })) });
            s.catalog.version++;
          } else if (op.kind === 'config') {
            // a sort order changes direction: a new configuration generation
            s.dir.put(s.storeId, 'sort_order', {
              code: 'price_asc',
              nickname: 'Price',
              expressions: [{ attribute: 'price', direction: configs++ % 2 === 0 ? 'desc' : 'asc' }],
            });
          } else now += op.minutes * 60_000;
        }
      }),
      { numRuns: 80 },
    );
  });

  it('computes a collection once for requests that differ only in page, attributes and shopper', () => {
    const s = store();
    const before = rankedLists.misses;
    const pages = [1, 2, 3].map((page) =>
      browse(s.input({ custom: { visitor: page } }, T0), HANDLE, {
        pagination: { page, limit: 10 },
        attributes: page === 2 ? ['id'] : undefined,
      } as BrowseBody),
    );
    expect(rankedLists.misses - before).toBe(1);
    // the pages partition the collection's order
    const ids = pages.flatMap((p) => p.productIds);
    expect(new Set(ids).size).toBe(30);
    expect(pages[0].envelope.totalResults).toBe(57);
  });
  it('does not serve a list computed before a configuration change', () => {
    const s = store();
    const body = { sort_order_code: 'price_asc', pagination: { page: 1, limit: 60 } } as BrowseBody;
    const asc = browse(s.input(undefined, T0), HANDLE, body).productIds;
    s.dir.put(s.storeId, 'sort_order', {
      code: 'price_asc',
      nickname: 'Price',
      expressions: [{ attribute: 'price', direction: 'desc' }],
    });
    const desc = browse(s.input(undefined, T0), HANDLE, body).productIds;
    expect(desc).not.toEqual(asc);
    expect(s.catalog.products.get(desc[0])?.p.variants[0].price).toBe('99.00');
  });
  it('keeps no more than its budget, the least recently used evicted first', () => {
    const s = store();
    rankedLists.clear();
    rankedLists.budget = 400;
    // every collection member in each list (about 70 units), a discount of its own for each key
    const bodies = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => ({
      body: {
        discountEntitlements: [{ entitled: { products: ['7003'] }, discount: { type: 'PERCENTAGE', value: n * 10 } }],
      } as BrowseBody,
    }));
    for (const { body } of bodies) browse(s.input(undefined, T0), HANDLE, body);
    const { entries, weight } = rankedLists.usage();
    expect(weight).toBeLessThanOrEqual(400);
    expect(entries).toBeGreaterThan(1);
    expect(entries).toBeLessThan(bodies.length);
    // the last one is still kept, the first one was evicted
    const misses = rankedLists.misses;
    browse(s.input(undefined, T0), HANDLE, bodies[7].body);
    expect(rankedLists.misses).toBe(misses);
    browse(s.input(undefined, T0), HANDLE, bodies[0].body);
    expect(rankedLists.misses).toBe(misses + 1);
  });
});
