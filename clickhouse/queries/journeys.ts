// Search journeys: which products shoppers viewed / bought after searching a query in the same session
// (the searched_then_viewed and searched_then_purchased blocks take the query from the last prior
// search). Ranked by how many sessions (purchases) made the journey, popularity-normalized as
// n_qp / sqrt(n_p) so that the store's best-sellers do not top every query.
import type { Db } from '../client.ts';
import { normalizeQuery } from '../../schemas/fields.ts';
import { clampInt, productIds } from './common.ts';

export interface JourneyProduct {
  productId: string;
  score: number;
  /** sessions (viewed) or purchases (purchased) for this query and product */
  count: number;
}

async function journey(
  db: Db,
  table: 'searched_then_viewed' | 'searched_then_purchased',
  measure: 'sessions' | 'purchases',
  opts: {
    storeId: string;
    query: string;
    limit?: number;
    days?: number;
    excludeProductIds?: readonly (string | number)[];
    now?: Date;
  },
): Promise<JourneyProduct[]> {
  const query = normalizeQuery(opts.query);
  if (query === '') return [];
  const rows = await db.query<{ pid: string; score: number; cnt: string }>(
    `WITH toDate({today:String}) - {days:UInt32} AS from_day,
       q AS (
         SELECT product_id, sum(${measure}) AS n FROM ${table}
         WHERE store_id = {store:String} AND query = {query:String} AND day >= from_day
           AND product_id NOT IN {exclude:Array(UInt64)}
         GROUP BY product_id HAVING n > 0),
       p AS (
         SELECT product_id, sum(${measure}) AS n FROM ${table}
         WHERE store_id = {store:String} AND product_id IN (SELECT product_id FROM q) AND day >= from_day
         GROUP BY product_id)
     SELECT toString(q.product_id) AS pid, q.n / sqrt(p.n) AS score, q.n AS cnt
     FROM q INNER JOIN p ON p.product_id = q.product_id
     ORDER BY score DESC, cnt DESC, q.product_id ASC
     LIMIT {limit:UInt32}`,
    {
      store: opts.storeId,
      query,
      exclude: productIds(opts.excludeProductIds ?? []).map(BigInt),
      today: (opts.now ?? new Date()).toISOString().slice(0, 10),
      days: clampInt(opts.days, 1, 3650, 90),
      limit: clampInt(opts.limit, 1, 1000, 20),
    },
  );
  return rows.map((r) => ({ productId: r.pid, score: Number(r.score), count: Number(r.cnt) }));
}

export function searchedThenViewed(db: Db, opts: Parameters<typeof journey>[3]): Promise<JourneyProduct[]> {
  return journey(db, 'searched_then_viewed', 'sessions', opts);
}

export function searchedThenPurchased(db: Db, opts: Parameters<typeof journey>[3]): Promise<JourneyProduct[]> {
  return journey(db, 'searched_then_purchased', 'purchases', opts);
}
