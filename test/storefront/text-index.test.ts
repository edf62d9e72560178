// The keyword index kept in step with a changing catalog answers as an index built afresh from the catalog
// as it ends up: after any sequence of adds, replacements and removals, every word's frequency, spelling
// correction and search hits (ids and scores) are the same (a removal analyzes the product's text again,
// from its catalog record or, for a doc with a text of its own, from the text the index kept; a property
// test against the fresh build is the reference).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type IndexedProduct, StoreCatalog } from '../../services/storefront/results/catalog.ts';
import { type Doc, docOf, FIELDS, ProductTextIndex, textIndexOf } from '../../services/storefront/search/text-index.ts';
import { productView } from './fixtures.ts';

const VOCAB = [
  'linen',
  'shirts',
  'shirt',
  'wool',
  'sweater',
  'blue',
  'red',
  'canvas',
  'tote',
  'bags',
  'silk',
  'scarf',
  'runner',
  'running',
  'sued',
];
const text = fc.array(fc.constantFrom(...VOCAB), { maxLength: 5 }).map((w) => w.join(' '));
const doc = (id: string) =>
  fc.record(Object.fromEntries(FIELDS.map((f) => [f, text]))).map((r) => ({ id, ...r }) as Doc);
const op = fc.oneof(
  fc.record({ kind: fc.constant('put' as const), id: fc.integer({ min: 1, max: 12 }), seed: fc.integer() }),
  fc.record({ kind: fc.constant('remove' as const), id: fc.integer({ min: 1, max: 12 }), seed: fc.integer() }),
);

function answers(index: ProductTextIndex) {
  const queries = [...VOCAB, 'linen shirt', 'blue tote', 'lnien', 'swea'];
  return {
    size: index.size,
    frequency: VOCAB.map((w) => index.frequency(w)),
    correct: ['lnien', 'swetaer', 'scraf', 'totes'].map((w) => index.correct(w)),
    search: queries.map((q) =>
      [true, false].map((prefix) =>
        index
          .search(q, { prefix })
          .hits.map((h) => `${h.id}:${h.score}:${h.matched}`)
          .sort(),
      ),
    ),
  };
}

describe('keyword index under catalog changes', () => {
  it('answers as a fresh build of the final catalog after any adds, replacements and removals', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(op, doc('x')), { maxLength: 60 }), (steps) => {
        const live = new Map<string, Doc>();
        // every list's BM25 components remembered, and searched between changes (so that what was remembered
        // must be kept, extended or recomputed); the fresh build scores its short lists in the loop
        // (and at most 24 of them at a time: all are forgotten when a list needs more)
        const index = new ProductTextIndex([], { componentsMinPostings: 0, componentsMax: 24 });
        for (const [o, d] of steps) {
          if (o.seed % 3 === 0) index.search(VOCAB[Math.abs(o.seed) % VOCAB.length], { prefix: false });
          const id = `p${o.id}`;
          index.remove(id);
          live.delete(id);
          if (o.kind === 'put') {
            // each put its own record: a hit hands back the record of the product as it is now
            const next = { ...d, id, item: { put: live.size } as unknown as IndexedProduct };
            index.add(next);
            live.set(id, next);
          }
        }
        expect(answers(index)).toEqual(answers(new ProductTextIndex(live.values())));
        // these docs' text is not their (stand-in) records': the index keeps each live one's
        expect(index.keptTexts).toBe(live.size);
        for (const q of VOCAB)
          for (const h of index.search(q, { prefix: true, partial: true }).hits)
            expect(h.item).toBe(live.get(h.id)?.item);
      }),
      { numRuns: 300 },
    );
  });
});

describe('keyword index kept by the catalog', () => {
  it("keeps a product's ordinal through changes that leave its text alone, and hands back the current record", () => {
    const step = fc.record({
      id: fc.integer({ min: 1, max: 6 }),
      kind: fc.constantFrom('price' as const, 'title' as const, 'remove' as const),
      title: fc.array(fc.constantFrom(...VOCAB), { minLength: 1, maxLength: 3 }).map((w) => w.join(' ')),
      price: fc.integer({ min: 1, max: 500 }),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const catalog = new StoreCatalog('s');
        const index = textIndexOf(catalog);
        const titles = new Map<string, string>();
        let textChanges = 0;
        for (const st of steps) {
          const id = String(st.id);
          if (st.kind === 'remove') {
            catalog.removeProduct(id);
            titles.delete(id);
            continue;
          }
          // a price change keeps the title (the product's text); a new product or a new title is new text
          const title = st.kind === 'price' ? (titles.get(id) ?? st.title) : st.title;
          if (titles.get(id) !== title) textChanges++;
          titles.set(id, title);
          catalog.putProduct(productView(id, title, 'shirt', st.price));
        }
        expect(index.ordinals).toBe(textChanges);
        // the catalog's docs are their records' text: the index keeps no copy of it
        expect(index.keptTexts).toBe(0);
        const fresh = new ProductTextIndex([...catalog.products.values()].map(docOf));
        expect(answers(index)).toEqual(answers(fresh));
        for (const q of VOCAB)
          for (const h of index.search(q, { prefix: true, partial: true }).hits)
            expect(h.item).toBe(catalog.products.get(h.id));
      }),
      { numRuns: 300 },
    );
  });
});

describe('keyword index compaction', () => {
  it('answers as a fresh build after dead products outnumber a quarter of the live ones', () => {
    const words = (i: number, k: number) => VOCAB[(i * k) % VOCAB.length];
    const docOf = (i: number): Doc => ({
      id: `p${i}`,
      ...(Object.fromEntries(FIELDS.map((f, fi) => [f, `${words(i, fi + 1)} ${words(i, fi + 7)}`])) as Record<
        (typeof FIELDS)[number],
        string
      >),
    });
    const index = new ProductTextIndex(
      Array.from({ length: 4_000 }, (_, i) => docOf(i)),
      { componentsMinPostings: 0 },
    );
    answers(index);
    // 1 500 removals: compaction runs once the 1 001st dead product is more than a quarter of the live
    for (let i = 0; i < 4_000; i += 8) index.remove(`p${i}`);
    for (let i = 1; i < 4_000; i += 8) index.remove(`p${i}`);
    for (let i = 2; i < 4_000; i += 8) index.remove(`p${i}`);
    const kept = Array.from({ length: 4_000 }, (_, i) => i).filter((i) => i % 8 > 2);
    expect(answers(index)).toEqual(answers(new ProductTextIndex(kept.map(docOf))));
  });
});

describe('keyword search that needs every term', () => {
  // A search that needs every query term scores only the products holding its rarest term. The partial
  // search (one term may be missing) scores every product holding any term: its hits that matched every
  // term are the reference, to the last bit of each score and in the same order.
  it('finds and scores exactly the products of the unrestricted search that hold every term', () => {
    const query = fc.array(fc.constantFrom(...VOCAB, 'lnien', 'swea', 'tot', 'wo'), { minLength: 2, maxLength: 4 });
    fc.assert(
      fc.property(fc.array(doc('x'), { minLength: 1, maxLength: 40 }), query, fc.boolean(), (docs, words, prefix) => {
        const index = new ProductTextIndex(docs.map((d, i) => ({ ...d, id: `p${i}` })));
        // a removed product is in the postings until compaction: it must stay out of both
        index.remove('p0');
        const q = words.join(' ');
        const full = index.search(q, { prefix });
        const partial = index.search(q, { prefix, partial: true });
        expect(full.hits).toEqual(partial.hits.filter((h) => h.matched === partial.terms));
        expect(full.hits.some((h) => h.id === 'p0')).toBe(false);
        // and the partial search is not narrowed: of two terms, it keeps every product holding either
        if (!prefix && partial.terms === 2) {
          const either = new Set(words.flatMap((w) => index.search(w, { prefix }).hits.map((h) => h.id)));
          expect(new Set(partial.hits.map((h) => h.id))).toEqual(either);
        }
      }),
      { numRuns: 500 },
    );
  });
});
