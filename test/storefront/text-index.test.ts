// The keyword index kept in step with a changing catalog answers as an index built afresh from the catalog
// as it ends up: after any sequence of adds, replacements and removals, every word's frequency, spelling
// correction and search hits (ids and scores) are the same (the removal bookkeeping is compact integers;
// a property test against the fresh build is the reference).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Doc, FIELDS, ProductTextIndex } from '../../services/storefront/search/text-index.ts';

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
          .hits.map((h) => `${h.id}:${h.score.toFixed(9)}:${h.matched}`)
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
        const index = new ProductTextIndex();
        for (const [o, d] of steps) {
          const id = `p${o.id}`;
          index.remove(id);
          live.delete(id);
          if (o.kind === 'put') {
            const next = { ...d, id };
            index.add(next);
            live.set(id, next);
          }
        }
        expect(answers(index)).toEqual(answers(new ProductTextIndex(live.values())));
      }),
      { numRuns: 300 },
    );
  });
});
