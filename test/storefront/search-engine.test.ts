// The search engine on an in-memory catalog: analysis, spelling, intents, synonyms, learned evidence,
// live text-index updates and the degraded (prefix_only) mode. The stack suite (test/stack/search.test.ts)
// covers the same through HTTP; here each stage is driven directly.
import { describe, expect, it } from 'vitest';
import type { ProductView } from '../../clickhouse/queries/catalog.ts';
import { normalizeContext } from '../../services/storefront/context.ts';
import { StoreCatalog } from '../../services/storefront/results/catalog.ts';
import type { ResultsInput } from '../../services/storefront/results/engine.ts';
import { editDistance, queryKey, terms } from '../../services/storefront/search/analyze.ts';
import { executeSearch, type SearchDeps } from '../../services/storefront/search/engine.ts';
import { LearnedIndex } from '../../services/storefront/search/learned.ts';
import { CooccurrenceProvider } from '../../services/storefront/search/semantic.ts';
import { textIndexOf } from '../../services/storefront/search/text-index.ts';
import { readIntents, synonymExpansions } from '../../services/storefront/search/understand.ts';
import { StoreViews } from '../../services/storefront/store-view.ts';
import { createLogger } from '../../services/common/logger.ts';
import { MemoryDirectory } from './harness.ts';

let nextId = 1000;
function product(title: string, type: string, price: number, extra: Partial<ProductView> = {}): ProductView {
  const id = String(nextId++);
  return {
    id,
    title,
    handle: `p-${id}`,
    body_html: `<p>${title}</p>`,
    vendor: 'Acme',
    product_type: type,
    tags: [],
    status: 'active',
    published_at: '2026-01-01T00:00:00Z',
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    options: [{ name: 'Color', position: 1, values: ['Red'] }],
    variants: [
      {
        id: `${id}1`,
        title: 'Red',
        sku: `SKU-${id}`,
        barcode: null,
        price: price.toFixed(2),
        compare_at_price: null,
        option1: 'Red',
        option2: null,
        option3: null,
        position: 1,
        available: true,
        inventory_quantity: 5,
        inventory_item_id: null,
        inventory_policy: 'deny',
        inventory_management: null,
        image_id: null,
        requires_components: false,
      },
    ],
    images: [],
    metafields: {},
    is_gift_card: false,
    combined_listing_parent_product_id: null,
    combined_listing_role: null,
    has_variants_that_require_components: false,
    category: null,
    price_range: { from: price.toFixed(2), to: price.toFixed(2) },
    available: true,
    ...extra,
  };
}

function setup(products: ProductView[], context: Parameters<typeof normalizeContext>[2] = undefined) {
  const dir = new MemoryDirectory();
  const { storeId } = dir.addStore();
  const catalog = new StoreCatalog(storeId);
  for (const p of products) catalog.putProduct(p);
  const views = new StoreViews(dir);
  const view = views.get(dir.getStore(storeId) as NonNullable<ReturnType<MemoryDirectory['getStore']>>);
  const ctx = normalizeContext(view, undefined, context, { deviceType: 'desktop' });
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
