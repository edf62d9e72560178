// The similar-products index (services/storefront/similar/index.ts) on an in-memory catalog, with the
// real image index and the local image features of rendered product images: precomputed lists are served
// for a day and then recomputed (a product added since joins its neighbours' lists only then); the
// background pass takes changed products first; a list computed before the product's images were
// described is recomputed once they are, and describing another product's images leaves it alone.
// The stack suite (test/stack/blocks.test.ts) covers the same through HTTP.
import { describe, expect, it } from 'vitest';
import type { ProductView } from '../../clickhouse/queries/catalog.ts';
import { productView } from './fixtures.ts';
import { imageFeatureProvider } from '../../services/common/image-features.ts';
import { renderImage } from '../../services/demo/generator/images.ts';
import { StoreImages } from '../../services/storefront/images/index.ts';
import { StoreCatalog } from '../../services/storefront/results/catalog.ts';
import { imageSimilarityOf, StoreSimilar } from '../../services/storefront/similar/index.ts';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 26, 12);

let nextId = 5000;
function product(title: string, type: string, price: number, extra: Partial<ProductView> = {}): ProductView {
  return productView(String(nextId++), title, type, price, { option: { name: 'Size', value: 'M' }, ...extra });
}

/** a small store: dresses, shirts and mugs in a few words each */
function store() {
  const catalog = new StoreCatalog(`s-similar-${nextId}`);
  const products = [
    product('Linen summer dress', 'Dress', 40),
    product('Linen midi dress', 'Dress', 45),
    product('Cotton summer dress', 'Dress', 38),
    product('Wrap dress in linen', 'Dress', 52),
    product('Oxford cotton shirt', 'Shirt', 30),
    product('Linen shirt', 'Shirt', 35),
    product('Stoneware mug', 'Mug', 12),
    product('Enamel camping mug', 'Mug', 14),
  ];
  for (const p of products) catalog.putProduct(p);
  return { catalog, products, similar: new StoreSimilar(catalog) };
}

const idsOf = (list: { productId: string }[]) => list.map((n) => n.productId);

describe('similar products: precomputed lists', () => {
  it('a list is served precomputed for a day, then recomputed: a product added since joins it only then', () => {
    const { catalog, products, similar } = store();
    const dress = products[0].id;
    const first = similar.neighbours(dress, null, null, T0);
    expect(first.source).toBe('live');
    expect(idsOf(first.list).slice(0, 3)).toEqual(
      expect.arrayContaining([products[1].id, products[2].id, products[3].id]),
    );
    // a near twin of the dress arrives: only its own entry is dropped, the dress's list stands
    const twin = product('Linen summer dress', 'Dress', 41);
    catalog.putProduct(twin);
    const hourLater = similar.neighbours(dress, null, null, T0 + HOUR);
    expect(hourLater.source).toBe('precomputed');
    expect(idsOf(hourLater.list)).not.toContain(twin.id);
    const almostDay = similar.neighbours(dress, null, null, T0 + DAY - 1);
    expect(almostDay.source).toBe('precomputed');
    // a day old: recomputed on the request, with the twin first, and stored for the next day
    const nextDay = similar.neighbours(dress, null, null, T0 + DAY);
    expect(nextDay.source).toBe('live');
    expect(idsOf(nextDay.list)[0]).toBe(twin.id);
    expect(similar.precomputed.get(dress)?.at).toBe(T0 + DAY);
    expect(similar.neighbours(dress, null, null, T0 + DAY + 1).source).toBe('precomputed');
  });

  it('the background pass recomputes what is older than a day (hourly), and nothing younger', () => {
    const { catalog, products, similar } = store();
    expect(similar.precomputeSome(1_000, null, T0)).toBe(products.length);
    for (const p of products) expect(similar.precomputed.get(p.id)?.at).toBe(T0);
    // the pass is done: within the hour nothing runs; an hour later nothing is a day old yet
    expect(similar.precomputeSome(1_000, null, T0 + 60_000)).toBe(0);
    expect(similar.precomputeSome(1_000, null, T0 + 2 * HOUR)).toBe(0);
    // a request within the day is served the entry as it is
    expect(similar.neighbours(products[5].id, null, null, T0 + 20 * HOUR).source).toBe('precomputed');
    expect(similar.precomputed.get(products[5].id)?.at).toBe(T0);
    // one entry recomputed in between (its product changed, a request came) stays; the rest (a day old) are recomputed
    catalog.putProduct({ ...products[5], title: 'Linen shirt, short sleeves', updated_at: '2026-02-01T00:00:00Z' });
    expect(similar.neighbours(products[5].id, null, null, T0 + 20 * HOUR).source).toBe('live');
    expect(similar.precomputeSome(1_000, null, T0 + DAY + 3 * HOUR)).toBe(products.length - 1);
    for (const p of products)
      expect(similar.precomputed.get(p.id)?.at).toBe(p.id === products[5].id ? T0 + 20 * HOUR : T0 + DAY + 3 * HOUR);
  });

  it('the background pass takes changed products first, before the first full pass and after it', () => {
    const { catalog, products, similar } = store();
    // before any pass: the last product changes; a budget of one computes it first
    const last = products.at(-1) as ProductView;
    catalog.putProduct({ ...last, title: 'Enamel camping mug, speckled', updated_at: '2026-02-01T00:00:00Z' });
    expect(similar.precomputeSome(1, null, T0)).toBe(1);
    expect([...similar.precomputed.keys()]).toEqual([last.id]);
    // the rest of the first pass
    expect(similar.precomputeSome(1_000, null, T0 + 1)).toBe(products.length - 1);
    // after it: two changed products are recomputed at once (the hourly sweep is not due), the others kept
    const [a, b] = [products[1], products[4]];
    catalog.putProduct({ ...a, title: 'Linen midi dress, belted', updated_at: '2026-02-01T00:00:00Z' });
    catalog.putProduct({ ...b, title: 'Oxford cotton shirt, slim', updated_at: '2026-02-01T00:00:00Z' });
    expect(similar.precomputed.has(a.id)).toBe(false);
    expect(similar.precomputed.has(b.id)).toBe(false);
    expect(similar.precomputeSome(1, null, T0 + 60_000)).toBe(1);
    expect(similar.precomputeSome(1, null, T0 + 60_001)).toBe(1);
    expect(similar.precomputeSome(1, null, T0 + 60_002)).toBe(0);
    expect(similar.precomputed.get(a.id)?.at).toBeGreaterThanOrEqual(T0 + 60_000);
    expect(similar.precomputed.get(b.id)?.at).toBeGreaterThanOrEqual(T0 + 60_000);
    for (const p of products)
      if (p.id !== a.id && p.id !== b.id && p.id !== last.id) expect(similar.precomputed.get(p.id)?.at).toBe(T0 + 1);
    // a changed product a request already recomputed is not computed again by the pass
    catalog.putProduct({ ...a, title: 'Linen midi dress, tiered', updated_at: '2026-02-02T00:00:00Z' });
    expect(similar.neighbours(a.id, null, null, T0 + 70_000).source).toBe('live');
    expect(similar.precomputeSome(1_000, null, T0 + 80_000)).toBe(0);
  });
});

describe('similar products: catalog changes that leave a product as it compares', () => {
  it("keeps every list through stock and status changes, and drops a product's own on a price change", () => {
    const { catalog, products, similar } = store();
    expect(similar.precomputeSome(1_000, null, T0)).toBe(products.length);
    const variantOf = (p: ProductView) => p.variants[0].id;
    const variantList = similar.neighbours(products[0].id, variantOf(products[0]), null, T0).list;
    // every product sells out, and one is archived
    for (const [i, p] of products.entries())
      catalog.putProduct({
        ...p,
        available: false,
        status: i === 3 ? 'archived' : p.status,
        updated_at: '2026-02-01T00:00:00Z',
        variants: p.variants.map((v) => ({ ...v, available: false, inventory_quantity: 0 })),
      });
    // nothing to recompute: every list is served as precomputed, equal to a computation over the catalog now
    expect(similar.precomputeSome(1_000, null, T0 + 60_000)).toBe(0);
    const fresh = new StoreSimilar(catalog);
    for (const p of products) {
      const served = similar.neighbours(p.id, null, null, T0 + HOUR);
      expect(served.source).toBe('precomputed');
      expect(served.list).toEqual(fresh.compute(p.id, null, null));
    }
    expect(similar.neighbours(products[0].id, variantOf(products[0]), null, T0 + HOUR).list).toBe(variantList);
    // a price change is a change of what it compares by: its own list goes, and is the next to compute
    const cheaper = catalog.products.get(products[5].id)?.p as ProductView;
    catalog.putProduct({ ...cheaper, variants: cheaper.variants.map((v) => ({ ...v, price: '9.00' })) });
    expect(similar.precomputed.has(products[5].id)).toBe(false);
    expect(similar.precomputeSome(1_000, null, T0 + 2 * HOUR)).toBe(1);
    for (const p of products) if (p.id !== products[5].id) expect(similar.precomputed.get(p.id)?.at).toBe(T0);
  });
});

describe('similar products: image features', () => {
  it('a list computed before the product’s images were described is recomputed once they are; another product’s images leave it alone', async () => {
    const provider = imageFeatureProvider();
    const catalog = new StoreCatalog(`s-similar-img-${nextId}`);
    // the anchor and five dresses close to it in text; the look-alike (same picture) is the furthest in text
    const anchor = product('Linen summer dress', 'Dress', 40);
    const textual = [
      product('Linen summer dress, long', 'Dress', 40),
      product('Linen summer dress, short', 'Dress', 40),
      product('Summer dress in linen', 'Dress', 42),
      product('Linen dress for summer', 'Dress', 39),
    ];
    const lookAlike = product('Day dress', 'Dress', 40);
    const unrelated = product('Stoneware mug', 'Mug', 12);
    for (const p of [anchor, ...textual, lookAlike, unrelated]) catalog.putProduct(p);
    const similar = new StoreSimilar(catalog);
    const storeImages = new StoreImages(catalog.storeId);
    const images = imageSimilarityOf(storeImages, provider);
    const described = async (p: ProductView, spec: { type: string; color: string; pattern: number }) => {
      const f = await provider.extract(await renderImage(spec));
      storeImages.put('product', {
        item_type: 'product',
        item_id: p.id,
        model: f.model,
        image_srcs: [`https://cdn.example/${p.id}.png`],
        image_status: ['ok'],
        image_hashes: [f.hash],
        image_vectors: [Array.from(f.vector)],
      });
    };

    // nothing described yet: text and attributes only; the look-alike is behind the textual neighbours
    const before = similar.neighbours(anchor.id, null, images, T0);
    expect(before.source).toBe('live');
    expect(idsOf(before.list).indexOf(lookAlike.id)).toBeGreaterThanOrEqual(textual.length);
    expect(similar.precomputed.get(anchor.id)?.imaged).toBe(false);
    expect(similar.neighbours(anchor.id, null, images, T0 + 1).source).toBe('precomputed');
    // the background pass leaves it too while the anchor has no features
    expect(similar.precomputeSome(1_000, images, T0 + 2)).toBe(catalog.products.size - 1);
    expect(similar.precomputeSome(1_000, images, T0 + 2 * HOUR)).toBe(0);

    // the candidates are described first (the anchor's list does not depend on a store-wide version)
    await described(lookAlike, { type: 'dress', color: 'navy', pattern: 1 });
    for (const [i, p] of textual.entries()) await described(p, { type: 'dress', color: 'red', pattern: i % 4 });
    expect(similar.neighbours(anchor.id, null, images, T0 + 3 * HOUR).source).toBe('precomputed');

    // the anchor's image is described: its list is recomputed on the next request, the look-alike first
    await described(anchor, { type: 'dress', color: 'navy', pattern: 1 });
    const after = similar.neighbours(anchor.id, null, images, T0 + 4 * HOUR);
    expect(after.source).toBe('live');
    expect(idsOf(after.list)[0]).toBe(lookAlike.id);
    expect(similar.precomputed.get(anchor.id)?.imaged).toBe(true);
    expect(similar.neighbours(anchor.id, null, images, T0 + 4 * HOUR + 1).source).toBe('precomputed');

    // another product described later does not make the anchor's list stale
    await described(unrelated, { type: 'mug', color: 'white', pattern: 0 });
    expect(similar.neighbours(anchor.id, null, images, T0 + 5 * HOUR).source).toBe('precomputed');

    // the hourly sweep recomputes the lists computed before their product was described (the six others
    // now described), not the anchor's (current)
    expect(similar.precomputeSome(1_000, images, T0 + 6 * HOUR)).toBe(textual.length + 2);
    for (const p of [...textual, lookAlike, unrelated]) expect(similar.precomputed.get(p.id)?.imaged).toBe(true);
    expect(similar.precomputed.get(lookAlike.id)?.ids[0]).toBe(anchor.id);
    // a list served precomputed is the one computed now, scores included
    const served = similar.neighbours(lookAlike.id, null, images, T0 + 6 * HOUR + 1);
    expect(served.source).toBe('precomputed');
    expect(served.list).toEqual(similar.compute(lookAlike.id, null, images));
  });
});
