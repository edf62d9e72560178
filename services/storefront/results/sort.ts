// Ordering tiles by a configured sort order (schemas/config.ts SortOrderConfig) and by merchandising
// boosts and pins.
//
// A sort order's expressions, in order:
// - plain (`{attribute, direction}`): lexicographic keys, in the order given;
// - weighted (`weight` set): one combined score Σ weight·value / Σ weight, each value min-max normalized
//   over the tiles being sorted (`asc` inverts it), taking the key position of the first weighted one;
// - boosts (`boost` set): the attribute's normalized value v scales the score (multiplicative:
//   score·(1 + (factor − 1)·v); additive: score + factor·v). The score is the weighted one when the
//   order has one, else the rank the plain keys give (1 − index / count), re-sorted after boosting.
// Missing values sort last in either direction; ties keep the collection order, then the product id.
// `relevance` on browse is the collection's own order (its member positions).
import type { ConditionGroup, ConfigPayload } from '../../../schemas/config.ts';
import { StorefrontError } from '../errors.ts';
import { compileGroup, type Predicate } from './conditions.ts';
import type { Scope } from './scope.ts';
import { propertyOf, sortValueOf, type Tile } from './tiles.ts';

type SortOrder = ConfigPayload<'sort_order'>;
type Value = number | string | null;

function normalizer(values: Value[]): (v: Value) => number {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values)
    if (typeof v === 'number') {
      if (v < min) min = v;
      if (v > max) max = v;
    }
  const span = max - min;
  return (v) => (typeof v !== 'number' ? 0 : span > 0 ? (v - min) / span : 1);
}

function compareValues(a: Value, b: Value, desc: boolean): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  const c = typeof a === 'number' && typeof b === 'number' ? a - b : String(a) < String(b) ? -1 : 1;
  return desc ? -c : c;
}

const baseOrder = (a: Tile, b: Tile) => a.position - b.position || a.item.order - b.item.order;

/** the accessor of a sort attribute; an unknown one makes the configured order unusable (500 is wrong: skip it) */
function valueGetter(attribute: string, scope: Scope): (t: Tile) => Value {
  const get = sortValueOf(attribute, scope);
  return typeof get === 'string' ? () => null : get;
}

export function sortTiles(tiles: Tile[], order: SortOrder | null, scope: Scope): Tile[] {
  if (!order) return tiles.sort(baseOrder);
  const plain: { get: (t: Tile) => Value; desc: boolean }[] = [];
  const weighted: { get: (t: Tile) => Value; desc: boolean; weight: number }[] = [];
  const boosts: { get: (t: Tile) => Value; mode: 'multiplicative' | 'additive'; factor: number }[] = [];
  let weightedAt = -1;
  for (const e of order.expressions) {
    const get = valueGetter(e.attribute, scope);
    if (e.boost) boosts.push({ get, mode: e.boost.mode, factor: e.boost.factor });
    else if (e.weight !== undefined) {
      if (weightedAt < 0) weightedAt = plain.length;
      weighted.push({ get, desc: e.direction === 'desc', weight: e.weight });
    } else plain.push({ get, desc: e.direction === 'desc' });
  }
  const n = tiles.length;
  // per-tile values, computed once
  const plainValues = plain.map((k) => tiles.map(k.get));
  const score = new Float64Array(n);
  if (weighted.length > 0) {
    const total = weighted.reduce((s, w) => s + w.weight, 0) || 1;
    for (const w of weighted) {
      const values = tiles.map(w.get);
      const norm = normalizer(values);
      for (let i = 0; i < n; i++) {
        const x = norm(values[i]);
        score[i] += (w.weight * (w.desc ? x : 1 - x)) / total;
      }
    }
    applyBoosts(tiles, score, boosts);
  }
  // the keys in order: plain keys, with the weighted score at the position of the first weighted expression
  const keys: number[] = plain.map((_, k) => k);
  if (weightedAt >= 0) keys.splice(weightedAt, 0, -1);
  const index = new Map(tiles.map((t, i) => [t, i]));
  const cmp = (a: Tile, b: Tile): number => {
    const i = index.get(a) as number;
    const j = index.get(b) as number;
    for (const k of keys) {
      const c = k < 0 ? score[j] - score[i] : compareValues(plainValues[k][i], plainValues[k][j], plain[k].desc);
      if (c !== 0) return c;
    }
    return baseOrder(a, b);
  };
  tiles.sort(cmp);
  if (weighted.length === 0 && boosts.length > 0) return rescore(tiles, (s) => applyBoosts(tiles, s, boosts));
  return tiles;
}

function applyBoosts(
  tiles: readonly Tile[],
  score: Float64Array,
  boosts: { get: (t: Tile) => Value; mode: 'multiplicative' | 'additive'; factor: number }[],
): void {
  for (const b of boosts) {
    const values = tiles.map(b.get);
    const norm = normalizer(values);
    for (let i = 0; i < tiles.length; i++) {
      const v = typeof values[i] === 'number' ? norm(values[i]) : 0;
      score[i] = b.mode === 'multiplicative' ? score[i] * (1 + (b.factor - 1) * v) : score[i] + b.factor * v;
    }
  }
}

/** rank scores (1 − index / count) of an ordered list, adjusted by `adjust`, then a stable re-sort */
function rescore(tiles: Tile[], adjust: (score: Float64Array) => void): Tile[] {
  const n = tiles.length;
  const score = new Float64Array(n);
  for (let i = 0; i < n; i++) score[i] = 1 - i / Math.max(n, 1);
  adjust(score);
  const order = tiles.map((t, i) => ({ t, i, s: score[i] }));
  order.sort((a, b) => b.s - a.s || a.i - b.i);
  return order.map((o) => o.t);
}

/** Merchandising-rule boosts: products matching `match` get `factor` (on the rank score of the sorted list). */
export function applyMerchBoosts(
  tiles: Tile[],
  boosts: readonly { match: ConditionGroup; mode: 'multiplicative' | 'additive'; factor: number }[],
  scope: Scope,
): Tile[] {
  if (boosts.length === 0 || tiles.length === 0) return tiles;
  const compiled = boosts.map((b) => ({
    match: compileGroup<Tile>(
      b.match,
      (p) => propertyOf(p, scope),
      () => undefined,
    ) as Predicate<Tile>,
    mode: b.mode,
    factor: b.factor,
  }));
  return rescore(tiles, (score) => {
    tiles.forEach((t, i) => {
      for (const b of compiled)
        if (b.match(t)) score[i] = b.mode === 'multiplicative' ? score[i] * b.factor : score[i] + b.factor;
    });
  });
}

/**
 * Pin products to 1-based positions (merchandising pins, dynamic linking): each pinned product's first
 * tile moves to its position; products not among the tiles are skipped and later pins move up.
 */
export function pinTiles(tiles: Tile[], pins: readonly string[]): { tiles: Tile[]; pinned: string[] } {
  if (pins.length === 0) return { tiles, pinned: [] };
  const firstOf = new Map<string, Tile>();
  for (const t of tiles) if (!firstOf.has(t.item.p.id)) firstOf.set(t.item.p.id, t);
  const pinnedTiles: Tile[] = [];
  const pinned: string[] = [];
  for (const id of pins) {
    const t = firstOf.get(id);
    if (!t || pinned.includes(id)) continue;
    pinnedTiles.push(t);
    pinned.push(id);
  }
  const moved = new Set(pinnedTiles);
  return { tiles: [...pinnedTiles, ...tiles.filter((t) => !moved.has(t))], pinned };
}

/** Merchandising pins at explicit positions (1-based); a pin past the end lands at the end. */
export function pinAt(tiles: Tile[], pins: readonly { productId: string; position: number }[]): Tile[] {
  if (pins.length === 0) return tiles;
  const firstOf = new Map<string, Tile>();
  for (const t of tiles) if (!firstOf.has(t.item.p.id)) firstOf.set(t.item.p.id, t);
  const chosen = [...pins].sort((a, b) => a.position - b.position).filter((p) => firstOf.has(p.productId));
  const moved = new Set(chosen.map((p) => firstOf.get(p.productId) as Tile));
  const rest = tiles.filter((t) => !moved.has(t));
  for (const p of chosen) rest.splice(Math.min(p.position - 1, rest.length), 0, firstOf.get(p.productId) as Tile);
  return rest;
}

/** the sort order for a code on an endpoint scope (`collection` for browse); 422 naming the field */
export function resolveSortOrder(
  code: string,
  orders: readonly SortOrder[],
  endpointScope: 'collection' | 'search',
  field = 'sort_order_code',
): SortOrder | null {
  if (code === 'relevance') return null;
  const order = orders.find((o) => o.code === code);
  if (!order)
    throw new StorefrontError(422, 'validation_failed', 'The request is invalid; see error.fields.', [
      { path: field, message: `unknown sort order ${JSON.stringify(code)}; GET /sort-orders lists them` },
    ]);
  if (order.scope !== 'both' && order.scope !== endpointScope)
    throw new StorefrontError(422, 'validation_failed', 'The request is invalid; see error.fields.', [
      { path: field, message: `sort order ${code} is for ${order.scope} only` },
    ]);
  return order;
}
