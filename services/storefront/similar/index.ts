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
/**
 * A precomputed list as two arrays side by side (the ids are the catalog's own strings). An object per
 * neighbour with a boxed score held ≈ 65 B a neighbour, ≈ 20 here with the list's own headers
 * (bench/memory.ts --heap-owners, 20 000 products, every list: 131 → 39 MB); ≈ 200 MB at 100 000 products.
 */
interface Precomputed {
  at: number;
  imaged: boolean;
  ids: string[];
  scores: Float64Array;
}

const packed = (at: number, imaged: boolean, list: readonly SimilarNeighbour[]): Precomputed => ({
  at,
  imaged,
  ids: list.map((n) => n.productId),
  scores: Float64Array.from(list, (n) => n.score),
});

const unpacked = (pre: Precomputed): SimilarNeighbour[] =>
  pre.ids.map((productId, i) => ({ productId, score: pre.scores[i] as number }));

/** precomputed neighbours per product */
export const SIMILAR_TOP = 100;
/** content candidates whose images are compared */
export const IMAGE_CANDIDATES = 300;
export const MAX_DF_SHARE = 0.2;
export const WEIGHTS = { text: 0.4, attributes: 0.1, image: 0.5 } as const;
/** image similarity sharpened: near-identical looks count, merely alike ones (same type, other colour) little */
export const IMAGE_SHARPNESS = 8;
const DAY_MS = 86_400_000;

export type Vector = Map<string, number>;

function termsOf(text: string, weight: number, into: Vector): void {
  for (const w of words(foldText(text)))
    if (isContentWord(w)) {
      const t = stem(w);
      into.set(t, (into.get(t) ?? 0) + weight);
    }
}

/** a product's raw term weights (exported for the reference computation of the tests) */
export function rawVector(item: IndexedProduct, extra: readonly string[] = []): Vector {
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

/**
 * Whether two records of a product have the same similarity: the same text (what rawVector reads), type,
 * vendor and lowest price (compute), and the same variant options and images (a variant's neighbours).
 * A stock, status or date change leaves every list that holds the product, and its own, as it was.
 */
function sameContent(a: IndexedProduct, b: IndexedProduct): boolean {
  const p = a.p;
  const q = b.p;
  if (p.title !== q.title || p.product_type !== q.product_type || p.vendor !== q.vendor) return false;
  if (p.body_html !== q.body_html || !sameList(p.tags, q.tags) || minPrice(a) !== minPrice(b)) return false;
  if (p.options.length !== q.options.length || p.options.some((o, i) => !sameList(o.values, q.options[i].values)))
    return false;
  if (
    p.images.length !== q.images.length ||
    p.images.some((im, i) => im.id !== q.images[i].id || im.src !== q.images[i].src)
  )
    return false;
  if (a.variants.length !== b.variants.length) return false;
  for (let i = 0; i < a.variants.length; i++) {
    const v = a.variants[i];
    const w = b.variants[i];
    if (v.id !== w.id || v.option1 !== w.option1 || v.option2 !== w.option2 || v.option3 !== w.option3) return false;
    if (v.image_id !== w.image_id) return false;
  }
  return true;
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

export const minPrice = (item: IndexedProduct): number | null => {
  let m: number | null = null;
  for (const v of item.variants) {
    const n = Number(v.price);
    if (Number.isFinite(n) && (m === null || n < m)) m = n;
  }
  return m;
};

/** `pb`: b's lowest price, NaN when it has none */
export function attributeScore(a: IndexedProduct, b: IndexedProduct, pa: number | null, pb: number): number {
  return attributeScoreOf(
    !!a.p.product_type && a.p.product_type === b.p.product_type,
    !!a.p.vendor && a.p.vendor === b.p.vendor,
    pa,
    pb,
  );
}

/** attributeScore from what it compares (the index compares interned codes instead of the records) */
function attributeScoreOf(sameType: boolean, sameVendor: boolean, pa: number | null, pb: number): number {
  let s = 0;
  if (sameType) s += 0.5;
  if (sameVendor) s += 0.2;
  if (pa !== null && !Number.isNaN(pb) && pa > 0 && pb > 0) s += 0.3 * Math.max(0, 1 - Math.abs(Math.log(pa / pb)));
  return s;
}

/** one term's postings: the products holding it (slots) and their raw weights, in no particular order */
interface Posting {
  term: string;
  n: number;
  slots: Int32Array;
  weights: Float64Array;
}

/**
 * A slot's raw term weights as its terms' postings and the weights side by side, in the order of its
 * `rawVector` (which the sums keep, so that scores are the plain computation's to the last bit). A Map
 * per product with its own term strings and boxed weights cost ≈ 4× as much.
 */
interface SlotVector {
  postings: Posting[];
  weights: Float64Array;
}

/** idf of a term held by `df` of `live` products */
const idfOf = (live: number, df: number): number => Math.log(1 + live / (1 + df));

function grown<T extends Int32Array | Float64Array>(a: T, size: number, fill?: number): T {
  if (a.length >= size) return a;
  const b = new (a.constructor as new (n: number) => T)(Math.max(size, a.length * 2));
  if (fill !== undefined) b.fill(fill, a.length);
  b.set(a);
  return b;
}

function swap(score: Float64Array, id: string[], a: number, b: number): void {
  const s = score[a];
  score[a] = score[b];
  score[b] = s;
  const i = id[a];
  id[a] = id[b];
  id[b] = i;
}

/** the better of two candidates: higher score, then lower id (the lists' order) */
const better = (sa: number, ia: string, sb: number, ib: string) => sa > sb || (sa === sb && ia < ib);

/**
 * One store's similarity state, kept in step with its catalog through the catalog listener.
 *
 * Products live in dense slots: postings are packed arrays of slots and weights, a computation accumulates
 * its dot products in one scratch array and keeps its best candidates in a bounded heap, so a product costs
 * a pass over its terms' postings and no per-candidate allocation (a Map per computation and a sort of
 * every candidate took 20-90 ms per product on a 20 000-product store). The lists are those of the plain
 * computation — cosine accumulated term by term in the same order, the same tie order — which
 * test/storefront/similar-index.test.ts holds it to.
 */
export class StoreSimilar {
  private readonly catalog: StoreCatalog;
  /** term → the products holding it */
  private readonly postings = new Map<string, Posting>();
  private readonly slotOf = new Map<string, number>();
  private idOf: string[] = [];
  /** a slot's catalog record as last put (sameContent compares the next one with it) */
  private readonly itemOf: (IndexedProduct | undefined)[] = [];
  private vectorOf: (SlotVector | undefined)[] = [];
  /** L2 norm of a slot's idf-weighted vector, NaN until first needed (computed with the idf of that time) */
  private normOf = new Float64Array(0);
  /** the lowest variant price of a slot, NaN when it has none */
  private priceOf = new Float64Array(0);
  /**
   * a slot's product type and vendor as codes (0: none). A computation compares every candidate's: read
   * through the product records, those were cache misses on scattered objects — 80 % of a computation's
   * time at 100 000 products.
   */
  private typeOf = new Int32Array(0);
  private vendorOf = new Int32Array(0);
  private readonly codes = new Map<string, number>();
  private readonly freeSlots: number[] = [];
  private live = 0;
  /** a computation's dot products by slot (all 0 between computations) */
  private dots = new Float64Array(0);
  private touched = new Int32Array(0);
  /** precomputed content neighbours: when, whether the product's image features took part, the list */
  readonly precomputed = new Map<string, Precomputed>();
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
    return this.live;
  }

  private put(item: IndexedProduct, changed = false): void {
    const had = this.slotOf.get(item.p.id);
    if (had !== undefined) {
      // a change of nothing its neighbours are computed from (stock, status): they stand, precomputed or cached
      const before = this.itemOf[had];
      if (before !== undefined && sameContent(before, item)) {
        this.itemOf[had] = item;
        return;
      }
      this.remove(item.p.id, false);
    }
    const v = rawVector(item);
    let slot = this.freeSlots.pop();
    if (slot === undefined) {
      slot = this.idOf.length;
      this.normOf = grown(this.normOf, slot + 1);
      this.priceOf = grown(this.priceOf, slot + 1);
      this.typeOf = grown(this.typeOf, slot + 1);
      this.vendorOf = grown(this.vendorOf, slot + 1);
      this.dots = grown(this.dots, slot + 1, 0);
      this.touched = grown(this.touched, slot + 1);
    }
    this.slotOf.set(item.p.id, slot);
    this.idOf[slot] = item.p.id;
    this.itemOf[slot] = item;
    this.normOf[slot] = Number.NaN;
    this.priceOf[slot] = minPrice(item) ?? Number.NaN;
    this.typeOf[slot] = this.code(item.p.product_type, true);
    this.vendorOf[slot] = this.code(item.p.vendor, true);
    this.live++;
    // exact-size arrays (push() leaves room for more: ≈ 130 B a product at 44 terms)
    const packed: SlotVector = { postings: new Array<Posting>(v.size), weights: new Float64Array(v.size) };
    let k = 0;
    for (const [t, w] of v) {
      let p = this.postings.get(t);
      if (!p) this.postings.set(t, (p = { term: t, n: 0, slots: new Int32Array(4), weights: new Float64Array(4) }));
      p.slots = grown(p.slots, p.n + 1);
      p.weights = grown(p.weights, p.n + 1);
      p.slots[p.n] = slot;
      p.weights[p.n] = w;
      p.n++;
      packed.postings[k] = p;
      packed.weights[k++] = w;
    }
    this.vectorOf[slot] = packed;
    if (changed) this.invalidate(item.p.id);
  }

  private remove(id: string, changed: boolean): void {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return;
    // a live slot's postings are the current ones: a posting leaves the map only when no slot holds it
    for (const p of (this.vectorOf[slot] as SlotVector).postings) {
      const at = p.slots.subarray(0, p.n).indexOf(slot);
      if (at < 0) continue;
      p.n--;
      p.slots[at] = p.slots[p.n];
      p.weights[at] = p.weights[p.n];
      if (p.n === 0) this.postings.delete(p.term);
    }
    this.slotOf.delete(id);
    this.vectorOf[slot] = undefined;
    this.itemOf[slot] = undefined;
    this.freeSlots.push(slot);
    this.live--;
    if (changed) this.invalidate(id);
  }

  private invalidate(id: string): void {
    this.precomputed.delete(id);
    this.dirty.add(id);
    for (const k of this.variantCache.keys()) if (k.startsWith(`${id}:`)) this.variantCache.delete(k);
    this.version++;
  }

  /** a string's code: 0 for '', -1 for one no slot has (when not adding) */
  private code(value: string, add = false): number {
    if (!value) return 0;
    let c = this.codes.get(value);
    if (c === undefined) {
      if (!add) return -1;
      this.codes.set(value, (c = this.codes.size + 1));
    }
    return c;
  }

  private norm(slot: number): number {
    let n = this.normOf[slot];
    if (Number.isNaN(n)) {
      let s = 0;
      const { postings, weights } = this.vectorOf[slot] as SlotVector;
      for (let i = 0; i < postings.length; i++)
        s += ((weights[i] as number) * idfOf(this.live, (postings[i] as Posting).n)) ** 2;
      n = Math.sqrt(s) || 1;
      this.normOf[slot] = n;
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
    const self = this.slotOf.get(productId) ?? -1;
    // the product's own vector, or a variant's (terms no product holds have no posting)
    let terms: (Posting | undefined)[];
    let tw: ArrayLike<number>;
    const own = !variant && self >= 0 ? this.vectorOf[self] : undefined;
    if (own) {
      terms = own.postings;
      tw = own.weights;
    } else {
      const v = rawVector(item, variant?.optionValues);
      terms = [...v.keys()].map((t) => this.postings.get(t));
      tw = [...v.values()];
    }
    const maxDf = Math.max(50, this.live * MAX_DF_SHARE);
    const { dots, touched } = this;
    let m = 0;
    let selfNorm = 0;
    for (let k = 0; k < terms.length; k++) {
      const p = terms[k];
      const w = tw[k] as number;
      const idf = idfOf(this.live, p?.n ?? 0);
      selfNorm += (w * idf) ** 2;
      if (!p || p.n > maxDf) continue;
      const q = w * idf * idf;
      const { slots, weights } = p;
      for (let i = 0; i < p.n; i++) {
        const s = slots[i];
        if (s === self) continue;
        if (dots[s] === 0) touched[m++] = s;
        dots[s] += q * weights[i];
      }
    }
    selfNorm = Math.sqrt(selfNorm) || 1;
    const pa = minPrice(item);
    const ta = this.code(item.p.product_type);
    const va = this.code(item.p.vendor);
    const { typeOf, vendorOf, priceOf } = this;
    // the best `keep` candidates (the image candidates, or the list) in a heap, worst at the root
    const keep = images ? Math.max(IMAGE_CANDIDATES, SIMILAR_TOP) : SIMILAR_TOP;
    const heapScore = new Float64Array(keep);
    const heapId: string[] = [];
    let h = 0;
    const siftDown = (at: number) => {
      for (;;) {
        const l = 2 * at + 1;
        if (l >= h) return;
        let worst = l;
        const r = l + 1;
        if (r < h && better(heapScore[l], heapId[l], heapScore[r], heapId[r])) worst = r;
        if (!better(heapScore[at], heapId[at], heapScore[worst], heapId[worst])) return;
        swap(heapScore, heapId, at, worst);
        at = worst;
      }
    };
    for (let k = 0; k < m; k++) {
      const s = touched[k];
      const dot = dots[s];
      dots[s] = 0;
      const text = dot / (selfNorm * this.norm(s));
      const attributes = attributeScoreOf(ta !== 0 && ta === typeOf[s], va !== 0 && va === vendorOf[s], pa, priceOf[s]);
      const score = WEIGHTS.text * text + WEIGHTS.attributes * attributes;
      if (!(score > 0)) continue;
      const id = this.idOf[s];
      if (h < keep) {
        // sift up: a worse entry moves towards the root
        let at = h++;
        heapScore[at] = score;
        heapId[at] = id;
        while (at > 0) {
          const up = (at - 1) >> 1;
          if (!better(heapScore[up], heapId[up], heapScore[at], heapId[at])) break;
          swap(heapScore, heapId, at, up);
          at = up;
        }
      } else if (better(score, id, heapScore[0], heapId[0])) {
        heapScore[0] = score;
        heapId[0] = id;
        siftDown(0);
      }
    }
    const out: SimilarNeighbour[] = [];
    for (let i = 0; i < h; i++) out.push({ productId: heapId[i], score: heapScore[i] });
    out.sort((a, b) => b.score - a.score || (a.productId < b.productId ? -1 : 1));
    // the images of the best content candidates: look-alikes rise, different-looking ones sink (a candidate
    // beyond them only ranks below every one of them, whose scores only rise)
    if (images) {
      const sims = images.scores(
        productId,
        variant?.imageSrc ?? null,
        out.map((n) => n.productId),
      );
      for (const n of out) n.score += WEIGHTS.image * (sims.get(n.productId) ?? 0) ** IMAGE_SHARPNESS;
      out.sort((a, b) => b.score - a.score || (a.productId < b.productId ? -1 : 1));
    }
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
    if (pre && this.current(pre, productId, images, now)) return { list: unpacked(pre), source: 'precomputed' };
    const list = this.compute(productId, null, images);
    this.precomputed.set(productId, packed(now, images?.has(productId) ?? false, list));
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
        this.precomputed.set(id, packed(now, images?.has(id) ?? false, this.compute(id, null, images)));
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
  /** the served stores, by id */
  protected readonly stores = new Map<string, { catalog: StoreCatalog; images: ImageSimilarity | null }>();
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

  /** products with precomputed neighbours, over the served stores */
  precomputed(): number {
    let n = 0;
    for (const s of this.stores.values()) n += similarOf(s.catalog).precomputed.size;
    return n;
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
