// Similar products: per store, each product's nearest neighbours by what it is (text and attributes),
// what it looks like (image features, through a pluggable provider) and what shoppers compared it with
// (co-views, blended in per request from the relations index, so behaviour moves results within seconds).
//
// Content neighbours are precomputed: a background pass walks every product of a loaded store at a low
// pace and keeps its top neighbours; a product's entry is dropped when the catalog changes it (and
// recomputed by the next pass or request), and every entry is recomputed daily. A product without an
// entry (new, changed, or not reached yet) is computed live on the request, with the same parameters and
// result — `_meta.similar.source` says which. A `variant_id` (blocks) always computes live, with the
// variant's option values and image, and is cached per variant.
//
// Text: TF-IDF over the analyzed terms (search/analyze.ts) of title, type, vendor, tags, option values and
// the description, field-weighted, L2-normalized; cosine through an inverted index (terms held by more
// than a fifth of the store are skipped: they say nothing about similarity). Attributes: same product
// type, same vendor, price proximity. The combined content score is what the precomputed lists hold.
import type { ImageFeatureProvider } from '../../common/image-features.ts';
import type { StoreImages } from '../images/index.ts';
import type { IndexedProduct, StoreCatalog } from '../results/catalog.ts';
import { foldText, htmlText, isContentWord, stem, words } from '../search/analyze.ts';

export interface SimilarNeighbour {
  productId: string;
  score: number;
}

/** image similarity between products (the image search index's features; a learned model in production) */
export interface ImageSimilarity {
  /** whether the product's images are described (the image signal applies to it) */
  has(productId: string): boolean;
  /** 0-1 similarity of each candidate's images to the product's lead image (or the given variant image) */
  scores(productId: string, imageSrc: string | null, candidates: readonly string[]): Map<string, number>;
}

/** The ImageSimilarity of a store's image index (services/storefront/images). */
export function imageSimilarityOf(images: StoreImages, provider: ImageFeatureProvider): ImageSimilarity {
  return {
    has: (productId) => (images.items.product.get(productId)?.features ?? []).some((f) => f !== null),
    scores(productId, imageSrc, candidates) {
      const out = new Map<string, number>();
      const own = images.items.product.get(productId);
      if (!own) return out;
      const at = imageSrc ? own.srcs.indexOf(imageSrc) : -1;
      const query = (at >= 0 ? own.features[at] : null) ?? own.features.find((f) => f !== null) ?? null;
      if (!query) return out;
      for (const id of candidates) {
        let best = 0;
        for (const f of images.items.product.get(id)?.features ?? [])
          if (f && f.model === query.model) best = Math.max(best, provider.similarity(query, f));
        if (best > 0) out.set(id, best);
      }
      return out;
    },
  };
}

const FIELD_WEIGHT = { title: 3, type: 2, vendor: 1.5, tags: 1.5, options: 1, description: 0.3 } as const;
/** precomputed neighbours per product */
export const SIMILAR_TOP = 100;
/** content candidates whose images are compared */
const IMAGE_CANDIDATES = 300;
const MAX_DF_SHARE = 0.2;
const WEIGHTS = { text: 0.4, attributes: 0.1, image: 0.5 } as const;
/** image similarity sharpened: near-identical looks count, merely alike ones (same type, other colour) little */
const IMAGE_SHARPNESS = 8;
const DAY_MS = 86_400_000;

type Vector = Map<string, number>;

function termsOf(text: string, weight: number, into: Vector): void {
  for (const w of words(foldText(text)))
    if (isContentWord(w)) {
      const t = stem(w);
      into.set(t, (into.get(t) ?? 0) + weight);
    }
}

function rawVector(item: IndexedProduct, extra: readonly string[] = []): Vector {
  const p = item.p;
  const v: Vector = new Map();
  termsOf(p.title, FIELD_WEIGHT.title, v);
  termsOf(p.product_type, FIELD_WEIGHT.type, v);
  termsOf(p.vendor, FIELD_WEIGHT.vendor, v);
  termsOf(p.tags.join(' '), FIELD_WEIGHT.tags, v);
  termsOf(p.options.flatMap((o) => o.values).join(' '), FIELD_WEIGHT.options, v);
  termsOf(htmlText(p.body_html).slice(0, 2_000), FIELD_WEIGHT.description, v);
  // a variant's own option values weigh like the title
  for (const x of extra) termsOf(x, FIELD_WEIGHT.title, v);
  return v;
}

const minPrice = (item: IndexedProduct): number | null => {
  let m: number | null = null;
  for (const v of item.variants) {
    const n = Number(v.price);
    if (Number.isFinite(n) && (m === null || n < m)) m = n;
  }
  return m;
};

function attributeScore(a: IndexedProduct, b: IndexedProduct, pa: number | null): number {
  let s = 0;
  if (a.p.product_type && a.p.product_type === b.p.product_type) s += 0.5;
  if (a.p.vendor && a.p.vendor === b.p.vendor) s += 0.2;
  const pb = minPrice(b);
  if (pa !== null && pb !== null && pa > 0 && pb > 0) s += 0.3 * Math.max(0, 1 - Math.abs(Math.log(pa / pb)));
  return s;
}

/** One store's similarity state, kept in step with its catalog through the catalog listener. */
export class StoreSimilar {
  private readonly catalog: StoreCatalog;
  /** term → product id → raw weight */
  private readonly postings = new Map<string, Map<string, number>>();
  private readonly vectors = new Map<string, Vector>();
  private readonly norms = new Map<string, number>();
  /** precomputed content neighbours: when, and whether the product's image features took part */
  readonly precomputed = new Map<string, { at: number; imaged: boolean; list: SimilarNeighbour[] }>();
  /** per-variant live results (variant_id requests) */
  private readonly variantCache = new Map<string, SimilarNeighbour[]>();
  /** products to (re)compute first: changed ones (before and after the first full pass) */
  private readonly dirty = new Set<string>();
  private cursor: Iterator<string> | null = null;
  private passDone = false;
  private lastSweep = 0;
  /** bumped whenever a product changes (cache keys) */
  version = 0;

  constructor(catalog: StoreCatalog) {
    this.catalog = catalog;
    for (const item of catalog.products.values()) this.put(item);
    catalog.listeners.add({ put: (item) => this.put(item, true), remove: (id) => this.remove(id, true) });
  }

  get size(): number {
    return this.vectors.size;
  }

  private idf(term: string): number {
    const df = this.postings.get(term)?.size ?? 0;
    return Math.log(1 + this.vectors.size / (1 + df));
  }

  private put(item: IndexedProduct, changed = false): void {
    if (this.vectors.has(item.p.id)) this.remove(item.p.id, false);
    const v = rawVector(item);
    this.vectors.set(item.p.id, v);
    for (const [t, w] of v) {
      let list = this.postings.get(t);
      if (!list) this.postings.set(t, (list = new Map()));
      list.set(item.p.id, w);
    }
    this.norms.delete(item.p.id);
    if (changed) this.invalidate(item.p.id);
  }

  private remove(id: string, changed: boolean): void {
    const v = this.vectors.get(id);
    if (!v) return;
    for (const t of v.keys()) {
      const list = this.postings.get(t);
      list?.delete(id);
      if (list?.size === 0) this.postings.delete(t);
    }
    this.vectors.delete(id);
    this.norms.delete(id);
    if (changed) this.invalidate(id);
  }

  private invalidate(id: string): void {
    this.precomputed.delete(id);
    this.dirty.add(id);
    for (const k of this.variantCache.keys()) if (k.startsWith(`${id}:`)) this.variantCache.delete(k);
    this.version++;
  }

  private norm(id: string, v: Vector): number {
    let n = this.norms.get(id);
    if (n === undefined) {
      let s = 0;
      for (const [t, w] of v) s += (w * this.idf(t)) ** 2;
      n = Math.sqrt(s) || 1;
      this.norms.set(id, n);
    }
    return n;
  }

  /** content neighbours of a product (and optionally one of its variants), computed now */
  compute(
    productId: string,
    variant: { optionValues: string[]; imageSrc: string | null } | null,
    images: ImageSimilarity | null,
  ): SimilarNeighbour[] {
    const item = this.catalog.products.get(productId);
    if (!item) return [];
    const v = variant ? rawVector(item, variant.optionValues) : (this.vectors.get(productId) ?? rawVector(item));
    const maxDf = Math.max(50, this.vectors.size * MAX_DF_SHARE);
    const dots = new Map<string, number>();
    let selfNorm = 0;
    for (const [t, w] of v) {
      const idf = this.idf(t);
      selfNorm += (w * idf) ** 2;
      const list = this.postings.get(t);
      if (!list || list.size > maxDf) continue;
      const q = w * idf * idf;
      for (const [id, wb] of list) if (id !== productId) dots.set(id, (dots.get(id) ?? 0) + q * wb);
    }
    selfNorm = Math.sqrt(selfNorm) || 1;
    const pa = minPrice(item);
    const out: SimilarNeighbour[] = [];
    for (const [id, dot] of dots) {
      const other = this.catalog.products.get(id);
      const vb = this.vectors.get(id);
      if (!other || !vb) continue;
      const text = dot / (selfNorm * this.norm(id, vb));
      const score = WEIGHTS.text * text + WEIGHTS.attributes * attributeScore(item, other, pa);
      if (score > 0) out.push({ productId: id, score });
    }
    out.sort((a, b) => b.score - a.score || (a.productId < b.productId ? -1 : 1));
    // the images of the best content candidates: look-alikes rise, different-looking ones sink
    if (images) {
      const head = out.slice(0, IMAGE_CANDIDATES);
      const sims = images.scores(
        productId,
        variant?.imageSrc ?? null,
        head.map((n) => n.productId),
      );
      for (const n of head) n.score += WEIGHTS.image * (sims.get(n.productId) ?? 0) ** IMAGE_SHARPNESS;
    }
    out.sort((a, b) => b.score - a.score || (a.productId < b.productId ? -1 : 1));
    return out.slice(0, SIMILAR_TOP);
  }

  /** the neighbours served: precomputed when present (and not older than a day), else computed live */
  neighbours(
    productId: string,
    variantId: string | null,
    images: ImageSimilarity | null,
    now = Date.now(),
  ): { list: SimilarNeighbour[]; source: 'precomputed' | 'live' } {
    const item = this.catalog.products.get(productId);
    if (variantId && item) {
      const variant = item.variants.find((x) => x.id === variantId);
      if (variant) {
        const key = `${productId}:${variantId}`;
        let list = this.variantCache.get(key);
        if (!list) {
          const optionValues = [variant.option1, variant.option2, variant.option3].filter((x): x is string => !!x);
          const imageSrc = variant.image_id
            ? (item.p.images.find((im) => im.id === variant.image_id)?.src ?? null)
            : null;
          list = this.compute(productId, { optionValues, imageSrc }, images);
          if (this.variantCache.size > 10_000) this.variantCache.clear();
          this.variantCache.set(key, list);
        }
        return { list, source: 'live' };
      }
    }
    const pre = this.precomputed.get(productId);
    if (pre && this.current(pre, productId, images, now)) return { list: pre.list, source: 'precomputed' };
    const list = this.compute(productId, null, images);
    this.precomputed.set(productId, { at: now, imaged: images?.has(productId) ?? false, list });
    return { list, source: 'live' };
  }

  /** an entry is current for a day, unless it was computed before the product's images were described */
  private current(
    pre: { at: number; imaged: boolean },
    productId: string,
    images: ImageSimilarity | null,
    now: number,
  ): boolean {
    return now - pre.at < DAY_MS && (pre.imaged || !images?.has(productId));
  }

  /**
   * The background pass: precompute up to `budget` products — changed ones first, then the first full
   * pass over the catalog, then (hourly) whatever is older than a day. Returns how many were computed.
   */
  precomputeSome(budget: number, images: ImageSimilarity | null, now = Date.now()): number {
    let done = 0;
    const compute = (id: string) => {
      if (this.catalog.products.has(id)) {
        this.precomputed.set(id, { at: now, imaged: images?.has(id) ?? false, list: this.compute(id, null, images) });
        done++;
      }
    };
    for (const id of this.dirty) {
      if (done >= budget) return done;
      this.dirty.delete(id);
      if (!this.precomputed.has(id)) compute(id);
    }
    if (this.passDone && now - this.lastSweep < 3_600_000) return done;
    if (!this.cursor) this.cursor = this.catalog.products.keys();
    while (done < budget) {
      const next = this.cursor.next();
      if (next.done) {
        this.cursor = null;
        this.passDone = true;
        this.lastSweep = now;
        break;
      }
      const pre = this.precomputed.get(next.value);
      if (!pre || !this.current(pre, next.value, images, now)) compute(next.value);
    }
    return done;
  }
}

const built = new WeakMap<StoreCatalog, StoreSimilar>();

/** The similarity state of a store's catalog (built on first use, then kept in step with the catalog). */
export function similarOf(catalog: StoreCatalog): StoreSimilar {
  let s = built.get(catalog);
  if (!s) {
    s = new StoreSimilar(catalog);
    built.set(catalog, s);
  }
  return s;
}

/**
 * The background precompute: every `intervalMs`, up to `batch` products of the stores asked for so far
 * (a low, steady pace that leaves the request path alone).
 */
export class SimilarPrecompute {
  private readonly stores = new Map<string, { catalog: StoreCatalog; images: ImageSimilarity | null }>();
  private timer: NodeJS.Timeout | null = null;

  constructor(opts: { intervalMs?: number; batch?: number } = {}) {
    const batch = opts.batch ?? 25;
    this.timer = setInterval(() => {
      for (const s of this.stores.values()) if (similarOf(s.catalog).precomputeSome(batch, s.images) > 0) return;
    }, opts.intervalMs ?? 100);
    this.timer.unref();
  }

  /** a served store (its current catalog and image similarity) */
  track(catalog: StoreCatalog, images: ImageSimilarity | null): void {
    this.stores.set(catalog.storeId, { catalog, images });
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
