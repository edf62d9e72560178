// Per-product ranking signals of a whole store, for the read API's in-process catalog index (the sort
// attributes `revenue_7d`, `trending` and `popularity`): one row per product with any activity.
//
// - revenue_7d: revenue over the last 7 days, major units (the "best selling" recipe)
// - trending: (recent + 1) / (baseline per day · recentDays + 1) over weighted engagement (views +
//   3·add-to-carts + 5·units), the formula of products.ts trendingProducts, 3 recent days vs 14 before
// - popularity: weighted engagement (views + 2·clicks + 3·add-to-carts + 5·units) over the last 30 days
import type { Db } from '../client.ts';

export interface ProductSignals {
  productId: string;
  revenue7d: number;
  trending: number;
  popularity: number;
}

export async function storeProductSignals(db: Db, storeId: string, now: Date = new Date()): Promise<ProductSignals[]> {
  const rows = await db.query<{ pid: string; revenue: number; trending: number; popularity: number }>(
    `WITH toDate({today:String}) AS today_, today_ - 3 AS recent_start, recent_start - 14 AS baseline_start
     SELECT toString(product_id) AS pid,
       toFloat64(sumIf(revenue, day > today_ - 7)) AS revenue,
       (sumIf(w, day > recent_start) + 1) / (sumIf(w, day <= recent_start AND day > baseline_start) / 14 * 3 + 1) AS trending,
       sumIf(p, day > today_ - 30) AS popularity
     FROM
     (
       SELECT product_id, day, toFloat64(views + 3 * add_to_carts + 5 * units) AS w,
              toFloat64(views + 2 * clicks + 3 * add_to_carts + 5 * units) AS p, revenue
       FROM product_popularity_daily
       WHERE store_id = {store:String} AND day > today_ - 30 AND day <= today_
     )
     GROUP BY product_id`,
    { store: storeId, today: now.toISOString().slice(0, 10) },
  );
  return rows.map((r) => ({
    productId: r.pid,
    revenue7d: Number(r.revenue),
    trending: Number(r.trending),
    popularity: Number(r.popularity),
  }));
}
