// Reads the trending cells the autocomplete index is built from (the view trending_queries: one row per
// store, country, UTC hour and normalized query; votes = distinct voters in that hour). One query per
// store, scoped by `store_id` first (the table's primary key), after listing the stores with data in
// the window. The hour is selected as `bucket_s`: an alias named like the column would shadow it in WHERE.
import type { Db } from '../../../clickhouse/client.ts';
import type { TrendingCell } from './feed.ts';

export async function trendingStores(db: Db, sinceMs: number): Promise<string[]> {
  const rows = await db.query<{ store_id: string }>(
    `SELECT DISTINCT store_id FROM trending_queries WHERE bucket >= toDateTime({since:UInt32}, 'UTC') ORDER BY store_id`,
    { since: Math.floor(sinceMs / 1000) },
  );
  return rows.map((r) => r.store_id);
}

export async function loadStoreTrendingCells(db: Db, storeId: string, sinceMs: number): Promise<TrendingCell[]> {
  const rows = await db.query<{ country: string; query: string; bucket_s: string; votes: string | number }>(
    `SELECT country, query, toString(bucket) AS bucket_s, uniqExactMerge(voters) AS votes
     FROM trending_queries
     WHERE store_id = {store:String} AND bucket >= toDateTime({since:UInt32}, 'UTC')
     GROUP BY country, query, bucket
     HAVING votes > 0`,
    { store: storeId, since: Math.floor(sinceMs / 1000) },
  );
  return rows.map((r) => ({
    store_id: storeId,
    country: r.country,
    query: r.query,
    bucketMs: Date.parse(`${r.bucket_s.replace(' ', 'T')}Z`),
    votes: Number(r.votes),
  }));
}

/** every store's cells in the window, store by store */
export async function loadTrendingCells(db: Db, sinceMs: number): Promise<TrendingCell[]> {
  const out: TrendingCell[] = [];
  for (const storeId of await trendingStores(db, sinceMs)) {
    for (const c of await loadStoreTrendingCells(db, storeId, sinceMs)) out.push(c);
  }
  return out;
}
