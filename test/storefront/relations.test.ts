// The relations index of the recommendation blocks (services/storefront/blocks/relations.ts): scores are
// popularity-normalized co-occurrence, so a best seller that co-occurs with everything does not top
// every block; several anchors sum; a change re-read for some anchors replaces exactly their rows.
import { describe, expect, it } from 'vitest';
import { PAIR_SUPPORT_SHRINKAGE, type RelationRow } from '../../clickhouse/queries/related.ts';
import { StoreRelations } from '../../services/storefront/blocks/relations.ts';

/** symmetric pair rows (both directions) and diagonals from session lists */
function coViews(sessions: string[][]): RelationRow[] {
  const n = new Map<string, number>();
  for (const s of sessions)
    for (const a of s)
      for (const b of s) {
        const k = `${a}|${b}`;
        n.set(k, (n.get(k) ?? 0) + 1);
      }
  return [...n].map(([k, v]) => {
    const [a, b] = k.split('|');
    return { a, b, n: v };
  });
}

/** the support shrinkage n / (n + k) every pair score carries */
const shrunk = (n: number) => n / (n + PAIR_SUPPORT_SHRINKAGE);

describe('relations index', () => {
  it('normalizes by popularity: a best seller viewed in every session ranks below a product viewed mostly with the anchor', () => {
    const sessions: string[][] = [];
    // 100 sessions view the best seller 9 with something else; 6 of them also view 1 and 2 together
    for (let i = 0; i < 100; i++) sessions.push(['9', String(100 + i)]);
    for (let i = 0; i < 6; i++) sessions.push(['1', '2', '9']);
    const s = new StoreRelations();
    s.apply('co_view', null, coViews(sessions));
    const ranked = s.neighbours('co_view', ['1']).map((n) => n.productId);
    expect(ranked[0]).toBe('2');
    expect(ranked).toContain('9');
    // raw counts tie (6 and 6); the cosine separates them: 6/√(6·6) = 1 against 6/√(6·106), each shrunk
    // by its support 6/(6 + k)
    const [two, nine] = ['2', '9'].map((id) => s.neighbours('co_view', ['1']).find((n) => n.productId === id));
    expect(two?.score).toBeCloseTo(shrunk(6), 6);
    expect(nine?.score).toBeCloseTo((6 / Math.sqrt(6 * 106)) * shrunk(6), 6);
  });

  it('sums the scores of several anchors, never returns an anchor or an excluded product', () => {
    const s = new StoreRelations();
    s.apply(
      'co_view',
      null,
      coViews([
        ['1', '3'],
        ['2', '3'],
        ['1', '4'],
        ['1', '2'],
      ]),
    );
    const r = s.neighbours('co_view', ['1', '2'], new Set(['4']));
    expect(r.map((n) => n.productId)).toEqual(['3']);
    expect(r[0].support).toBe(2);
  });

  it('a change replaces exactly the re-read anchors; a product with no rows left has no neighbours', () => {
    const s = new StoreRelations();
    s.apply(
      'co_purchase',
      null,
      coViews([
        ['1', '2'],
        ['3', '4'],
      ]),
    );
    expect(s.neighbours('co_purchase', ['1']).map((n) => n.productId)).toEqual(['2']);
    // orders 1+2 cancelled: the re-read of 1 and 2 finds nothing
    s.apply('co_purchase', ['1', '2'], []);
    expect(s.neighbours('co_purchase', ['1'])).toEqual([]);
    expect(s.neighbours('co_purchase', ['3']).map((n) => n.productId)).toEqual(['4']);
    expect(s.has('co_purchase')).toBe(true);
    expect(s.has('co_cart')).toBe(false);
  });

  it('viewed-then-bought normalizes by the anchor’s views and the bought product’s purchases after any view', () => {
    const s = new StoreRelations();
    s.apply('co_view', null, [
      { a: '1', b: '1', n: 10 },
      { a: '5', b: '5', n: 10 },
    ]);
    s.apply('viewed_then_bought', null, [
      { a: '1', b: '2', n: 3 },
      { a: '1', b: '3', n: 3 },
    ]);
    s.setBoughtTotals(
      new Map([
        ['2', 3],
        ['3', 300],
      ]),
      null,
    );
    const r = s.neighbours('viewed_then_bought', ['1']);
    expect(r.map((n) => n.productId)).toEqual(['2', '3']);
    expect(r[0].score).toBeCloseTo((3 / Math.sqrt(10 * 3)) * shrunk(3), 6);
  });

  it('a pattern six sessions repeated outranks one-off pairs with rarely viewed products, even when its product is popular', () => {
    const sessions: string[][] = [];
    // the anchor 1 was viewed once each with 15 products nobody else viewed
    for (let i = 0; i < 15; i++) sessions.push(['1', String(100 + i)]);
    // product 2 is popular (80 other sessions), and six sessions viewed 1 then 2
    for (let i = 0; i < 80; i++) sessions.push(['2', String(500 + i)]);
    for (let i = 0; i < 6; i++) sessions.push(['1', '2']);
    const s = new StoreRelations();
    s.apply('co_view', null, coViews(sessions));
    const ranked = s.neighbours('co_view', ['1']);
    // without the shrinkage 2 scores 6/√(21·86) ≈ 0.141 against 1/√21 ≈ 0.218 for each one-off pair:
    // 16th of 16, out of a 12-product block
    expect(ranked[0].productId).toBe('2');
    expect(ranked[0].support).toBe(6);
  });
});
