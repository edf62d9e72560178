// The per-store keyword index of search: MiniSearch (BM25+ with per-field boosts, prefix and fuzzy
// matching; chosen on the bench, docs/decisions.md "Search: the keyword index") over the products of the
// store's in-process catalog (results/catalog.ts), analyzed by analyze.ts. Built on a store's first search
// and kept in step with the catalog through its product listener, so a catalog change reaches search in
// the same synchronous swap that browse sees.
//
// Alongside, the vocabulary of surface words (folded, unstemmed) with their document frequencies: the
// candidates of spelling correction (understand.ts).
import MiniSearch, { type Options, type SearchOptions, type SearchResult } from 'minisearch';
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
const FIELDS = Object.keys(FIELD_WEIGHTS) as Field[];

/** one product's text by field, as the index holds it */
export type Doc = { id: string } & Record<Field, string>;

/** the MiniSearch options of the index (bench/search-libraries.ts measures the same configuration) */
export function miniSearchOptions(): Options<Doc> {
  return {
    idField: 'id',
    fields: FIELDS,
    storeFields: [],
    tokenize: (text) => words(foldText(text)),
    processTerm: (term) => (isContentWord(term) ? stem(term) : null),
    searchOptions: { boost: { ...FIELD_WEIGHTS }, combineWith: 'OR' },
  };
}

/**
 * Per-search options: the last term also as a prefix (`prefix`: a query still being typed), one typo in
 * words of 5+ letters. Both only for terms the index does not hold as they are (`known`): expanding a
 * complete, known word costs most of a query's time on a large store and only adds weaker matches.
 */
export function miniSearchQueryOptions(prefix: boolean, known: (stem: string) => boolean = () => false): SearchOptions {
  return {
    prefix: (term, i, all) => prefix && i === all.length - 1 && term.length >= 3 && !known(term),
    fuzzy: (term) => (term.length >= 5 && !known(term) ? 1 : false),
    weights: { fuzzy: 0.4, prefix: 0.5 },
  };
}

export function docOf(item: IndexedProduct): Doc {
  const p = item.p;
  return {
    id: p.id,
    title: p.title,
    product_type: p.product_type,
    vendor: p.vendor,
    tags: p.tags.join(' '),
    options: p.options.flatMap((o) => o.values).join(' '),
    description: htmlText(p.body_html),
  };
}

export interface KeywordHit {
  id: string;
  /** BM25+ score with field boosts */
  score: number;
  /** distinct query terms the product matched (exactly, by prefix or fuzzily) */
  matched: number;
}

export class ProductTextIndex {
  private readonly ms: MiniSearch<Doc>;
  /** surface word → products containing it */
  private readonly vocab = new Map<string, number>();
  /** stem → products containing it */
  private readonly stems = new Map<string, number>();
  private readonly wordsOf = new Map<string, string[]>();

  constructor(catalog: StoreCatalog) {
    this.ms = new MiniSearch<Doc>(miniSearchOptions());
    const docs: Doc[] = [];
    for (const item of catalog.products.values()) {
      const d = docOf(item);
      docs.push(d);
      this.count(d, 1);
    }
    this.ms.addAll(docs);
  }

  get size(): number {
    return this.ms.documentCount;
  }

  put(item: IndexedProduct): void {
    this.remove(item.p.id);
    const d = docOf(item);
    this.count(d, 1);
    this.ms.add(d);
  }

  remove(id: string): void {
    if (!this.ms.has(id)) return;
    this.ms.discard(id);
    const ws = this.wordsOf.get(id) ?? [];
    this.wordsOf.delete(id);
    for (const w of ws) {
      const n = (this.vocab.get(w) ?? 1) - 1;
      if (n > 0) this.vocab.set(w, n);
      else this.vocab.delete(w);
      const s = stem(w);
      const m = (this.stems.get(s) ?? 1) - 1;
      if (m > 0) this.stems.set(s, m);
      else this.stems.delete(s);
    }
  }

  private count(d: Doc, delta: 1): void {
    const ws = new Set<string>();
    for (const f of FIELDS) for (const w of words(foldText(d[f]))) if (isContentWord(w)) ws.add(w);
    const list = [...ws];
    this.wordsOf.set(d.id, list);
    const stems = new Set<string>();
    for (const w of list) {
      this.vocab.set(w, (this.vocab.get(w) ?? 0) + delta);
      stems.add(stem(w));
    }
    for (const s of stems) this.stems.set(s, (this.stems.get(s) ?? 0) + delta);
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

  /**
   * Products matching the query, with BM25+ scores and how many distinct query terms each matched.
   * Products matching every term first (AND); when fewer than `MIN_FULL_MATCHES` do, products matching
   * any term are added (OR), for recall. On a large store a common word matches thousands of products,
   * and scoring and sorting all of them is most of a query's cost, though no shopper pages past the full
   * matches. `prefix`: the last term also matches as a prefix (a query typed so far).
   */
  search(query: string, opts: { prefix: boolean }): { hits: KeywordHit[]; terms: number } {
    const queryTerms = [...new Set(words(foldText(query)).filter(isContentWord).map(stem))];
    if (queryTerms.length === 0) return { hits: [], terms: 0 };
    // the text as typed: MiniSearch analyzes it with the index's own tokenizer and processTerm (passing
    // the stems would stem them twice: "suede" → "sued" → "su")
    const options = miniSearchQueryOptions(opts.prefix, (s) => this.stems.has(s));
    const hit = (r: SearchResult): KeywordHit => ({
      id: String(r.id),
      score: r.score,
      matched: new Set(r.queryTerms).size,
    });
    const full = this.ms.search(query, { ...options, combineWith: 'AND' });
    if (full.length >= MIN_FULL_MATCHES || queryTerms.length === 1)
      return { hits: full.map(hit), terms: queryTerms.length };
    return { hits: this.ms.search(query, options).map(hit), terms: queryTerms.length };
  }
}

/** below this many products matching every query term, products matching some are candidates too */
export const MIN_FULL_MATCHES = 50;

const built = new WeakMap<StoreCatalog, ProductTextIndex>();

/** The text index of a store's catalog (built on first use, then kept in step with the catalog). */
export function textIndexOf(catalog: StoreCatalog): ProductTextIndex {
  let index = built.get(catalog);
  if (!index) {
    const created = new ProductTextIndex(catalog);
    built.set(catalog, created);
    catalog.listeners.add({ put: (item) => created.put(item), remove: (id) => created.remove(id) });
    index = created;
  }
  return index;
}
