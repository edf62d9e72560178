// The per-store in-process autocomplete index. Built from the trending-query aggregate (a full snapshot
// at start and periodically) and patched from the live `agg:trending` deltas, so a suggestion request
// does no I/O at all: sorted arrays for prefix look-ups (binary search), a token vocabulary with
// trigram postings for similarity, precomputed stem clusters.
//
// Rules (spec "Autocomplete response"):
// - Stem variants (singular/plural, …) collapse into one cluster keyed by the stems of their words. The
//   cluster shows its highest-scoring variant; on a tie the shorter one. A cluster's score is the sum
//   of its variants' scores.
// - Prefix matches first (a variant starts with the query, or the cluster's stem key starts with the
//   query's stems — "dresses" finds "dress", "running sh" finds "run shoes"), most popular first.
// - Then non-prefix matches whose similarity ≥ SIMILARITY_THRESHOLD. Similarity is the mean over the
//   query's words of the best match among the cluster's words: 1 for an equal stem or a word the query
//   word begins, else the trigram Dice coefficient (kept only when ≥ TOKEN_FLOOR). Clusters containing
//   every query word (similarity 1) come first, then by similarity, then by popularity.
// - Per-region mode: a country whose own set has at least `minRegionQueries` distinct queries is served
//   from its own set; others get the store-wide set. Global mode: always the store-wide set.
// - Curation (allowed=false suppresses, display_label replaces the text) applies at output only; the
//   matching runs against the raw queries.
import { normalizeQuery, stem, stemKey, tokenize, trigrams } from './text.ts';

export const SIMILARITY_THRESHOLD = 0.6;
export const TOKEN_FLOOR = 0.5;
export const DEFAULT_LIMIT = 10;

export interface TrendingRow {
  /** normalized query text */
  query: string;
  /** relevance: trending votes (distinct sessions), possibly time-decayed */
  score: number;
}

export interface TrendingSnapshot {
  /** the store-wide set */
  storeWide: TrendingRow[];
  /** per shopper country (ISO alpha-2, upper case) */
  byCountry: Record<string, TrendingRow[]>;
}

export interface TrendingDelta {
  query: string;
  /** '' or null = country unknown: counts store-wide only */
  country: string | null;
  /** score to add */
  delta: number;
}

export interface CurationEntry {
  allowed: boolean;
  displayLabel: string | null;
}

/** normalized query or cluster stem key → curation decision */
export type Curation = ReadonlyMap<string, CurationEntry>;

export interface SuggestOptions {
  /** normalized query; null/empty = top trending */
  query: string | null;
  country: string | null;
  mode: 'per_region' | 'global';
  limit?: number;
  curation?: Curation;
}

interface Cluster {
  key: string;
  display: string;
  displayScore: number;
  score: number;
  variants: string[];
  tokenIds: number[];
  rank: number;
}

interface Vocab {
  id: number;
  word: string;
  grams: string[];
  clusters: number[];
}

/** what the index derives from one normalized query text (cached across rebuilds) */
export interface Derived {
  key: string;
  tokens: string[];
}

export function derive(text: string): Derived {
  const tokens = tokenize(text);
  return { key: tokens.map(stem).join(' ') || text, tokens };
}

/** prefix ranges at most this large are collected and sorted; larger ones are scanned in rank order */
const SORT_RANGE_MAX = 512;
/** similarity candidates evaluated per request at most, most popular first (bounds the worst case) */
const MAX_SIMILAR_EVALUATIONS = 2_000;

/** One immutable searchable set (a country's, or the store-wide one). */
export class RegionIndex {
  readonly clusters: Cluster[];
  readonly queryCount: number;
  private readonly byText: { text: string; c: number }[];
  private readonly byStem: { key: string; c: number }[];
  private readonly vocab: Vocab[];
  private readonly words: { word: string; id: number }[];
  private readonly vocabByStem = new Map<string, number[]>();
  private readonly postings = new Map<string, number[]>();
  private mark: Uint8Array;
  /** answers of this (immutable) set: `limit \u0001 query` → suggestions, for one curation map */
  private readonly answers = new Map<string, string[]>();
  private answersCuration: Curation | undefined;

  /** `scores`: normalized query text → score (> 0) */
  constructor(scores: ReadonlyMap<string, number>, derived: (text: string) => Derived = derive) {
    this.queryCount = scores.size;
    const groups = new Map<string, { text: string; score: number; d: Derived }[]>();
    for (const [text, score] of scores) {
      if (!(score > 0) || text === '') continue;
      const d = derived(text);
      let g = groups.get(d.key);
      if (!g) groups.set(d.key, (g = []));
      g.push({ text, score, d });
    }
    const clusters: (Cluster & { ds: Derived[] })[] = [];
    for (const [key, variants] of groups) {
      variants.sort((a, b) => b.score - a.score || a.text.length - b.text.length || (a.text < b.text ? -1 : 1));
      let total = 0;
      for (const v of variants) total += v.score;
      clusters.push({
        key,
        display: variants[0].text,
        displayScore: variants[0].score,
        score: total,
        variants: variants.map((v) => v.text),
        tokenIds: [],
        rank: 0,
        ds: variants.map((v) => v.d),
      });
    }
    clusters.sort(
      (a, b) => b.score - a.score || a.display.length - b.display.length || (a.display < b.display ? -1 : 1),
    );

    this.byText = [];
    this.byStem = [];
    this.vocab = [];
    const vocabIndex = new Map<string, Vocab>();
    for (let ci = 0; ci < clusters.length; ci++) {
      const c = clusters[ci];
      c.rank = ci;
      this.byStem.push({ key: c.key, c: ci });
      const ids: number[] = [];
      for (let vi = 0; vi < c.variants.length; vi++) {
        this.byText.push({ text: c.variants[vi], c: ci });
        for (const w of c.ds[vi].tokens) {
          let voc = vocabIndex.get(w);
          if (!voc) {
            voc = { id: this.vocab.length, word: w, grams: trigrams(w), clusters: [] };
            vocabIndex.set(w, voc);
            this.vocab.push(voc);
          }
          if (voc.clusters[voc.clusters.length - 1] !== ci) {
            voc.clusters.push(ci);
            ids.push(voc.id);
          }
        }
      }
      c.tokenIds = ids;
    }
    this.clusters = clusters.map(({ ds: _ds, ...c }) => c);
    this.byText.sort((a, b) => (a.text < b.text ? -1 : a.text > b.text ? 1 : a.c - b.c));
    this.byStem.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.c - b.c));
    this.words = this.vocab
      .map((v) => ({ word: v.word, id: v.id }))
      .sort((a, b) => (a.word < b.word ? -1 : a.word > b.word ? 1 : 0));
    for (const v of this.vocab) {
      const s = stem(v.word);
      const l = this.vocabByStem.get(s);
      if (l) l.push(v.id);
      else this.vocabByStem.set(s, [v.id]);
      for (const g of v.grams) {
        const p = this.postings.get(g);
        if (p) p.push(v.id);
        else this.postings.set(g, [v.id]);
      }
    }
    this.mark = new Uint8Array(this.clusters.length);
  }

  /** a cached answer for (query, limit) under `curation` (the store view's map: a new one clears the cache) */
  cachedAnswer(key: string, curation: Curation | undefined): string[] | undefined {
    if (curation !== this.answersCuration) {
      this.answers.clear();
      this.answersCuration = curation;
      return undefined;
    }
    return this.answers.get(key);
  }

  cacheAnswer(key: string, answer: string[], maxEntries: number): void {
    if (maxEntries <= 0) return;
    if (this.answers.size >= maxEntries) {
      // oldest first (insertion order)
      const oldest = this.answers.keys().next();
      if (!oldest.done) this.answers.delete(oldest.value);
    }
    this.answers.set(key, answer);
  }

  /** the stem-key forms a query's prefix match is tried with ("running sh" → "run sh") */
  private stemForms(q: string): string[] {
    const toks = tokenize(q);
    if (toks.length === 0) return [];
    const complete = toks.slice(0, -1).map(stem);
    const last = toks[toks.length - 1];
    const a = [...complete, stem(last)].join(' ');
    const b = [...complete, last].join(' ');
    return a === b ? [a] : [a, b];
  }

  private isPrefixMatch(c: number, q: string, forms: readonly string[]): boolean {
    const cl = this.clusters[c];
    for (const f of forms) if (cl.key.startsWith(f)) return true;
    for (const v of cl.variants) if (v.startsWith(q)) return true;
    return false;
  }

  /** clusters whose variant or stem key starts with the query, most popular first (lazy) */
  *prefixMatches(q: string): Generator<number> {
    const forms = this.stemForms(q);
    const ranges: [number, number, 'text' | 'stem'][] = [];
    let total = 0;
    const t = range(this.byText, (e) => e.text, q);
    ranges.push([t[0], t[1], 'text']);
    total += t[1] - t[0];
    for (const f of forms) {
      const r = range(this.byStem, (e) => e.key, f);
      ranges.push([r[0], r[1], 'stem']);
      total += r[1] - r[0];
    }
    if (total === 0) return;
    if (total <= SORT_RANGE_MAX) {
      const found = new Set<number>();
      for (const [lo, hi, kind] of ranges)
        for (let i = lo; i < hi; i++) found.add(kind === 'text' ? this.byText[i].c : this.byStem[i].c);
      yield* [...found].sort((a, b) => a - b);
      return;
    }
    // a dense prefix: walking the clusters in rank order finds the first matches quickly
    for (let c = 0; c < this.clusters.length; c++) if (this.isPrefixMatch(c, q, forms)) yield c;
  }

  /** clusters that are not prefix matches, with similarity ≥ threshold, best first; at most `need` of the top tier */
  similarMatches(q: string, need: number): { c: number; sim: number }[] {
    const toks = tokenize(q);
    if (toks.length === 0 || this.clusters.length === 0) return [];
    const forms = this.stemForms(q);
    const perToken: Map<number, number>[] = toks.map((t) => this.tokenSims(t));
    const mark = this.mark;
    let lo = mark.length;
    let hi = -1;
    for (const m of perToken) {
      for (const id of m.keys()) {
        for (const c of this.vocab[id].clusters) {
          mark[c] = 1;
          if (c < lo) lo = c;
          if (c > hi) hi = c;
        }
      }
    }
    const out: { c: number; sim: number }[] = [];
    let exact = 0;
    let evaluated = 0;
    for (let c = lo; c <= hi; c++) {
      if (mark[c] === 0) continue;
      mark[c] = 0;
      if (exact >= need || evaluated >= MAX_SIMILAR_EVALUATIONS) continue; // keep clearing marks
      if (this.isPrefixMatch(c, q, forms)) continue;
      evaluated++;
      const ids = this.clusters[c].tokenIds;
      let total = 0;
      for (const m of perToken) {
        let best = 0;
        for (const id of ids) {
          const s = m.get(id);
          if (s !== undefined && s > best) best = s;
        }
        total += best;
      }
      const sim = total / perToken.length;
      if (sim >= SIMILARITY_THRESHOLD) {
        out.push({ c, sim });
        if (sim >= 0.999) exact++;
      }
    }
    out.sort((a, b) => {
      const ta = a.sim >= 0.999 ? 0 : 1;
      const tb = b.sim >= 0.999 ? 0 : 1;
      return ta - tb || b.sim - a.sim || a.c - b.c;
    });
    return out;
  }

  /** vocabulary word id → similarity to one query word */
  private tokenSims(t: string): Map<number, number> {
    const m = new Map<number, number>();
    const [lo, hi] = range(this.words, (e) => e.word, t);
    for (let i = lo; i < hi; i++) m.set(this.words[i].id, 1);
    for (const id of this.vocabByStem.get(stem(t)) ?? []) m.set(id, 1);
    if (t.length >= 3) {
      const grams = trigrams(t);
      const shared = new Map<number, number>();
      for (const g of grams) for (const id of this.postings.get(g) ?? []) shared.set(id, (shared.get(id) ?? 0) + 1);
      for (const [id, n] of shared) {
        if (m.has(id)) continue;
        const d = (2 * n) / (grams.length + this.vocab[id].grams.length);
        if (d >= TOKEN_FLOOR) m.set(id, d);
      }
    }
    return m;
  }
}

/** [lo, hi) of the entries starting with `prefix` in an array sorted by key */
function range<E>(arr: readonly E[], keyOf: (e: E) => string, prefix: string): [number, number] {
  if (prefix === '') return [0, 0];
  const lower = (p: string) => {
    let lo = 0;
    let hi = arr.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keyOf(arr[mid]) < p) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return [lower(prefix), lower(`${prefix}\uffff`)];
}

interface StoreState {
  storeWide: Map<string, number>;
  /** performance.now() of the last rebuild */
  builtAt: number;
  byCountry: Map<string, Map<string, number>>;
  global: RegionIndex;
  regions: Map<string, RegionIndex>;
  dirty: boolean;
  version: number;
  /** duration of the last rebuild, ms */
  buildMs: number;
}

export interface AutocompleteIndexOptions {
  /** a country needs this many distinct queries to be served its own set (default 10) */
  minRegionQueries?: number;
  /**
   * minimum interval between two rebuilds of a store from live deltas (default 100 ms; at least 5× the
   * store's last build time). The first delta after a quiet interval rebuilds at once (same tick's
   * deltas coalesced); deltas inside the interval are folded into one rebuild at its end. 0 = rebuild
   * synchronously on every delta.
   */
  rebuildDebounceMs?: number;
  /** answers cached per searchable set, dropped with the set when it is rebuilt (default 4096; 0 = off) */
  answerCacheSize?: number;
}

const EMPTY = new RegionIndex(new Map());

/** All stores' indexes. Reads are synchronous and allocation-light; writes rebuild a store's sets. */
export class AutocompleteIndex {
  private readonly stores = new Map<string, StoreState>();
  private readonly pending = new Map<string, NodeJS.Timeout>();
  readonly minRegionQueries: number;
  private readonly debounceMs: number;
  private readonly answerCacheSize: number;
  /** when each store's index last changed (ms), for the staleness metric */
  readonly updatedAt = new Map<string, number>();
  /** stem key and words per normalized query, kept across rebuilds (they do not change) */
  private readonly derived = new Map<string, Derived>();
  private readonly derive = (text: string): Derived => {
    let d = this.derived.get(text);
    if (!d) this.derived.set(text, (d = derive(text)));
    return d;
  };

  constructor(opts: AutocompleteIndexOptions = {}) {
    this.minRegionQueries = opts.minRegionQueries ?? 10;
    this.debounceMs = opts.rebuildDebounceMs ?? 100;
    this.answerCacheSize = opts.answerCacheSize ?? 4096;
  }

  storeIds(): string[] {
    return [...this.stores.keys()];
  }

  /** replace a store's data with a full snapshot (start-up, periodic refresh) */
  load(storeId: string, snap: TrendingSnapshot): void {
    const storeWide = toMap(snap.storeWide);
    const byCountry = new Map<string, Map<string, number>>();
    for (const [country, rows] of Object.entries(snap.byCountry))
      if (country) byCountry.set(country.toUpperCase(), toMap(rows));
    const st: StoreState = {
      storeWide,
      byCountry,
      global: EMPTY,
      regions: new Map(),
      dirty: true,
      version: 0,
      buildMs: 0,
      builtAt: Number.NEGATIVE_INFINITY,
    };
    this.stores.set(storeId, st);
    this.cancelPending(storeId);
    this.rebuild(storeId, st);
  }

  /** drop a store that has no trending data any more */
  remove(storeId: string): void {
    this.cancelPending(storeId);
    this.stores.delete(storeId);
    this.updatedAt.delete(storeId);
  }

  /**
   * Fold live increments in. A country's delta also counts store-wide (a voter seen in two countries
   * in one window counts twice until the next full refresh, which merges voters exactly).
   * `immediate` rebuilds now instead of on the rebuild schedule (see `rebuildDebounceMs`).
   */
  applyDeltas(storeId: string, deltas: readonly TrendingDelta[], immediate = false): void {
    let st = this.stores.get(storeId);
    if (!st) {
      st = {
        storeWide: new Map(),
        byCountry: new Map(),
        global: EMPTY,
        regions: new Map(),
        dirty: true,
        version: 0,
        buildMs: 0,
        builtAt: Number.NEGATIVE_INFINITY,
      };
      this.stores.set(storeId, st);
    }
    for (const d of deltas) {
      const q = normalizeQuery(d.query);
      if (!q || !Number.isFinite(d.delta) || d.delta === 0) continue;
      st.storeWide.set(q, Math.max(0, (st.storeWide.get(q) ?? 0) + d.delta));
      const country = d.country ? d.country.toUpperCase() : '';
      if (country) {
        let m = st.byCountry.get(country);
        if (!m) st.byCountry.set(country, (m = new Map()));
        m.set(q, Math.max(0, (m.get(q) ?? 0) + d.delta));
      }
    }
    st.dirty = true;
    if (immediate || this.debounceMs <= 0) {
      this.cancelPending(storeId);
      this.rebuild(storeId, st);
    } else if (!this.pending.has(storeId)) {
      // leading edge: a quiet store rebuilds now (after this tick's messages); a busy one at most once
      // per interval
      const interval = Math.max(this.debounceMs, 5 * st.buildMs);
      const wait = Math.max(0, st.builtAt + interval - performance.now());
      const t = setTimeout(() => {
        this.pending.delete(storeId);
        const cur = this.stores.get(storeId);
        if (cur?.dirty) this.rebuild(storeId, cur);
      }, wait);
      t.unref();
      this.pending.set(storeId, t);
    }
  }

  /** the set a request is served from */
  regionFor(
    storeId: string,
    country: string | null,
    mode: 'per_region' | 'global',
  ): { index: RegionIndex; region: string | null } {
    const st = this.stores.get(storeId);
    if (!st) return { index: EMPTY, region: null };
    if (mode === 'per_region' && country) {
      const r = st.regions.get(country.toUpperCase());
      if (r) return { index: r, region: country.toUpperCase() };
    }
    return { index: st.global, region: null };
  }

  /** Suggestions; repeated (query, limit) pairs are answered from the set's cache until it is rebuilt. */
  suggest(storeId: string, opts: SuggestOptions): string[] {
    const limit = opts.limit ?? DEFAULT_LIMIT;
    const { index } = this.regionFor(storeId, opts.country, opts.mode);
    if (this.answerCacheSize <= 0 || index === EMPTY) return this.compute(index, opts, limit);
    const key = `${limit}\u0001${opts.query ?? ''}`;
    const hit = index.cachedAnswer(key, opts.curation);
    if (hit) return hit.slice();
    const out = this.compute(index, opts, limit);
    index.cacheAnswer(key, out.slice(), this.answerCacheSize);
    return out;
  }

  private compute(index: RegionIndex, opts: SuggestOptions, limit: number): string[] {
    const out: string[] = [];
    const seen = new Set<string>();
    const take = (c: Cluster): boolean => {
      const text = present(c, opts.curation);
      if (text !== null && !seen.has(text)) {
        seen.add(text);
        out.push(text);
      }
      return out.length >= limit;
    };
    const q = opts.query ? opts.query : '';
    if (q === '') {
      for (const c of index.clusters) if (take(c)) break;
      return out;
    }
    for (const ci of index.prefixMatches(q)) if (take(index.clusters[ci])) return out;
    // curation may hide some: ask for enough to fill the page regardless
    const similar = index.similarMatches(q, limit + (opts.curation?.size ?? 0));
    for (const { c } of similar) if (take(index.clusters[c])) return out;
    return out;
  }

  /** rebuilds of a large store are spaced at least 5× their own duration apart (≤ ~20% of a core) */
  private rebuild(storeId: string, st: StoreState): void {
    const t0 = performance.now();
    if (this.derived.size > 200_000) this.derived.clear();
    st.global = new RegionIndex(st.storeWide, this.derive);
    const regions = new Map<string, RegionIndex>();
    for (const [country, m] of st.byCountry) {
      if (m.size < this.minRegionQueries) continue;
      const r = new RegionIndex(m, this.derive);
      if (r.queryCount >= this.minRegionQueries) regions.set(country, r);
    }
    st.regions = regions;
    st.dirty = false;
    st.version++;
    st.builtAt = performance.now();
    st.buildMs = st.builtAt - t0;
    this.updatedAt.set(storeId, Date.now());
  }

  private cancelPending(storeId: string) {
    const t = this.pending.get(storeId);
    if (t) {
      clearTimeout(t);
      this.pending.delete(storeId);
    }
  }

  close(): void {
    for (const t of this.pending.values()) clearTimeout(t);
    this.pending.clear();
  }
}

/** curation at output: suppressed → null; a display label replaces the text */
function present(c: Cluster, curation: Curation | undefined): string | null {
  if (!curation || curation.size === 0) return c.display;
  let entry = curation.get(c.key);
  if (!entry) {
    for (const v of c.variants) {
      entry = curation.get(v);
      if (entry) break;
    }
  }
  if (!entry) return c.display;
  if (!entry.allowed) return null;
  return entry.displayLabel ?? c.display;
}

function toMap(rows: readonly TrendingRow[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of rows) {
    const q = normalizeQuery(r.query);
    if (q && r.score > 0) m.set(q, (m.get(q) ?? 0) + r.score);
  }
  return m;
}

/** Build a curation map from `autocomplete_curation` items (keys: the normalized query and its stem key). */
export function buildCuration(
  items: readonly { query: string; allowed: boolean; display_label: string | null }[],
): Curation {
  const m = new Map<string, CurationEntry>();
  for (const it of items) {
    const q = normalizeQuery(it.query);
    if (!q) continue;
    const entry = { allowed: it.allowed, displayLabel: it.display_label };
    m.set(q, entry);
    const k = stemKey(q);
    if (k && !m.has(k)) m.set(k, entry);
  }
  return m;
}
