// The synthetic store of bench/browse.ts: N products (4 variants over Size × Color, a Material option,
// vendors, product types, plain and `name:value` tags, metafields, prices, stock, 2 images) and 22
// collections of varied sizes (all products, 12 % of them, … down to 24), written into a migrated chDB
// database straight through the catalog processors (normalize → processor → insert → afterWrite, as the
// streams runtime would; no Kafka). Deterministic: the same N gives the same store.
import type { Db } from '../clickhouse/client.ts';
import type { CatalogCollection, CatalogProduct } from '../schemas/catalog.ts';
import { normalizeCollection, normalizeProduct } from '../services/catalog/normalize.ts';
import { catalogCollectionsProcessor, catalogProductsProcessor, type Change } from '../streams/catalog/index.ts';
import type { Decoded, ProcessContext } from '../streams/runtime/types.ts';

const SIZES = ['XS', 'S', 'M', 'L', 'XL', 'XXL'];
const COLORS = ['Black', 'White', 'Navy', 'Red', 'Green', 'Beige', 'Grey', 'Olive', 'Pink', 'Blue', 'Brown', 'Yellow'];
const MATERIALS = ['Cotton', 'Linen', 'Wool', 'Denim', 'Silk', 'Leather', 'Polyester', 'Cashmere'];
const TYPES = ['Tees', 'Shirts', 'Hoodies', 'Jeans', 'Dresses', 'Jackets', 'Skirts', 'Shorts', 'Sweaters', 'Coats'];
const ADJECTIVES = ['Classic', 'Relaxed', 'Slim', 'Oversized', 'Cropped', 'Vintage', 'Essential', 'Premium'];
const TAGS = ['new', 'sale', 'bestseller', 'organic', 'limited', 'basics', 'gift', 'eco', 'exclusive', 'online-only'];
const STYLES = ['casual', 'formal', 'sport', 'street', 'office'];
const SEASONS = ['summer', 'winter', 'spring', 'autumn'];
export const VENDOR_COUNT = 120;

/** a small deterministic PRNG (mulberry32) */
function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const BASE_MS = Date.parse('2026-01-01T00:00:00Z');

/** the platform payload (Shopify product JSON) of product `id`; `fresh` makes a changed version */
export function productPayload(id: number, fresh?: { title: string; updatedAt: string }) {
  const rnd = prng(id);
  const pick = <T>(a: readonly T[]) => a[Math.floor(rnd() * a.length)];
  const type = TYPES[id % TYPES.length];
  const material = pick(MATERIALS);
  // vendors skewed: a few large, many small
  const vendor = `Vendor ${Math.floor(rnd() ** 2 * VENDOR_COUNT)}`;
  const s0 = Math.floor(rnd() * (SIZES.length - 1));
  const sizes = [SIZES[s0], SIZES[s0 + 1]];
  const c0 = Math.floor(rnd() * COLORS.length);
  const colors = [COLORS[c0], COLORS[(c0 + 1 + Math.floor(rnd() * 3)) % COLORS.length]];
  const base = 9 + Math.floor(rnd() ** 1.5 * 240) + (rnd() < 0.5 ? 0.99 : 0.5);
  const tags = [pick(TAGS), pick(TAGS), `style:${pick(STYLES)}`, `season:${pick(SEASONS)}`, type.toLowerCase()];
  const created = BASE_MS + id * 60_000;
  const variants = sizes.flatMap((size, si) =>
    colors.map((color, ci) => {
      const v = si * 2 + ci;
      return {
        id: id * 10 + v,
        title: `${size} / ${color} / ${material}`,
        sku: `SKU-${id}-${v}`,
        price: (base + si * 2).toFixed(2),
        compare_at_price: id % 4 === 0 ? (base * 1.3).toFixed(2) : null,
        option1: size,
        option2: color,
        option3: material,
        position: v + 1,
        inventory_item_id: id * 10 + v,
        inventory_management: 'shopify',
        inventory_policy: 'deny',
        inventory_quantity: (id * 7 + v * 3) % 11,
      };
    }),
  );
  return {
    id,
    title:
      fresh?.title ?? `${pick(ADJECTIVES)} ${material.toLowerCase()} ${type.toLowerCase().replace(/s$/, '')} ${id}`,
    handle: `product-${id}`,
    body_html: `<p>A ${material.toLowerCase()} piece from ${vendor}, number ${id}.</p>`,
    vendor,
    product_type: type,
    tags: [...new Set(tags)].join(', '),
    status: 'active',
    created_at: new Date(created).toISOString(),
    published_at: new Date(created + 3_600_000).toISOString(),
    updated_at: fresh?.updatedAt ?? new Date(created + 86_400_000).toISOString(),
    options: [
      { name: 'Size', values: sizes },
      { name: 'Color', values: colors },
      { name: 'Material', values: [material] },
    ],
    variants,
    images: [0, 1].map((i) => ({
      id: id * 10 + i,
      src: `https://cdn.example.com/p/${id}/${i}.jpg`,
      alt: `view ${i + 1}`,
      width: 1200,
      height: 1500,
      position: i + 1,
    })),
    metafields: [
      { namespace: 'custom', key: 'material', value: material, type: 'single_line_text_field' },
      { namespace: 'custom', key: 'fit', value: pick(['regular', 'slim', 'loose']), type: 'single_line_text_field' },
      { namespace: 'custom', key: 'rating', value: (3 + rnd() * 2).toFixed(1), type: 'number_decimal' },
    ],
  };
}

export interface BenchCollection {
  id: number;
  handle: string;
  size: number;
}

/**
 * The collections: `all` (every product), `large` (12 % of N, 12 000 at N = 100 000), then shares
 * down to fixed small ones; `mid` is 2 % (2 000), `fresh` (24) is the freshness probe's collection.
 */
export function collectionsOf(n: number): BenchCollection[] {
  const shares: [string, number][] = [
    ['all', 1],
    ['large', 0.12],
    ['womens', 0.08],
    ['mens', 0.06],
    ['sale', 0.05],
    ['new-arrivals', 0.03],
    ['mid', 0.02],
    ['summer', 0.015],
    ['winter', 0.01],
    ['basics', 0.01],
    ['outerwear', 0.008],
    ['denim', 0.006],
    ['linen', 0.005],
    ['gifts', 0.004],
    ['eco', 0.003],
    ['limited', 0.002],
    ['staff-picks', 0.0015],
    ['collab', 0.001],
    ['under-20', 0.0008],
    ['lookbook', 0.0005],
  ];
  const out = shares.map(([handle, share], i) => ({
    id: i + 1,
    handle,
    size: Math.max(1, Math.min(n, Math.round(n * share))),
  }));
  out.push({ id: out.length + 1, handle: 'editors-choice', size: Math.min(n, 50) });
  out.push({ id: out.length + 1, handle: 'fresh', size: Math.min(n, 24) });
  return out;
}

/** the ordered member ids of a collection: a stride walk through 1..n (distinct), from a per-collection start */
export function membersOf(c: BenchCollection, n: number): string[] {
  if (c.size >= n) return Array.from({ length: n }, (_, i) => String(i + 1));
  const stride = 7919; // prime, coprime with any n that is not a multiple of it
  const start = (c.id * 104_729) % n;
  return Array.from({ length: c.size }, (_, j) => String(((start + j * stride) % n) + 1));
}

const now = () => new Date().toISOString();

export interface Writer {
  /**
   * normalize, project and insert products (one processor call and one insert per table), then the
   * processor's afterWrite (its agg:catalog notification); `writtenAt`: when the inserts returned
   * (performance.timeOrigin-based ms, comparable across processes)
   */
  products(payloads: unknown[]): Promise<{ writtenAt: number }>;
  collections(list: BenchCollection[], n: number): Promise<void>;
}

/** what the processors read of the runtime's context: `replay: true` publishes nothing */
export type WriterContext = Pick<ProcessContext, 'replay' | 'redis' | 'logger'>;

/**
 * Writes through the catalog processors with increasing offsets, as the runtime does: process, insert,
 * afterWrite. The default context is a replay's (no agg:catalog notification: the bulk build).
 */
export function catalogWriter(db: Db, storeId: string, ctx: Partial<WriterContext> = { replay: true }): Writer {
  let offset = 0n;
  const decoded = <R>(record: R): Decoded<Change<R>> => ({
    value: { op: 'upsert', record },
    position: { topic: 'bench', partition: 0, offset: offset++ },
    brokerTime: Date.now(),
  });
  return {
    async products(payloads) {
      const batch: Decoded<Change<CatalogProduct>>[] = payloads.map((raw) => {
        const r = normalizeProduct(storeId, raw, { source: 'import', now: now() });
        if (!r.ok) throw new Error(`invalid product: ${JSON.stringify(r.issues)}`);
        return decoded(r.value.product);
      });
      const res = await catalogProductsProcessor.process(batch, ctx as ProcessContext);
      for (const w of res.writes) if (w.rows.length) await db.insert(w.table, w.rows);
      const writtenAt = performance.timeOrigin + performance.now();
      await res.afterWrite?.();
      return { writtenAt };
    },
    async collections(list, n) {
      const batch: Decoded<Change<CatalogCollection>>[] = [];
      for (const c of list) {
        const r = normalizeCollection(
          storeId,
          { id: c.id, handle: c.handle, title: c.handle, published: true, product_ids: membersOf(c, n) },
          { source: 'import', now: now() },
        );
        if (!r.ok || !r.value.members) throw new Error(`invalid collection: ${JSON.stringify(r)}`);
        batch.push(decoded(r.value.collection), decoded(r.value.members));
      }
      const res = await catalogCollectionsProcessor.process(batch, ctx as ProcessContext);
      for (const w of res.writes) if (w.rows.length) await db.insert(w.table, w.rows);
      await res.afterWrite?.();
    },
  };
}

/** Build the whole store; `progress` is called after every batch. Returns seconds per part. */
export async function buildStore(
  db: Db,
  storeId: string,
  n: number,
  progress: (done: number, seconds: number) => void,
): Promise<{ productsSeconds: number; collectionsSeconds: number }> {
  const w = catalogWriter(db, storeId);
  const BATCH = 5_000;
  const t0 = performance.now();
  for (let start = 1; start <= n; start += BATCH) {
    const payloads = [];
    for (let id = start; id < Math.min(start + BATCH, n + 1); id++) payloads.push(productPayload(id));
    await w.products(payloads);
    progress(Math.min(n, start + BATCH - 1), (performance.now() - t0) / 1000);
  }
  const productsSeconds = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  await w.collections(collectionsOf(n), n);
  return { productsSeconds, collectionsSeconds: (performance.now() - t1) / 1000 };
}
