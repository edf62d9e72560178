// Related products from the behavioural pair aggregates, for product and cart anchors.
//
// Strategies and their tables:
//   co_view            customers also viewed         co_view_pairs (sessions)
//   co_cart            customers also added to cart  co_cart_pairs (sessions; relaxed co-purchase)
//   co_purchase        frequently bought together    co_purchase_pairs (orders)
//   viewed_then_bought viewed this, then bought      viewed_then_bought (purchases)
// Scores are normalized for popularity so best-sellers do not dominate: for the symmetric pairs
// cosine = n_ab / sqrt(n_aa · n_bb) (the diagonal n_aa is how many sessions/orders had the product);
// for viewed-then-bought n_vb / sqrt(sessions that viewed v · purchases of b after any view).
// Each score is shrunk by its support, n / (n + PAIR_SUPPORT_SHRINKAGE) (significance weighting): a pair
// seen once with a product nobody else viewed has cosine 1/√n_aa, the most one co-occurrence can give,
// and without the shrinkage such one-off pairs outrank a pattern six sessions repeated whenever its
// product is also popular elsewhere. With several anchors (a cart) the per-anchor scores of a candidate
// are summed; anchors and `excludeProductIds` are never returned. The read API's relations index
// (services/storefront/blocks/relations.ts) scores the same way from the rows it holds.
import type { Db } from '../client.ts';
import { clampInt, productIds } from './common.ts';

/** pseudo-count of the support shrinkage n / (n + k): a pair's score counts half at k co-occurrences */
export const PAIR_SUPPORT_SHRINKAGE = 5;

export type RelatedStrategy = 'co_view' | 'co_cart' | 'co_purchase' | 'viewed_then_bought';

export interface RelatedOptions {
  storeId: string;
  strategy: RelatedStrategy;
  /** the anchor product, or the cart's products */
  productIds: readonly (string | number)[];
  excludeProductIds?: readonly (string | number)[];
  limit?: number;
  /** look-back in days (default 90) */
  days?: number;
  /** minimum co-occurrences with the anchors (default 1) */
  minSupport?: number;
  now?: Date;
}

export interface RelatedProduct {
  productId: string;
  score: number;
  /** co-occurrence count summed over the anchors */
  support: number;
}

const SYMMETRIC: Record<Exclude<RelatedStrategy, 'viewed_then_bought'>, { table: string; measure: string }> = {
  co_view: { table: 'co_view_pairs', measure: 'sessions' },
  co_cart: { table: 'co_cart_pairs', measure: 'sessions' },
  co_purchase: { table: 'co_purchase_pairs', measure: 'orders' },
};

export async function relatedProducts(db: Db, opts: RelatedOptions): Promise<RelatedProduct[]> {
  const anchors = productIds(opts.productIds);
  if (anchors.length === 0) return [];
  const params = {
    store: opts.storeId,
    anchors: anchors.map(BigInt),
    exclude: productIds(opts.excludeProductIds ?? []).map(BigInt),
    since: (opts.now ?? new Date(Date.now())).toISOString().slice(0, 10),
    days: clampInt(opts.days, 1, 3650, 90),
    minSupport: clampInt(opts.minSupport, 1, 1_000_000, 1),
    limit: clampInt(opts.limit, 1, 1000, 20),
    shrink: PAIR_SUPPORT_SHRINKAGE,
  };
  let sql: string;
  if (opts.strategy === 'viewed_then_bought') {
    sql = `WITH
        toDate({since:String}) - {days:UInt32} AS from_day,
        pairs AS (
          SELECT viewed_id AS a, bought_id AS b, sum(purchases) AS n FROM viewed_then_bought
          WHERE store_id = {store:String} AND viewed_id IN {anchors:Array(UInt64)} AND day >= from_day
          GROUP BY a, b HAVING n > 0),
        viewed AS (
          SELECT product_a AS p, sum(sessions) AS n FROM co_view_pairs
          WHERE store_id = {store:String} AND product_a = product_b AND product_a IN {anchors:Array(UInt64)} AND day >= from_day
          GROUP BY p),
        bought AS (
          SELECT bought_id AS p, sum(purchases) AS n FROM viewed_then_bought
          WHERE store_id = {store:String} AND bought_id IN (SELECT b FROM pairs) AND day >= from_day
          GROUP BY p)
      SELECT toString(pairs.b) AS pid, sum(pairs.n / sqrt(greatest(viewed.n, pairs.n) * greatest(bought.n, pairs.n)) * pairs.n / (pairs.n + {shrink:Float64})) AS score, sum(pairs.n) AS support
      FROM pairs LEFT JOIN viewed ON viewed.p = pairs.a LEFT JOIN bought ON bought.p = pairs.b
      WHERE pairs.b NOT IN {anchors:Array(UInt64)} AND pairs.b NOT IN {exclude:Array(UInt64)}
      GROUP BY pairs.b HAVING support >= {minSupport:UInt32}
      ORDER BY score DESC, support DESC, pairs.b ASC
      LIMIT {limit:UInt32}`;
  } else {
    const { table, measure } = SYMMETRIC[opts.strategy];
    sql = `WITH
        toDate({since:String}) - {days:UInt32} AS from_day,
        pairs AS (
          SELECT product_a AS a, product_b AS b, sum(${measure}) AS n FROM ${table}
          WHERE store_id = {store:String} AND product_a IN {anchors:Array(UInt64)} AND day >= from_day
          GROUP BY a, b HAVING n > 0),
        diag AS (
          SELECT product_a AS p, sum(${measure}) AS n FROM ${table}
          WHERE store_id = {store:String} AND product_a = product_b AND product_a IN (SELECT b FROM pairs) AND day >= from_day
          GROUP BY p HAVING n > 0)
      SELECT toString(pairs.b) AS pid, sum(pairs.n / sqrt(da.n * db.n) * pairs.n / (pairs.n + {shrink:Float64})) AS score, sum(pairs.n) AS support
      FROM pairs INNER JOIN diag AS da ON da.p = pairs.a INNER JOIN diag AS db ON db.p = pairs.b
      WHERE pairs.a != pairs.b AND pairs.b NOT IN {anchors:Array(UInt64)} AND pairs.b NOT IN {exclude:Array(UInt64)}
      GROUP BY pairs.b HAVING support >= {minSupport:UInt32}
      ORDER BY score DESC, support DESC, pairs.b ASC
      LIMIT {limit:UInt32}`;
  }
  const rows = await db.query<{ pid: string; score: number; support: string }>(sql, params);
  return rows.map((r) => ({ productId: r.pid, score: Number(r.score), support: Number(r.support) }));
}

// ─── the read API's relations index (services/storefront/blocks/relations.ts) ───────────────────────────

/** the pair aggregates the recommendation blocks read */
export type RelationKind = 'co_view' | 'co_cart' | 'co_purchase' | 'viewed_then_bought';

const RELATION_TABLES: Record<RelationKind, { table: string; a: string; b: string; measure: string }> = {
  co_view: { table: 'co_view_pairs', a: 'product_a', b: 'product_b', measure: 'sessions' },
  co_cart: { table: 'co_cart_pairs', a: 'product_a', b: 'product_b', measure: 'sessions' },
  co_purchase: { table: 'co_purchase_pairs', a: 'product_a', b: 'product_b', measure: 'orders' },
  viewed_then_bought: { table: 'viewed_then_bought', a: 'viewed_id', b: 'bought_id', measure: 'purchases' },
};

export interface RelationRow {
  a: string;
  b: string;
  /** co-occurrences in the window (for the symmetric pairs the diagonal a = b is the product's own count) */
  n: number;
}

/**
 * A store's pair rows of one kind over the last `days` days, at most `perAnchor` per anchor (the
 * strongest; for the symmetric pairs the diagonal is always among them, being the largest), optionally
 * only for the given anchors.
 */
export async function relationRows(
  db: Db,
  opts: {
    storeId: string;
    kind: RelationKind;
    anchors?: readonly string[];
    days?: number;
    perAnchor?: number;
    now?: Date;
  },
): Promise<RelationRow[]> {
  const t = RELATION_TABLES[opts.kind];
  const anchors = opts.anchors ? productIds(opts.anchors) : null;
  if (anchors && anchors.length === 0) return [];
  const rows = await db.query<{ a: string; b: string; n: number }>(
    `SELECT toString(${t.a}) AS a, toString(${t.b}) AS b, toFloat64(sum(${t.measure})) AS n
     FROM ${t.table}
     WHERE store_id = {store:String} AND day >= toDate({since:String}) - {days:UInt32}
       ${anchors ? `AND ${t.a} IN {anchors:Array(UInt64)}` : ''}
     GROUP BY ${t.a}, ${t.b}
     HAVING n > 0
     ORDER BY ${t.a}, n DESC, ${t.b}
     LIMIT {per:UInt32} BY ${t.a}`,
    {
      store: opts.storeId,
      since: (opts.now ?? new Date()).toISOString().slice(0, 10),
      days: clampInt(opts.days, 1, 3650, 90),
      per: clampInt(opts.perAnchor, 1, 10_000, 200),
      ...(anchors ? { anchors: anchors.map(BigInt) } : {}),
    },
  );
  return rows.map((r) => ({ a: r.a, b: r.b, n: Number(r.n) }));
}

/** viewed-then-bought: purchases of each bought product after any view (the normalizer of that kind) */
export async function boughtAfterViewTotals(
  db: Db,
  opts: { storeId: string; products?: readonly string[]; days?: number; now?: Date },
): Promise<Map<string, number>> {
  const products = opts.products ? productIds(opts.products) : null;
  if (products && products.length === 0) return new Map();
  const rows = await db.query<{ p: string; n: number }>(
    `SELECT toString(bought_id) AS p, toFloat64(sum(purchases)) AS n FROM viewed_then_bought
     WHERE store_id = {store:String} AND day >= toDate({since:String}) - {days:UInt32}
       ${products ? 'AND bought_id IN {products:Array(UInt64)}' : ''}
     GROUP BY bought_id HAVING n > 0`,
    {
      store: opts.storeId,
      since: (opts.now ?? new Date()).toISOString().slice(0, 10),
      days: clampInt(opts.days, 1, 3650, 90),
      ...(products ? { products: products.map(BigInt) } : {}),
    },
  );
  return new Map(rows.map((r) => [r.p, Number(r.n)]));
}
