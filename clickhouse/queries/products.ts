// Product-level rankings: best sellers (7-day revenue) and trending within a set of products (a
// collection's members, supplied by the caller from the catalog).
import type { Db } from '../client.ts';
import { clampInt, productIds } from './common.ts';

export interface BestSeller {
  productId: string;
  /** revenue in major units over the window, decimal string */
  revenue: string;
  units: number;
  orders: number;
}

/** Products by revenue over the last `days` days (default 7, the "best selling" sort recipe). */
export async function bestSellers(
  db: Db,
  opts: { storeId: string; days?: number; limit?: number; productIds?: readonly (string | number)[]; now?: Date },
): Promise<BestSeller[]> {
  const only = opts.productIds ? productIds(opts.productIds) : undefined;
  if (only && only.length === 0) return [];
  const rows = await db.query<{ pid: string; revenue_text: string; units_sold: string; order_count: string }>(
    `SELECT toString(product_id) AS pid, toString(sum(revenue)) AS revenue_text, sum(units) AS units_sold, sum(orders) AS order_count
     FROM product_daily_sales
     WHERE store_id = {store:String}
       AND day > toDate({today:String}) - {days:UInt32} AND day <= toDate({today:String})
       AND ({all:UInt8} = 1 OR product_id IN {only:Array(UInt64)})
     GROUP BY product_id
     HAVING sum(revenue) > 0
     ORDER BY sum(revenue) DESC, units_sold DESC, product_id ASC
     LIMIT {limit:UInt32}`,
    {
      store: opts.storeId,
      today: (opts.now ?? new Date()).toISOString().slice(0, 10),
      days: clampInt(opts.days, 1, 365, 7),
      all: only ? 0 : 1,
      only: (only ?? []).map(BigInt),
      limit: clampInt(opts.limit, 1, 10_000, 50),
    },
  );
  return rows.map((r) => ({
    productId: r.pid,
    revenue: r.revenue_text,
    units: Number(r.units_sold),
    orders: Number(r.order_count),
  }));
}

export interface TrendingProduct {
  productId: string;
  score: number;
  /** weighted engagement in the recent window */
  recent: number;
  /** weighted engagement per day in the baseline window */
  baselinePerDay: number;
}

/**
 * Trending among the given products (e.g. a collection's members): weighted engagement
 * (views + 3·add-to-carts + 5·units sold) of the last `recentDays` (default 3) against the daily rate of
 * the `baselineDays` before (default 14): score = (recent + 1) / (baselinePerDay · recentDays + 1).
 */
export async function trendingProducts(
  db: Db,
  opts: {
    storeId: string;
    productIds: readonly (string | number)[];
    recentDays?: number;
    baselineDays?: number;
    limit?: number;
    now?: Date;
  },
): Promise<TrendingProduct[]> {
  const ids = productIds(opts.productIds);
  if (ids.length === 0) return [];
  const recentDays = clampInt(opts.recentDays, 1, 60, 3);
  const baselineDays = clampInt(opts.baselineDays, 1, 365, 14);
  const rows = await db.query<{ pid: string; score: number; recent_w: number; baseline_w: number }>(
    `WITH toDate({today:String}) AS today_, today_ - {recent:UInt32} AS recent_start, recent_start - {baseline:UInt32} AS baseline_start
     SELECT toString(product_id) AS pid,
       (sumIf(w, day > recent_start) + 1) / (sumIf(w, day <= recent_start) / {baseline:UInt32} * {recent:UInt32} + 1) AS score,
       sumIf(w, day > recent_start) AS recent_w,
       sumIf(w, day <= recent_start) / {baseline:UInt32} AS baseline_w
     FROM
     (
       SELECT product_id, day, toFloat64(views + 3 * add_to_carts) AS w FROM product_daily_engagement
       WHERE store_id = {store:String} AND product_id IN {ids:Array(UInt64)} AND day > baseline_start AND day <= today_
       UNION ALL
       SELECT product_id, day, toFloat64(5 * units) AS w FROM product_daily_sales
       WHERE store_id = {store:String} AND product_id IN {ids:Array(UInt64)} AND day > baseline_start AND day <= today_
     )
     GROUP BY product_id
     HAVING recent_w > 0
     ORDER BY score DESC, recent_w DESC, product_id ASC
     LIMIT {limit:UInt32}`,
    {
      store: opts.storeId,
      ids: ids.map(BigInt),
      today: (opts.now ?? new Date()).toISOString().slice(0, 10),
      recent: recentDays,
      baseline: baselineDays,
      limit: clampInt(opts.limit, 1, 10_000, 50),
    },
  );
  return rows.map((r) => ({
    productId: r.pid,
    score: Number(r.score),
    recent: Number(r.recent_w),
    baselinePerDay: Number(r.baseline_w),
  }));
}

/** Engagement and sales totals of some products over the last `days` days (popularity signals). */
export async function productPopularity(
  db: Db,
  opts: { storeId: string; productIds: readonly (string | number)[]; days?: number; now?: Date },
): Promise<{ productId: string; views: number; clicks: number; addToCarts: number; units: number; revenue: string }[]> {
  const ids = productIds(opts.productIds);
  if (ids.length === 0) return [];
  const rows = await db.query<{ pid: string; v: string; c: string; a: string; u: string; r: string }>(
    `SELECT toString(product_id) AS pid, sum(views) AS v, sum(clicks) AS c, sum(add_to_carts) AS a,
            sum(units) AS u, toString(sum(revenue)) AS r
     FROM product_popularity_daily
     WHERE store_id = {store:String} AND product_id IN {ids:Array(UInt64)}
       AND day > toDate({today:String}) - {days:UInt32}
     GROUP BY product_id ORDER BY product_id`,
    {
      store: opts.storeId,
      ids: ids.map(BigInt),
      today: (opts.now ?? new Date()).toISOString().slice(0, 10),
      days: clampInt(opts.days, 1, 3650, 30),
    },
  );
  return rows.map((r) => ({
    productId: r.pid,
    views: Number(r.v),
    clicks: Number(r.c),
    addToCarts: Number(r.a),
    units: Number(r.u),
    revenue: r.r,
  }));
}
