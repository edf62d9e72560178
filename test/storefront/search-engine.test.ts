// The search engine on an in-memory catalog: analysis, spelling, intents, synonyms, learned evidence,
// live text-index updates and the degraded (prefix_only) mode. The stack suite (test/stack/search.test.ts)
// covers the same through HTTP; here each stage is driven directly.
import { describe, expect, it } from 'vitest';
import type { ProductView } from '../../clickhouse/queries/catalog.ts';
import { productView } from './fixtures.ts';
import type { LearnedRow } from '../../clickhouse/queries/learned.ts';
import { normalizeContext } from '../../services/storefront/context.ts';
import { StoreCatalog } from '../../services/storefront/results/catalog.ts';
import type { ResultsInput } from '../../services/storefront/results/engine.ts';
import { editDistance, queryKey, terms } from '../../services/storefront/search/analyze.ts';
import { executeSearch, type SearchDeps } from '../../services/storefront/search/engine.ts';
import { LearnedIndex } from '../../services/storefront/search/learned.ts';
import { CooccurrenceProvider, SEMANTIC_REDIRECT_THRESHOLD } from '../../services/storefront/search/semantic.ts';
import { ProductTextIndex, textIndexOf } from '../../services/storefront/search/text-index.ts';
import { readIntents, synonymExpansions } from '../../services/storefront/search/understand.ts';
import { StoreViews } from '../../services/storefront/store-view.ts';
import { createLogger } from '../../services/common/logger.ts';
import { MemoryDirectory } from './harness.ts';

let nextId = 1000;
function product(title: string, type: string, price: number, extra: Partial<ProductView> = {}): ProductView {
  return productView(String(nextId++), title, type, price, extra);
}

function setup(
  products: ProductView[],
  context: Parameters<typeof normalizeContext>[2] = undefined,
  opts: { configure?: (dir: MemoryDirectory, storeId: string) => void; device?: 'desktop' | 'mobile' } = {},
) {
  const dir = new MemoryDirectory();
  const { storeId } = dir.addStore();
  opts.configure?.(dir, storeId);
  const catalog = new StoreCatalog(storeId);
  for (const p of products) catalog.putProduct(p);
  const views = new StoreViews(dir);
  const view = views.get(dir.getStore(storeId) as NonNullable<ReturnType<MemoryDirectory['getStore']>>);
  const ctx = normalizeContext(view, undefined, context, { deviceType: opts.device ?? 'desktop' });
  if (!ctx.ok) throw new Error('context');
  const input = (): ResultsInput => ({ catalog, view, dir, rc: ctx.context, now: Date.now() });
  return { dir, storeId, catalog, input };
}

const ids = (r: ReturnType<typeof executeSearch>) => r.productIds;

describe('search analysis', () => {
  it('stems singular and plural together and joins hyphenated words', () => {
    expect(terms('Linen Dresses')).toEqual(terms('linen dress'));
    expect(terms('T-Shirts')).toEqual(['tshirt']);
    expect(terms('crew-neck')).toEqual(['crew', 'neck', 'crewneck']);
    expect(queryKey('The Festival Fits')).toBe(queryKey('festival fit'));
  });

  it('measures edit distance with transpositions and gives up above the bound', () => {
    expect(editDistance('linen', 'linnen', 2)).toBe(1);
    expect(editDistance('shirt', 'shrit', 2)).toBe(1);
    expect(editDistance('shirt', 'dress', 2)).toBe(3);
  });

  it('reads price and sale intents and takes them out of the text', () => {
    expect(readIntents('linen dress under $50')).toEqual({
      intents: [{ type: 'price_max', value: 50, text: 'under $50' }],
      rest: 'linen dress',
    });
    expect(readIntents('cheap boots on sale').intents.map((i) => i.type)).toEqual([
      'price_sensitivity',
      'sale_interest',
    ]);
    expect(readIntents('dress between 20 and 40').intents).toEqual([
      expect.objectContaining({ type: 'price_min', value: 20 }),
      expect.objectContaining({ type: 'price_max', value: 40 }),
    ]);
  });

  it('expands configured synonyms on analyzed words, one-way only forwards', () => {
    const syn = [
      { id: 'a', type: 'two_way' as const, terms: ['sweater', 'jumper'] },
      { id: 'b', type: 'one_way' as const, term: 'pants', synonyms: ['trousers'] },
    ];
    expect(synonymExpansions('wool jumpers', syn)).toEqual(['wool sweater']);
    expect(synonymExpansions('linen pants', syn)).toEqual(['linen trousers']);
    expect(synonymExpansions('linen trousers', syn)).toEqual([]);
  });
});

describe('search engine', () => {
  const linen = [product('Linen Shirt', 'Shirt', 40), product('Breezy Linen Shirt', 'Shirt', 90)];
  const others = [
    product('Cotton Shirt', 'Shirt', 30),
    product('Linen Dress', 'Dress', 80),
    product('Wool Sweater', 'Sweater', 70),
  ];
  const { input, catalog, dir, storeId } = setup([...linen, ...others]);
  const learned = new LearnedIndex({
    source: {
      store: async () => [{ query: 'beach day', productId: others[1].id, views: 4, carts: 1, purchases: 0 }],
      queries: async () => [],
    },
    logger: createLogger('search-engine-test', 'silent'),
  });
  const deps = async (): Promise<SearchDeps> => ({
    text: textIndexOf(catalog),
    learned: await learned.get(storeId),
    semantic: new CooccurrenceProvider(),
  });

  it('ranks products matching every word above those matching some', async () => {
    const r = executeSearch(input(), 'linen shirts', {}, await deps(), null);
    expect(ids(r).slice(0, 2).sort()).toEqual(linen.map((p) => p.id).sort());
    expect(ids(r)).toContain(others[0].id); // "shirt" alone still matches, lower
    expect(ids(r).indexOf(others[0].id)).toBeGreaterThan(1);
  });

  it('corrects a misspelling, applies intents, and finds learned products no text matches', async () => {
    const r = executeSearch(input(), 'lnien shirt', {}, await deps(), null);
    expect(r.plan.corrections).toEqual([{ from: 'lnien', to: 'linen' }]);
    const cheap = executeSearch(input(), 'shirt under 35', {}, await deps(), null);
    expect(ids(cheap)).toEqual([others[0].id]);
    const learnedOnly = executeSearch(input(), 'Beach Days', {}, await deps(), null);
    expect(ids(learnedOnly)).toEqual([others[1].id]);
  });

  it('sees a catalog change in the same swap (new, renamed and removed products)', async () => {
    const added = product('Silk Scarf', 'Scarf', 25);
    catalog.putProduct(added);
    expect(ids(executeSearch(input(), 'silk scarf', {}, await deps(), null))).toEqual([added.id]);
    catalog.putProduct({ ...added, title: 'Satin Scarf', body_html: '<p>Satin Scarf</p>' });
    expect(ids(executeSearch(input(), 'silk', {}, await deps(), null))).toEqual([]);
    catalog.removeProduct(added.id);
    expect(ids(executeSearch(input(), 'satin', {}, await deps(), null))).toEqual([]);
  });

  it("keeps each search's candidates its own: two stores' searches interleaved answer as each alone", async () => {
    // both catalogs' keyword indexes number their products from 0: the candidates of one search must not
    // reach the next one's
    const other = setup([product('Linen Scarf', 'Scarf', 20), product('Linen Shirt', 'Shirt', 45)]);
    const otherDeps: SearchDeps = {
      text: textIndexOf(other.catalog),
      learned: null,
      semantic: new CooccurrenceProvider(),
    };
    const alone = ids(executeSearch(input(), 'linen shirts', {}, await deps(), null));
    const otherAlone = ids(executeSearch(other.input(), 'linen', {}, otherDeps, null));
    expect(otherAlone).toHaveLength(2);
    for (let i = 0; i < 3; i++) {
      expect(ids(executeSearch(other.input(), 'linen', {}, otherDeps, null))).toEqual(otherAlone);
      expect(ids(executeSearch(input(), 'linen shirts', {}, await deps(), null))).toEqual(alone);
    }
    // a product with learned evidence that the keyword index does not hold is still a candidate
    const apart: SearchDeps = { ...(await deps()), text: new ProductTextIndex() };
    expect(ids(executeSearch(input(), 'beach day', {}, apart, null))).toEqual([others[1].id]);
  });

  it('degrades to prefix_only without the learned stage: literal text with prefix matching only', async () => {
    const d = { ...(await deps()), learned: null };
    const r = executeSearch(input(), 'wool swea', {}, d, null);
    expect(r.envelope._meta.degraded).toBe('prefix_only');
    expect(ids(r)[0]).toBe(others[2].id);
    // no correction, no intents, no learned evidence in degraded mode
    expect(executeSearch(input(), 'lnien', {}, d, null).plan.corrections).toEqual([]);
    expect(executeSearch(input(), 'beach day', {}, d, null).productIds).toEqual([]);
    expect(executeSearch(input(), 'shirt under 35', {}, d, null).plan.intents).toEqual([]);
    expect(dir).toBeDefined();
  });
});

describe('search engine: stems are applied once', () => {
  it('finds words whose stem stems again ("suede" → "sued" → "su")', async () => {
    const suede = product('Harbor Suede Sneakers', 'Sneakers', 90);
    const leather = product('Harbor Leather Sneakers', 'Sneakers', 80);
    const { catalog } = setup([suede, leather]);
    const hits = textIndexOf(catalog).search('suede sneakers', { prefix: false, partial: true });
    expect(hits.terms).toBe(2);
    expect(hits.hits.find((h) => h.id === suede.id)?.matched).toBe(2);
    expect(hits.hits.find((h) => h.id === leather.id)?.matched).toBe(1);
  });
});

describe('search engine: personalization', () => {
  it("ranks the type and vendor of the shopper's viewed and cart products higher among equal matches", async () => {
    const shirt = product('Linen Shirt', 'Shirt', 40);
    const dress = product('Linen Dress', 'Dress', 40);
    const otherDress = product('Silk Dress', 'Dress', 90);
    const otherShirt = product('Cotton Shirt', 'Shirt', 30);
    const run = async (context: Parameters<typeof setup>[1]) => {
      const { input, catalog } = setup([shirt, dress, otherDress, otherShirt], context);
      const deps: SearchDeps = { text: textIndexOf(catalog), learned: null, semantic: new CooccurrenceProvider() };
      // learned: null would be degraded; use an empty learned index instead
      const learned = new LearnedIndex({
        source: { store: async () => [], queries: async () => [] },
        logger: createLogger('personal', 'silent'),
      });
      deps.learned = await learned.get(catalog.storeId);
      return executeSearch(input(), 'linen', {}, deps, null).productIds.slice(0, 2);
    };
    expect(await run({ productsViewed: [{ id: otherDress.id }] })).toEqual([dress.id, shirt.id]);
    expect(await run({ productsInCart: [{ productId: otherShirt.id, title: 'Cotton Shirt' }] })).toEqual([
      shirt.id,
      dress.id,
    ]);
  });
});

/** the learned evidence of a store from these rows (what the ClickHouse source would return) */
async function learnedOf(storeId: string, rows: LearnedRow[]) {
  const index = new LearnedIndex({
    source: { store: async () => rows, queries: async () => [] },
    logger: createLogger('search-engine-test', 'silent'),
  });
  return index.get(storeId);
}
async function depsOf(catalog: StoreCatalog, rows: LearnedRow[] = []): Promise<SearchDeps> {
  return {
    text: textIndexOf(catalog),
    learned: await learnedOf(catalog.storeId, rows),
    semantic: new CooccurrenceProvider(),
  };
}
const DAY_MS = 86_400_000;

describe('search engine: semantic similarity from behaviour', () => {
  const shoe = '501';
  const kettle = '502';
  const rows: LearnedRow[] = [
    { query: 'trainers', productId: shoe, views: 4, carts: 1, purchases: 0 },
    { query: 'sneakers', productId: shoe, views: 3, carts: 0, purchases: 1 },
    { query: 'kettle', productId: kettle, views: 6, carts: 0, purchases: 0 },
    // one view: too thin to carry a redirect
    { query: 'plimsolls', productId: shoe, views: 1, carts: 0, purchases: 0 },
  ];

  it('scores queries with no shared stem as close once shoppers chose the same products after each', async () => {
    const learned = await learnedOf('s-semantic', rows);
    const provider = new CooccurrenceProvider();
    expect(terms('trainers').some((t) => terms('sneakers').includes(t))).toBe(false);
    expect(provider.similarity('trainers', 'sneakers', learned)).toBeGreaterThanOrEqual(SEMANTIC_REDIRECT_THRESHOLD);
    // same words, or none in common and different products
    expect(provider.similarity('sneakers', 'Sneaker', learned)).toBeCloseTo(1, 6);
    expect(provider.similarity('trainers', 'kettle', learned)).toBe(0);
    // without behaviour (or with too little of it) only the words count
    expect(provider.similarity('trainers', 'sneakers', null)).toBe(0);
    expect(provider.similarity('plimsolls', 'sneakers', learned)).toBe(0);
    expect(provider.similarity('gift card holder', 'gift cards', null)).toBeCloseTo(2 / Math.sqrt(6), 6);
  });

  it('redirects a query to a semantic redirect term it shares no stem with, through the engine', async () => {
    const p = product('Harbor Runner', 'Shoes', 80);
    const { input, catalog } = setup([p], undefined, {
      configure: (dir, storeId) =>
        dir.put(storeId, 'redirect_term', { term: 'sneakers', url: '/collections/sneakers', match: 'semantic' }),
    });
    const deps = await depsOf(catalog, [
      { query: 'trainers', productId: p.id, views: 4, carts: 1, purchases: 0 },
      { query: 'sneakers', productId: p.id, views: 5, carts: 0, purchases: 0 },
    ]);
    const r = executeSearch(input(), 'Trainers', {}, deps, null);
    expect(r.envelope._meta.redirect).toEqual({ url: '/collections/sneakers' });
    expect(r.envelope._workflow).toEqual([{ type: 'semantic-redirect', payload: '/collections/sneakers' }]);
    expect(r.productIds).toEqual([]);
    // a query shoppers took elsewhere is searched normally
    const other = executeSearch(input(), 'runner', {}, deps, null);
    expect(other.envelope._meta.redirect).toBeUndefined();
    expect(other.productIds).toEqual([p.id]);
    // degraded (no learned stage): no behaviour, no semantic redirect
    expect(executeSearch(input(), 'Trainers', {}, { ...deps, learned: null }, null).envelope._meta.redirect).toBe(
      undefined,
    );
  });
});

describe('search engine: ranking signals among equal keyword matches', () => {
  // each pair: the same title and text, the first one inserted first (the tie-break would keep it first)
  const pair = (title: string, second: Partial<ProductView> = {}, first: Partial<ProductView> = {}) => [
    product(title, 'Bag', 40, first),
    product(title, 'Bag', 40, second),
  ];

  it('ranks the more popular product first', async () => {
    const [a, b] = pair('Canvas Tote');
    const { input, catalog } = setup([a, b]);
    const deps = await depsOf(catalog);
    expect(executeSearch(input(), 'canvas tote', {}, deps, null).productIds).toEqual([a.id, b.id]);
    catalog.setSignals(new Map([[b.id, { revenue7d: 0, trending: 0, popularity: 40 }]]));
    expect(executeSearch(input(), 'canvas tote', {}, deps, null).productIds).toEqual([b.id, a.id]);
  });

  it('ranks the more recently published product first', async () => {
    const recent = new Date(Date.now() - 2 * DAY_MS).toISOString();
    const [a, b] = pair(
      'Canvas Tote',
      { published_at: recent, created_at: recent },
      {
        published_at: '2024-01-01T00:00:00Z',
        created_at: '2024-01-01T00:00:00Z',
      },
    );
    const { input, catalog } = setup([a, b]);
    expect(executeSearch(input(), 'canvas tote', {}, await depsOf(catalog), null).productIds).toEqual([b.id, a.id]);
  });

  it('ranks the product in stock above the sold-out one, which stays in the results', async () => {
    const [a, b] = pair('Canvas Tote');
    const soldOut: ProductView = {
      ...a,
      available: false,
      variants: a.variants.map((v) => ({ ...v, available: false, inventory_quantity: 0 })),
    };
    const { input, catalog } = setup([soldOut, b]);
    const deps = await depsOf(catalog);
    expect(executeSearch(input(), 'canvas tote', {}, deps, null).productIds).toEqual([b.id, a.id]);
    expect(executeSearch(input(), 'canvas tote', { forceHideOutOfStock: true }, deps, null).productIds).toEqual([b.id]);
  });

  it("ranks products with words of the shopper's prior searches first", async () => {
    const cotton = product('Cotton Shirt', 'Shirt', 40);
    const linen = product('Linen Shirt', 'Shirt', 40);
    const run = async (context: Parameters<typeof setup>[1]) => {
      const { input, catalog } = setup([cotton, linen], context);
      return executeSearch(input(), 'shirt', {}, await depsOf(catalog), null).productIds;
    };
    expect(await run(undefined)).toEqual([cotton.id, linen.id]);
    expect(await run({ priorSearches: [{ searchQuery: 'linen trousers' }] })).toEqual([linen.id, cotton.id]);
  });
});

describe('search engine: field weights', () => {
  it('ranks a title match above a description match', async () => {
    const inText = product('Plain Top', 'Top', 30, { body_html: '<p>A top with a velvet trim.</p>' });
    const inTitle = product('Velvet Top', 'Top', 30, { body_html: '<p>A top with a plain trim.</p>' });
    const { input, catalog } = setup([inText, inTitle]);
    expect(executeSearch(input(), 'velvet', {}, await depsOf(catalog), null).productIds).toEqual([
      inTitle.id,
      inText.id,
    ]);
  });

  it('matches the vendor and tag words of a product', async () => {
    const byVendor = product('Field Jacket', 'Jacket', 120, { vendor: 'Northwind' });
    const byTag = product('Rain Jacket', 'Jacket', 90, { tags: ['festival', 'waterproof'] });
    const other = product('Wool Coat', 'Coat', 150);
    const { input, catalog } = setup([byVendor, byTag, other]);
    const deps = await depsOf(catalog);
    expect(executeSearch(input(), 'northwind', {}, deps, null).productIds).toEqual([byVendor.id]);
    expect(executeSearch(input(), 'festival', {}, deps, null).productIds).toEqual([byTag.id]);
    expect(executeSearch(input(), 'northwind jacket', {}, deps, null).productIds[0]).toBe(byVendor.id);
  });
});

describe('search engine: soft demotion of a sort order', () => {
  it("puts results below the order's threshold of the best relevance after the rest, each part in price order", async () => {
    const full = [product('Linen Shirt', 'Shirt', 90), product('Linen Shirt Relaxed', 'Shirt', 60)];
    const partial = [product('Cotton Shirt', 'Shirt', 10), product('Linen Dress', 'Dress', 20)];
    const expressions = [{ attribute: 'price', direction: 'asc' as const }];
    const { input, catalog } = setup([...full, ...partial], undefined, {
      configure: (dir, storeId) => {
        dir.put(storeId, 'sort_order', {
          code: 'cheap_soft',
          nickname: 'Cheapest',
          scope: 'search',
          expressions,
          soft_demotion_threshold: 0.9,
        });
        dir.put(storeId, 'sort_order', {
          code: 'cheap_hard',
          nickname: 'Cheapest (no demotion)',
          scope: 'search',
          expressions,
          soft_demotion_threshold: 0,
        });
      },
    });
    const deps = await depsOf(catalog);
    const ids = (code: string) =>
      executeSearch(input(), 'linen shirt', { sort_order_code: code }, deps, null).productIds;
    // no demotion: price order over every match, partial matches included
    expect(ids('cheap_hard')).toEqual([partial[0].id, partial[1].id, full[1].id, full[0].id]);
    // demotion: the products matching "linen shirt" first, by price; then the partial matches, by price
    expect(ids('cheap_soft')).toEqual([full[1].id, full[0].id, partial[0].id, partial[1].id]);
  });
});

describe('search engine: search-rule targeting', () => {
  const p = product('Linen Shirt', 'Shirt', 40);
  const rule = (id: string, extra: Record<string, unknown>) => ({
    id,
    name: `rule ${id}`,
    actions: [{ type: 'set_sort_order', sort_order_code: `order_${id.slice(-1).toLowerCase()}` }],
    ...extra,
  });
  const A = '01JAAAAAAAAAAAAAAAAAAAAAAA';
  const B = '01JBBBBBBBBBBBBBBBBBBBBBBB';
  const C = '01JCCCCCCCCCCCCCCCCCCCCCCC';
  const configure = (dir: MemoryDirectory, storeId: string) => {
    for (const code of ['order_a', 'order_b', 'order_c'])
      dir.put(storeId, 'sort_order', {
        code,
        nickname: code,
        scope: 'search',
        expressions: [{ attribute: 'price', direction: 'asc' }],
      });
    // every query; priority 200 (after B)
    dir.put(storeId, 'search_rule', rule(A, { targeting: { query_match: 'any' }, priority: 200 }) as never);
    // every query; priority 10: first
    dir.put(storeId, 'search_rule', rule(B, { targeting: { query_match: 'any' }, priority: 10 }) as never);
    // only on mobile
    dir.put(
      storeId,
      'search_rule',
      rule(C, {
        targeting: {
          query_match: 'any',
          conditions: { expressions: [{ property: 'device_type', operator: 'eq', values: ['mobile'] }] },
        },
        priority: 0,
      }) as never,
    );
  };

  it('applies query_match any to every query, lowest priority first, and the first sort order set wins', async () => {
    const { input, catalog } = setup([p], undefined, { configure });
    const deps = await depsOf(catalog);
    for (const q of ['linen', 'anything at all']) {
      const r = executeSearch(input(), q, {}, deps, null);
      expect(r.envelope._meta.appliedSearchRules).toEqual([B, A]);
      expect(r.sortOrderCode).toBe('order_b');
      expect(r.envelope._meta.appliedSearchRuleActions).toEqual([
        { rule_id: B, type: 'set_sort_order', changed: true },
        { rule_id: A, type: 'set_sort_order', changed: false },
      ]);
    }
  });

  it('applies a rule with targeting conditions only to requests matching them', async () => {
    const mobile = setup([p], undefined, { configure, device: 'mobile' });
    const r = executeSearch(mobile.input(), 'linen', {}, await depsOf(mobile.catalog), null);
    expect(r.envelope._meta.appliedSearchRules).toEqual([C, B, A]);
    expect(r.sortOrderCode).toBe('order_c');
    const desktop = setup([p], undefined, { configure, device: 'desktop' });
    const d = executeSearch(desktop.input(), 'linen', {}, await depsOf(desktop.catalog), null);
    expect(d.envelope._meta.appliedSearchRules).toEqual([B, A]);
  });
});
