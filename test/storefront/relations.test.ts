// The relations index of the recommendation blocks (services/storefront/blocks/relations.ts): scores are
// popularity-normalized co-occurrence, so a best seller that co-occurs with everything does not top
// every block; several anchors sum; a change re-read for some anchors replaces exactly their rows.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PAIR_SUPPORT_SHRINKAGE, type RelationKind, type RelationRow } from '../../clickhouse/queries/related.ts';
import { type Neighbour, StoreRelations } from '../../services/storefront/blocks/relations.ts';

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

  it('packed pairs answer exactly as the rows they were built from, after any sequence of loads and re-reads', () => {
    // the reference: rows kept as they arrive (anchor → its rows), scored the same way
    const reference = (
      state: Map<RelationKind, Map<string, RelationRow[]>>,
      bought: Map<string, number>,
      kind: RelationKind,
      anchors: string[],
      exclude: Set<string>,
      weights: Map<string, number>,
    ): Neighbour[] => {
      const rowsOf = state.get(kind) ?? new Map();
      const ownOf = (k: RelationKind, p: string) =>
        k === 'viewed_then_bought'
          ? bought.get(p)
          : state
              .get(k)
              ?.get(p)
              ?.find((r) => r.b === p)?.n;
      const anchorSet = new Set(anchors);
      const acc = new Map<string, Neighbour>();
      for (const a of anchorSet) {
        const w = weights.get(a) ?? 1;
        const na = kind === 'viewed_then_bought' ? ownOf('co_view', a) : ownOf(kind, a);
        for (const r of rowsOf.get(a) ?? []) {
          if (r.b === a || anchorSet.has(r.b) || exclude.has(r.b)) continue;
          const nb = ownOf(kind, r.b);
          const score =
            (w * (r.n / Math.sqrt(Math.max(na ?? r.n, r.n) * Math.max(nb ?? r.n, r.n))) * r.n) /
            (r.n + PAIR_SUPPORT_SHRINKAGE);
          const cur = acc.get(r.b);
          if (cur) {
            cur.score += score;
            cur.support += r.n;
          } else acc.set(r.b, { productId: r.b, score, support: r.n });
        }
      }
      return [...acc.values()].sort(
        (x, y) => y.score - x.score || y.support - x.support || (x.productId < y.productId ? -1 : 1),
      );
    };
    const id = fc.constantFrom('1', '2', '3', '4', '5', '6', '7', '8');
    const kind = fc.constantFrom<RelationKind>('co_view', 'co_cart', 'co_purchase', 'viewed_then_bought');
    const row = fc.record({
      a: id,
      b: id,
      n: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.double({ min: 0.5, max: 9 })),
    });
    const step = fc.oneof(
      fc.record({
        t: fc.constant('apply' as const),
        kind,
        anchors: fc.option(fc.uniqueArray(id, { maxLength: 4 })),
        rows: fc.array(row, { maxLength: 25 }),
      }),
      fc.record({
        t: fc.constant('bought' as const),
        products: fc.option(fc.uniqueArray(id, { maxLength: 4 })),
        totals: fc.array(fc.tuple(id, fc.integer({ min: 0, max: 9 })), { maxLength: 8 }),
      }),
    );
    const query = fc.record({
      kind,
      anchors: fc.uniqueArray(id, { minLength: 1, maxLength: 3 }),
      exclude: fc.uniqueArray(id, { maxLength: 2 }),
      weights: fc.array(fc.tuple(id, fc.double({ min: 0.1, max: 3 })), { maxLength: 3 }),
    });
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 8 }),
        fc.array(query, { minLength: 1, maxLength: 4 }),
        (steps, queries) => {
          const s = new StoreRelations();
          const state = new Map<RelationKind, Map<string, RelationRow[]>>();
          let bought = new Map<string, number>();
          for (const st of steps) {
            if (st.t === 'apply') {
              // distinct (a, b) per read, strongest first, as the SQL returns them
              const seen = new Set<string>();
              const rows = st.rows
                .filter((r) => !seen.has(`${r.a}|${r.b}`) && seen.add(`${r.a}|${r.b}`))
                .sort((x, y) => (x.a < y.a ? -1 : x.a > y.a ? 1 : y.n - x.n));
              const read = st.anchors ? rows.filter((r) => st.anchors?.includes(r.a)) : rows;
              // fresh strings, as a read of ClickHouse gives them
              s.apply(
                st.kind,
                st.anchors,
                read.map((r) => ({ a: `${r.a}`.concat(''), b: [r.b].join(''), n: r.n })),
              );
              const byAnchor = state.get(st.kind) ?? new Map<string, RelationRow[]>();
              // without anchors, the anchors are those the rows name (a load fills a new index)
              for (const a of st.anchors ?? read.map((r) => r.a)) byAnchor.delete(a);
              for (const r of read) byAnchor.set(r.a, [...(byAnchor.get(r.a) ?? []), r]);
              state.set(st.kind, byAnchor);
            } else {
              const totals = new Map(st.totals.filter(([, n]) => n > 0));
              s.setBoughtTotals(totals, st.products);
              if (!st.products) bought = new Map(totals);
              else
                for (const p of st.products) totals.has(p) ? bought.set(p, totals.get(p) as number) : bought.delete(p);
            }
          }
          for (const q of queries) {
            const exclude = new Set(q.exclude);
            const weights = new Map(q.weights);
            expect(s.neighbours(q.kind, q.anchors, exclude, weights)).toEqual(
              reference(state, bought, q.kind, q.anchors, exclude, weights),
            );
            expect(s.has(q.kind)).toBe(
              [...(state.get(q.kind)?.values() ?? [])].some((rows) => rows.some((r) => r.b !== r.a)),
            );
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
