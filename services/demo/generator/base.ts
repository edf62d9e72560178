// The demo store's first section: every product's small description (type, material, colours, price,
// popularity rank, dates) in one pass, the trending burst's products, and what is visible on the
// storefront. Every later section is derived from this and from the seed.
import { Rng } from './prng.ts';
import { BURST_LINE, COLORS, LINES, PRODUCT_TYPES, type ProductTypeSpec, STYLES, VENDORS } from './vocab.ts';
import { type ResolvedDemoOptions, type ProductMeta, productIdOf, DAY, retail } from './model.ts';

export interface DemoBase {
  o: ResolvedDemoOptions;
  root: Rng;
  n: number;
  typeWeights: number[];
  popularity: number[];
  rankOf: Int32Array;
  burstType: ProductTypeSpec;
  burstIndexes: Set<number>;
  metas: ProductMeta[];
  sellable: (m: ProductMeta) => boolean;
  imageUrl: (typeSlug: string, colorSlug: string, pattern: number) => string;
  visible: number[];
  visibleByType: Map<ProductTypeSpec, number[]>;
}

export function demoBase(o: ResolvedDemoOptions): DemoBase {
  const root = new Rng(o.seed);
  const n = o.products;
  // --- product metas (one pass, small objects) ---------------------------------------------------
  const typeWeights = PRODUCT_TYPES.map((t) => t.weight);
  const popularity = root.fork('popularity').shuffle(Array.from({ length: n }, (_, i) => i));
  const rankOf = new Int32Array(n);
  popularity.forEach((productIndex, rank) => {
    rankOf[productIndex] = rank;
  });
  const ordinaryLines: readonly string[] = LINES.filter((l: string) => l !== BURST_LINE);
  // the products of the trending burst: a new line, a handful of recent products of one type
  const burstRng = root.fork('burst');
  const burstType = burstRng.pick(PRODUCT_TYPES.filter((t) => t.category === 'Apparel' || t.category === 'Footwear'));
  const burstCount = Math.max(3, Math.min(8, Math.round(n / 2000)));
  const burstIndexes = new Set(burstRng.sample(popularity.slice(Math.floor(n / 2)), burstCount));

  const metas: ProductMeta[] = new Array(n);
  const metaRng = root.fork('products');
  for (let i = 0; i < n; i++) {
    const burst = burstIndexes.has(i);
    const type = burst ? burstType : metaRng.weighted(PRODUCT_TYPES, typeWeights);
    const material = metaRng.pick(type.materials);
    const colorCount = type.category === 'Beauty' ? 1 : metaRng.weighted([1, 2, 3, 4], [5, 3, 2, 1]);
    const colors = metaRng.sample(COLORS, colorCount);
    const base = type.price[0] + (type.price[1] - type.price[0]) * metaRng.next() ** 1.6;
    const price = retail(base, metaRng);
    const onSale = metaRng.chance(0.12);
    const compareAt = onSale ? retail(price * (1.2 + metaRng.next() * 0.4), metaRng) : null;
    // creation: most of the catalog over two years, 5 % in the last two weeks; the burst line is new
    const ageDays = burst ? metaRng.next() * 3 : metaRng.chance(0.05) ? metaRng.next() * 14 : 14 + metaRng.next() * 716;
    const createdMs = Math.round(o.anchorMs - ageDays * DAY);
    const unpublished = !burst && metaRng.chance(0.015);
    const draft = !burst && !unpublished && metaRng.chance(0.01);
    metas[i] = {
      index: i,
      productId: productIdOf(i),
      type,
      material,
      colors,
      line: burst ? BURST_LINE : metaRng.pick(ordinaryLines),
      style: metaRng.pick(STYLES),
      vendor: metaRng.pick(VENDORS[type.category]),
      price,
      compareAt,
      popularityRank: rankOf[i],
      createdMs,
      publishedMs: unpublished || draft ? null : createdMs + Math.round(metaRng.next() * 3 * DAY),
      status: draft ? 'draft' : 'active',
      pattern: metaRng.int(0, 3),
    };
  }
  const sellable = (m: ProductMeta) => m.status === 'active' && m.publishedMs !== null;

  const imageUrl = (typeSlug: string, colorSlug: string, pattern: number) =>
    `${o.imageBaseUrl}/${typeSlug}-${colorSlug}-${pattern}.png`;

  const visible = metas.filter(sellable).map((m) => m.index);
  const visibleByType = new Map<ProductTypeSpec, number[]>(PRODUCT_TYPES.map((t) => [t, []]));
  for (const i of visible) visibleByType.get(metas[i].type)?.push(i);
  return {
    o,
    root,
    n,
    typeWeights,
    popularity,
    rankOf,
    burstType,
    burstIndexes,
    metas,
    sellable,
    imageUrl,
    visible,
    visibleByType,
  };
}
