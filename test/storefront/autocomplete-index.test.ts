import { describe, expect, it } from 'vitest';
import {
  AutocompleteIndex,
  buildCuration,
  SIMILARITY_THRESHOLD,
} from '../../services/storefront/autocomplete/index.ts';
import { normalizeQuery, sanitizeQuery, stemKey } from '../../services/storefront/autocomplete/text.ts';

const rows = (o: Record<string, number>) => Object.entries(o).map(([query, score]) => ({ query, score }));

function indexWith(
  storeWide: Record<string, number>,
  byCountry: Record<string, Record<string, number>> = {},
  minRegionQueries = 3,
) {
  const idx = new AutocompleteIndex({ minRegionQueries, rebuildDebounceMs: 0 });
  idx.load('s1', {
    storeWide: rows(storeWide),
    byCountry: Object.fromEntries(Object.entries(byCountry).map(([c, r]) => [c, rows(r)])),
  });
  return idx;
}

describe('text', () => {
  it('sanitizes control characters, HTML-ish noise and whitespace', () => {
    expect(sanitizeQuery('  red\u0000 <b>dress</b>\t\n ')).toBe('red dress');
    expect(sanitizeQuery('&lt;script&gt;alert(1)&lt;/script&gt;shoes')).toBe('alert(1) shoes');
    expect(sanitizeQuery('a\u200Bb')).toBe('ab');
    expect(normalizeQuery('  Red   DRESS ')).toBe('red dress');
  });
  it('stem keys collapse singular and plural', () => {
    expect(stemKey('running shoes')).toBe(stemKey('running shoe'));
    expect(stemKey('dresses')).toBe(stemKey('dress'));
  });
});

describe('autocomplete index', () => {
  it('puts prefix matches first (most popular first), then similar non-prefix matches', () => {
    const idx = indexWith({ shirt: 5, 'shirt dress': 9, 'blue shirt': 50, shorts: 20, sandals: 40 });
    expect(idx.suggest('s1', { query: 'shi', country: null, mode: 'global' })).toEqual([
      'shirt dress',
      'shirt',
      'blue shirt',
    ]);
  });

  it('admits non-prefix matches only above the similarity threshold', () => {
    expect(SIMILARITY_THRESHOLD).toBe(0.6);
    const idx = indexWith({ sneakers: 10, 'white sneakers': 30, 'snow boots': 20, speakers: 5 });
    // typo: trigram similarity of sneakrs/sneakers = 0.71 ≥ 0.6; speakers 0.47 is below the word floor
    expect(idx.suggest('s1', { query: 'sneakrs', country: null, mode: 'global' })).toEqual([
      'white sneakers',
      'sneakers',
    ]);
    // two words, only one matching: similarity 0.5 < 0.6
    expect(idx.suggest('s1', { query: 'red boots', country: null, mode: 'global' })).toEqual([]);
  });

  it('collapses stem variants: highest score wins, ties go to the shorter form', () => {
    const idx = indexWith({ dress: 5, dresses: 8, 'red dress': 3, boot: 4, boots: 4 });
    // one suggestion for dress/dresses (8 > 5); "red dress" follows as a non-prefix word match
    expect(idx.suggest('s1', { query: 'dre', country: null, mode: 'global' })).toEqual(['dresses', 'red dress']);
    expect(idx.suggest('s1', { query: 'boo', country: null, mode: 'global' })).toEqual(['boot']);
    // stem-aware prefix: the query "dresses" finds the cluster through its stem
    expect(idx.suggest('s1', { query: 'dresses', country: null, mode: 'global' })).toEqual(['dresses', 'red dress']);
  });

  it('serves a country with enough history from its own set, else the store-wide set; global mode ignores the country', () => {
    const idx = indexWith(
      { jeans: 100, jacket: 50, jumper: 10 },
      { DE: { jacke: 9, jeans: 3, jogginghose: 4 }, FR: { jupe: 2 } },
      3,
    );
    expect(idx.suggest('s1', { query: 'j', country: 'DE', mode: 'per_region' })).toEqual([
      'jacke',
      'jogginghose',
      'jeans',
    ]);
    expect(idx.suggest('s1', { query: 'j', country: 'FR', mode: 'per_region' })).toEqual(['jeans', 'jacket', 'jumper']);
    expect(idx.suggest('s1', { query: 'j', country: 'DE', mode: 'global' })).toEqual(['jeans', 'jacket', 'jumper']);
  });

  it('curation suppresses and relabels at output; matching uses the raw queries', () => {
    const idx = indexWith({ 'nike shoes': 50, 'shoe polish': 10, shoes: 30 });
    const curation = buildCuration([
      { query: 'nike shoes', allowed: false, display_label: null },
      { query: 'shoe', allowed: true, display_label: 'Shoes & Sneakers' },
    ]);
    expect(idx.suggest('s1', { query: 'sho', country: null, mode: 'global', curation })).toEqual([
      'Shoes & Sneakers',
      'shoe polish',
    ]);
    expect(idx.suggest('s1', { query: null, country: null, mode: 'global', curation })).toEqual([
      'Shoes & Sneakers',
      'shoe polish',
    ]);
  });

  it('applies deltas: a new query becomes suggestible', () => {
    const idx = indexWith({ socks: 3 });
    idx.applyDeltas('s1', [{ query: 'Sock Garters', country: 'US', delta: 25 }], true);
    expect(idx.suggest('s1', { query: 'soc', country: null, mode: 'global' })).toEqual(['sock garters', 'socks']);
  });

  it('a dense prefix (hundreds of matches) still returns the most popular matches first', () => {
    const many: Record<string, number> = {};
    for (let i = 0; i < 2_000; i++) many[`bag model ${i}`] = ((i * 7919) % 1000) + 1;
    many['other thing'] = 5_000;
    const idx = indexWith(many);
    const expected = Object.entries(many)
      .filter(([q]) => q.startsWith('ba'))
      .sort((a, b) => b[1] - a[1] || a[0].length - b[0].length || (a[0] < b[0] ? -1 : 1))
      .slice(0, 10)
      .map(([q]) => q);
    expect(idx.suggest('s1', { query: 'ba', country: null, mode: 'global' })).toEqual(expected);
    const narrow = ['bag model 199', ...Array.from({ length: 10 }, (_, d) => `bag model 199${d}`)]
      .sort((a, b) => many[b] - many[a])
      .slice(0, 3);
    expect(idx.suggest('s1', { query: 'bag model 199', country: null, mode: 'global', limit: 3 })).toEqual(narrow);
  });

  it('caches answers per store and set, equal to the uncached answer, until a rebuild or a new curation', async () => {
    const data = { 'linen shirt': 9, 'linen pants': 4, 'wool coat': 7, lines: 1 };
    const cached = indexWith(data);
    const plain = new AutocompleteIndex({ minRegionQueries: 3, rebuildDebounceMs: 0, answerCacheSize: 0 });
    plain.load('s1', { storeWide: rows(data), byCountry: {} });
    cached.load('s2', { storeWide: rows({ 'linen towel': 3 }), byCountry: {} });
    const ask = (idx: AutocompleteIndex, store: string, query: string | null, extra: object = {}) =>
      idx.suggest(store, { query, country: null, mode: 'global', ...extra });
    for (const q of ['lin', 'lin', 'linen p', null, null, 'wol', 'wol'])
      expect(ask(cached, 's1', q)).toEqual(ask(plain, 's1', q));
    expect(ask(cached, 's1', 'lin', { limit: 1 })).toEqual(['linen shirt']);
    // another store with the same query: its own answer (the cache lives in the store's own set)
    expect(ask(cached, 's2', 'lin')).toEqual(['linen towel']);
    // a caller mutating its answer does not change the cached one
    ask(cached, 's1', 'lin').push('junk');
    expect(ask(cached, 's1', 'lin')).toEqual(['linen shirt', 'linen pants', 'lines']);
    // a rebuild (live delta) answers from the new set
    cached.applyDeltas('s1', [{ query: 'lines', country: null, delta: 100 }], true);
    expect(ask(cached, 's1', 'lin')).toEqual(['lines', 'linen shirt', 'linen pants']);
    // a new curation map (store configuration changed) is honoured at once
    const curation = buildCuration([{ query: 'lines', allowed: false, display_label: null }]);
    expect(ask(cached, 's1', 'lin', { curation })).toEqual(['linen shirt', 'linen pants']);
    expect(ask(cached, 's1', 'lin')).toEqual(['lines', 'linen shirt', 'linen pants']);
  });

  it('rebuilds a quiet store at once on a live delta, and a busy one at most once per interval', async () => {
    const idx = new AutocompleteIndex({ minRegionQueries: 3, rebuildDebounceMs: 200 });
    idx.load('s1', { storeWide: rows({ 'red dress': 5 }), byCountry: {} });
    await new Promise((r) => setTimeout(r, 250));
    idx.applyDeltas('s1', [{ query: 'red boots', country: null, delta: 9 }]);
    await new Promise((r) => setTimeout(r, 20));
    expect(idx.suggest('s1', { query: 're', country: null, mode: 'global' })).toEqual(['red boots', 'red dress']);
    // within the interval: held until it ends, then folded in
    idx.applyDeltas('s1', [{ query: 'red hat', country: null, delta: 20 }]);
    await new Promise((r) => setTimeout(r, 20));
    expect(idx.suggest('s1', { query: 're', country: null, mode: 'global' })).toEqual(['red boots', 'red dress']);
    await new Promise((r) => setTimeout(r, 250));
    expect(idx.suggest('s1', { query: 're', country: null, mode: 'global' })).toEqual([
      'red hat',
      'red boots',
      'red dress',
    ]);
    idx.close();
  });
});
