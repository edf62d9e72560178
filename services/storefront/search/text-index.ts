// The per-store keyword index of search: an inverted index over the products of the store's in-process
// catalog (results/catalog.ts), analyzed by analyze.ts, scored with BM25+ and per-field weights. Built
// on a store's first search and kept in step with the catalog through its product listener, so a catalog
// change reaches search in the same synchronous swap that browse sees.
//
// Why not a library: MiniSearch, Orama, FlexSearch and ClickHouse's text index were measured on the demo
// catalog (bench/search-libraries.ts, docs/decisions.md "Search: the keyword index"). MiniSearch ranks
// best but scores every product containing any query term before combining (a common word such as a
// colour is in thousands of products): 27 ms p50 / 68 ms p99 per query at 100 000 products. This index
// marks, per query term, the products holding it (typed-array passes over the postings), keeps the
// products holding every term, and scores only those: the same BM25+ ranking for a fraction of the work.
//
// Layout: products get ordinals in insertion order; per (stem, field) a postings list of ordinals
// (ascending) with term frequencies. A removed or replaced product's ordinal is marked dead and skipped;
// postings are compacted once dead entries outnumber a quarter of the live products.
//
// Alongside, the vocabulary of surface words (folded, unstemmed) with their document frequencies: the
// candidates of spelling correction (understand.ts), and the stems the fuzzy and prefix expansions use.
import type { IndexedProduct, StoreCatalog } from '../results/catalog.ts';
import { editDistance, foldText, htmlText, isContentWord, stem, words } from './analyze.ts';

/** per-field weights of keyword relevance */
export const FIELD_WEIGHTS = {
  title: 3,
  product_type: 2,
  vendor: 1.5,
  tags: 1.5,
  options: 1,
  description: 0.5,
} as const;
type Field = keyof typeof FIELD_WEIGHTS;
export const FIELDS = Object.keys(FIELD_WEIGHTS) as Field[];
const WEIGHTS = FIELDS.map((f) => FIELD_WEIGHTS[f]);

/** one product's text by field, as the index holds it (and its catalog record, handed back with its hits) */
export type Doc = { id: string; item?: IndexedProduct } & Record<Field, string>;

/** docs made by `docOf`, whose text is their record's (the index re-derives it instead of keeping it) */
const FROM_RECORD = new WeakSet<Doc>();

export function docOf(item: IndexedProduct): Doc {
  const p = item.p;
  const d: Doc = {
    id: p.id,
    item,
    title: p.title,
    product_type: p.product_type,
    vendor: p.vendor,
    tags: p.tags.join(' '),
    options: p.options.flatMap((o) => o.values).join(' '),
    description: htmlText(p.body_html),
  };
  FROM_RECORD.add(d);
  return d;
}

function sameText(a: Doc, b: Doc): boolean {
  for (const f of FIELDS) if (a[f] !== b[f]) return false;
  return true;
}

/** BM25+ parameters (as MiniSearch's defaults) and the weights of fuzzy and prefix expansions */
const K1 = 1.2;
const B = 0.7;
const DELTA = 0.5;
const FUZZY_WEIGHT = 0.4;
const PREFIX_WEIGHT = 0.5;
/** below this many products matching every query term, search also takes those missing one term */
export const MIN_FULL_MATCHES = 50;

export interface KeywordHit {
  id: string;
  /** BM25+ score with field boosts */
  score: number;
  /** distinct query terms the product matched (exactly, by prefix or fuzzily) */
  matched: number;
  /** the product's catalog record, when its doc carried one (docOf): no lookup by id per hit */
  item: IndexedProduct | undefined;
}

/**
 * A search's hits as columns (`searchColumns`): entry i is the product at ordinal `ords[i]` with its score
 * and matched terms. The arrays are the index's own, valid until its next search.
 */
export interface KeywordColumns {
  n: number;
  ords: Int32Array;
  scores: Float64Array;
  matched: Uint8Array;
  /** distinct query terms */
  terms: number;
}

interface Postings {
  docs: number[];
  tfs: number[];
  /** live products in `docs` (the field's document frequency) */
  live: number;
  /**
   * remembered BM25 term components of the first `compN` postings (`component()`), valid while the field's
   * length normalizer is still `compNorm`; null when not remembered
   */
  comp: Float64Array | null;
  compNorm: number;
  compN: number;
}

/** BM25's term-frequency component: the same expression whether remembered or computed in the loop */
const component = (tf: number, norm: number, normLen: number, length: number) =>
  (tf * (K1 + 1)) / (tf + norm + normLen * length);

/** postings lists shorter than this are scored without remembered components (default) */
const COMPONENTS_MIN_POSTINGS = 64;
/** remembered components at most, over all lists (8 B each; all are forgotten when it is reached) */
const COMPONENTS_MAX = 4_000_000;

export class ProductTextIndex {
  /** ordinal → product id ('' once dead) */
  private readonly ids: string[] = [];
  /** ordinal → its doc's catalog record */
  private readonly items: (IndexedProduct | undefined)[] = [];
  /**
   * ordinal → 1 while live: what the scoring loop tests (reading `ids[d]` there loaded a string per posting,
   * a quarter of the loop's time at 100 000 products); grown by doubling
   */
  private alive = new Uint8Array(1024);
  private readonly ordinalOf = new Map<string, number>();
  /** per field: ordinal → its number of terms */
  private readonly lengths: number[][] = FIELDS.map(() => []);
  private readonly totalLength = FIELDS.map(() => 0);
  /** stem → per field postings */
  private readonly postings = new Map<string, (Postings | undefined)[]>();
  /**
   * ordinal → its text, only for a doc whose text is not its catalog record's (no record, or a text of its
   * own): a removal analyzes the text again to take back what `add` counted, and every other doc's text is
   * its record's (`docOf`), still held in `items` until then. Keeping what each doc added instead (its
   * stems by field and its words, as small integers) was the index's largest part after the postings:
   * ≈ 0.6 KB a product, 61 MB at 100 000 demo products (docs/decisions.md).
   */
  private readonly ownText = new Map<number, Doc>();
  /** surface word → live products containing it */
  private readonly vocab = new Map<string, number>();
  /** stem → live products containing it (any field) */
  private readonly stems = new Map<string, number>();
  private dead = 0;
  // per-search scratch, sized to the ordinals: `seen` (the search's epoch: count and score are valid),
  // `mark` (the term's epoch: the term was counted); epochs only grow, so nothing is cleared per search
  private seen = new Uint32Array(0);
  private mark = new Uint32Array(0);
  /** the epoch of a search that keeps only the products holding its rarest term */
  private allow = new Uint32Array(0);
  private count = new Uint8Array(0);
  private score = new Float64Array(0);
  private epoch = 0;
  /** searchColumns' answer, reused */
  private readonly columns: KeywordColumns = {
    n: 0,
    ords: new Int32Array(0),
    scores: new Float64Array(0),
    matched: new Uint8Array(0),
    terms: 0,
  };

  /** the postings lists holding remembered components, and how many they hold */
  private readonly remembered = new Set<Postings>();
  private rememberedCount = 0;
  private readonly componentsMin: number;
  private readonly componentsMax: number;

  constructor(docs: Iterable<Doc> = [], opts: { componentsMinPostings?: number; componentsMax?: number } = {}) {
    this.componentsMin = opts.componentsMinPostings ?? COMPONENTS_MIN_POSTINGS;
    this.componentsMax = opts.componentsMax ?? COMPONENTS_MAX;
    for (const d of docs) this.add(d);
  }

  /**
   * The BM25 term components of a postings list under the field's current length normalizer, remembered
   * across searches: a search scores each posting with the same expression, so the numbers are the same
   * bit for bit. The normalizer depends only on the field's live products and total length, so re-adding
   * a product with the same text (an inventory or price change re-puts it) keeps it; only the postings
   * appended since are computed. Null for a short list (scored in the loop).
   */
  private components(p: Postings, lengths: number[], norm: number, normLen: number): Float64Array | null {
    const n = p.docs.length;
    if (n < this.componentsMin) return null;
    if (p.comp !== null && p.compNorm === normLen && p.compN === n) return p.comp;
    let from = p.comp !== null && p.compNorm === normLen ? p.compN : 0;
    if (p.comp === null || p.comp.length < n) {
      const size = Math.max(n, Math.ceil((p.comp?.length ?? 0) * 1.5));
      if (this.rememberedCount + size - (p.comp?.length ?? 0) > this.componentsMax) {
        this.forgetComponents();
        from = 0;
      }
      const grown = new Float64Array(size);
      if (p.comp !== null && from > 0) grown.set(p.comp.subarray(0, from));
      this.rememberedCount += size - (p.comp?.length ?? 0);
      p.comp = grown;
      this.remembered.add(p);
    }
    const comp = p.comp;
    for (let i = from; i < n; i++) comp[i] = component(p.tfs[i], norm, normLen, lengths[p.docs[i]]);
    p.compNorm = normLen;
    p.compN = n;
    return comp;
  }

  private forgetComponents(): void {
    for (const p of this.remembered) {
      p.comp = null;
      p.compN = 0;
    }
    this.remembered.clear();
    this.rememberedCount = 0;
  }

  /** docs whose text the index keeps itself (not their catalog record's) */
  get keptTexts(): number {
    return this.ownText.size;
  }

  /** live products */
  get size(): number {
    return this.ordinalOf.size;
  }

  /**
   * A product as the catalog now holds it. With the same text as before (a price, stock or status change:
   * most catalog changes) it keeps its ordinal and only its record is replaced; else it is indexed anew.
   * Re-adding it would take a new ordinal each time, and the per-ordinal arrays never shrink: a store
   * whose stock changes all day would grow them without bound.
   */
  put(item: IndexedProduct): void {
    const doc = docOf(item);
    const ord = this.ordinalOf.get(item.p.id);
    const old = ord === undefined ? undefined : this.items[ord];
    if (ord !== undefined && old !== undefined && sameText(docOf(old), doc)) {
      this.items[ord] = item;
      return;
    }
    this.remove(item.p.id);
    this.add(doc);
  }

  add(d: Doc): void {
    const ord = this.ids.length;
    this.ids.push(d.id);
    this.items.push(d.item);
    if (d.item === undefined || !FROM_RECORD.has(d)) this.ownText.set(ord, d);
    if (ord >= this.alive.length) {
      const grown = new Uint8Array(this.alive.length * 2);
      grown.set(this.alive);
      this.alive = grown;
    }
    this.alive[ord] = 1;
    this.ordinalOf.set(d.id, ord);
    const a = analyzed(d);
    for (let fi = 0; fi < FIELDS.length; fi++) {
      this.lengths[fi][ord] = a.lengths[fi];
      this.totalLength[fi] += a.lengths[fi];
      for (const [s, c] of a.tf[fi]) {
        let perField = this.postings.get(s);
        if (!perField) this.postings.set(s, (perField = new Array(FIELDS.length)));
        let p = perField[fi];
        if (!p) perField[fi] = p = { docs: [], tfs: [], live: 0, comp: null, compNorm: 0, compN: 0 };
        p.docs.push(ord);
        p.tfs.push(c);
        p.live++;
      }
    }
    for (const s of a.stems) this.stems.set(s, (this.stems.get(s) ?? 0) + 1);
    for (const w of a.words) this.vocab.set(w, (this.vocab.get(w) ?? 0) + 1);
  }

  remove(id: string): void {
    const ord = this.ordinalOf.get(id);
    if (ord === undefined) return;
    const text = this.ownText.get(ord) ?? docOf(this.items[ord] as IndexedProduct);
    this.ordinalOf.delete(id);
    this.ownText.delete(ord);
    this.ids[ord] = '';
    this.items[ord] = undefined;
    this.alive[ord] = 0;
    this.dead++;
    const a = analyzed(text);
    for (let fi = 0; fi < FIELDS.length; fi++) {
      for (const s of a.tf[fi].keys()) {
        const p = this.postings.get(s)?.[fi];
        if (p) p.live--;
      }
      this.totalLength[fi] -= this.lengths[fi][ord] ?? 0;
    }
    for (const s of a.stems) decrement(this.stems, s);
    for (const w of a.words) decrement(this.vocab, w);
    if (this.dead > 1_000 && this.dead > this.ordinalOf.size / 4) this.compact();
  }

  /** drop dead ordinals from every postings list (ordinals are kept, so nothing else moves) */
  private compact(): void {
    // the lists are rebuilt: what they remembered goes with them
    this.forgetComponents();
    for (const [s, perField] of this.postings) {
      let any = false;
      for (let fi = 0; fi < perField.length; fi++) {
        const p = perField[fi];
        if (!p) continue;
        if (p.live === 0) {
          perField[fi] = undefined;
          continue;
        }
        any = true;
        if (p.live === p.docs.length) continue;
        const docs: number[] = [];
        const tfs: number[] = [];
        for (let i = 0; i < p.docs.length; i++)
          if (this.alive[p.docs[i]] === 1) {
            docs.push(p.docs[i]);
            tfs.push(p.tfs[i]);
          }
        perField[fi] = { docs, tfs, live: docs.length, comp: null, compNorm: 0, compN: 0 };
      }
      if (!any) this.postings.delete(s);
    }
    this.dead = 0;
  }

  /** products containing a word (in any inflection: compared by stem) */
  frequency(word: string): number {
    return this.stems.get(stem(word)) ?? 0;
  }

  /**
   * The closest catalog word to an unknown one: edit distance ≤ 1 (≤ 2 from 8 letters), the most frequent
   * among the closest; null when none is close.
   */
  correct(word: string): string | null {
    if (word.length < 4 || this.frequency(word) > 0) return null;
    const max = word.length >= 8 ? 2 : 1;
    let best: string | null = null;
    let bestD = max + 1;
    let bestF = 0;
    for (const [w, f] of this.vocab) {
      if (Math.abs(w.length - word.length) > max || w.length < 3) continue;
      const d = editDistance(word, w, Math.min(max, bestD));
      if (d < bestD || (d === bestD && f > bestF)) {
        best = w;
        bestD = d;
        bestF = f;
      }
    }
    return bestD <= max ? best : null;
  }

  /** the stems a query term stands for: itself when the index holds it, else its typo and prefix matches */
  private alternatives(term: string, last: boolean, prefix: boolean): { stem: string; weight: number }[] {
    if (this.stems.has(term)) return [{ stem: term, weight: 1 }];
    const out: { stem: string; weight: number }[] = [];
    const fuzzy = term.length >= 5;
    const byPrefix = prefix && last && term.length >= 3;
    if (!fuzzy && !byPrefix) return out;
    for (const s of this.stems.keys()) {
      if (byPrefix && s.startsWith(term)) out.push({ stem: s, weight: PREFIX_WEIGHT });
      else if (fuzzy && Math.abs(s.length - term.length) <= 1 && editDistance(term, s, 1) <= 1)
        out.push({ stem: s, weight: FUZZY_WEIGHT });
    }
    return out;
  }

  /**
   * Products matching the query, with BM25+ scores and how many distinct query terms each matched: those
   * matching every term, and with `partial` also those missing one term (any term, for a one- or two-word
   * query). `prefix`: the last term also matches as a prefix (a query typed so far). Fuzzy (one edit,
   * words of 5+ letters) and prefix matching apply to terms the index does not hold as they are.
   */
  search(query: string, opts: { prefix: boolean; partial?: boolean }): { hits: KeywordHit[]; terms: number } {
    const c = this.searchColumns(query, opts);
    const hits: KeywordHit[] = [];
    for (let i = 0; i < c.n; i++) {
      const d = c.ords[i];
      hits.push({ id: this.ids[d], score: c.scores[i], matched: c.matched[i], item: this.items[d] });
    }
    return { hits, terms: c.terms };
  }

  /** the live product at an ordinal of `searchColumns` ('' once dead) and its catalog record */
  idAt(ord: number): string {
    return this.ids[ord];
  }

  itemAt(ord: number): IndexedProduct | undefined {
    return this.items[ord];
  }

  /** a live product's ordinal */
  ordinal(id: string): number | undefined {
    return this.ordinalOf.get(id);
  }

  /** ordinals handed out so far (every ordinal is below it) */
  get ordinals(): number {
    return this.ids.length;
  }

  /**
   * `search` as columns, without an object per hit (a computed search at 100 000 products builds a few
   * thousand hits): the same hits, scores and order.
   */
  searchColumns(query: string, opts: { prefix: boolean; partial?: boolean }): KeywordColumns {
    const queryTerms = [...new Set(words(foldText(query)).filter(isContentWord).map(stem))];
    const out = this.columns;
    out.n = 0;
    out.terms = queryTerms.length;
    if (queryTerms.length === 0) return out;
    const n = this.ids.length;
    if (this.mark.length < n || this.epoch > 0xfffffff0) {
      const size = Math.max(1024, n * 2);
      this.seen = new Uint32Array(size);
      this.mark = new Uint32Array(size);
      this.allow = new Uint32Array(size);
      this.count = new Uint8Array(size);
      this.score = new Float64Array(size);
      this.epoch = 0;
    }
    const live = this.ordinalOf.size || 1;
    const touched: number[] = [];
    const { seen, mark, count, score, allow, alive } = this;
    const searchEpoch = ++this.epoch;
    const alternatives = queryTerms.map((term, ti) =>
      this.alternatives(term, ti === queryTerms.length - 1, opts.prefix).flatMap((alt) => {
        const perField = this.postings.get(alt.stem);
        return perField ? [{ perField, weight: alt.weight }] : [];
      }),
    );
    // Every term must match (not `partial`): only the products holding the rarest term can, so the others'
    // postings are passed over without scoring. The scores of those kept are summed in the same order as
    // without this, so they are the same numbers.
    const restrict = !opts.partial && queryTerms.length > 1;
    if (restrict) {
      let rarest = alternatives[0];
      let least = Number.POSITIVE_INFINITY;
      for (const alts of alternatives) {
        let n = 0;
        for (const { perField } of alts) for (const p of perField) n += p?.docs.length ?? 0;
        if (n < least) [rarest, least] = [alts, n];
      }
      for (const { perField } of rarest)
        for (const p of perField) if (p) for (let i = 0; i < p.docs.length; i++) allow[p.docs[i]] = searchEpoch;
    }
    for (const alts of alternatives) {
      // a product counts a term once, whatever fields and alternatives match it
      const termEpoch = ++this.epoch;
      for (const alt of alts) {
        const perField = alt.perField;
        for (let fi = 0; fi < FIELDS.length; fi++) {
          const p = perField[fi];
          if (!p || p.live === 0) continue;
          const idf = Math.log(1 + (live - p.live + 0.5) / (p.live + 0.5));
          const w = WEIGHTS[fi] * alt.weight * idf;
          const lengths = this.lengths[fi];
          const norm = K1 * (1 - B);
          const normLen = (K1 * B) / (this.totalLength[fi] / live || 1);
          const comp = this.components(p, lengths, norm, normLen);
          for (let i = 0; i < p.docs.length; i++) {
            const d = p.docs[i];
            if ((restrict && allow[d] !== searchEpoch) || alive[d] === 0) continue;
            if (seen[d] !== searchEpoch) {
              seen[d] = searchEpoch;
              count[d] = 0;
              score[d] = 0;
              touched.push(d);
            }
            if (mark[d] !== termEpoch) {
              mark[d] = termEpoch;
              count[d]++;
            }
            score[d] += w * ((comp !== null ? comp[i] : component(p.tfs[i], norm, normLen, lengths[d])) + DELTA);
          }
        }
      }
    }
    const all = queryTerms.length;
    const least = opts.partial ? Math.max(1, all - 1) : all;
    if (out.ords.length < touched.length) {
      const size = Math.max(1024, touched.length * 2);
      out.ords = new Int32Array(size);
      out.scores = new Float64Array(size);
      out.matched = new Uint8Array(size);
    }
    const { ords, scores, matched } = out;
    let k = 0;
    for (const d of touched)
      if (count[d] >= least) {
        ords[k] = d;
        scores[k] = score[d];
        matched[k] = count[d];
        k++;
      }
    out.n = k;
    return out;
  }
}

/**
 * A doc's terms as the index counts them: per field each stem's frequency (in first-seen order) and the
 * field's length, and the doc's distinct stems and surface words. `add` and `remove` both take it from
 * here, so a removal takes back exactly what the doc's addition counted.
 */
function analyzed(d: Doc): { tf: Map<string, number>[]; lengths: number[]; stems: Set<string>; words: Set<string> } {
  const out = {
    tf: [] as Map<string, number>[],
    lengths: [] as number[],
    stems: new Set<string>(),
    words: new Set<string>(),
  };
  for (const f of FIELDS) {
    const tf = new Map<string, number>();
    let n = 0;
    for (const w of words(foldText(d[f]))) {
      if (!isContentWord(w)) continue;
      const s = stem(w);
      tf.set(s, (tf.get(s) ?? 0) + 1);
      out.stems.add(s);
      out.words.add(w);
      n++;
    }
    out.tf.push(tf);
    out.lengths.push(n);
  }
  return out;
}

function decrement(m: Map<string, number>, k: string): void {
  const n = (m.get(k) ?? 1) - 1;
  if (n > 0) m.set(k, n);
  else m.delete(k);
}

const built = new WeakMap<StoreCatalog, ProductTextIndex>();

/** The text index of a store's catalog (built on first use, then kept in step with the catalog). */
export function textIndexOf(catalog: StoreCatalog): ProductTextIndex {
  let index = built.get(catalog);
  if (!index) {
    const created = new ProductTextIndex([...catalog.products.values()].map(docOf));
    built.set(catalog, created);
    catalog.listeners.add({ put: (item) => created.put(item), remove: (id) => created.remove(id) });
    index = created;
  }
  return index;
}
