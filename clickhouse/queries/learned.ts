// What shoppers chose after searching a query: per normalized query, the products viewed (or clicked),
// added to the cart and bought later in the same session, over the last `days` days, from
// searched_then_viewed, searched_then_carted and searched_then_purchased. Search's learned relevance
// (services/storefront/search/learned.ts) loads a store with `learnedForStore` and re-reads the queries
// named on `agg:search` with `learnedForQueries`. Per query, the `perQuery` products with the most
// engagement (views + 3·carts + 5·purchases) are kept.
import type { Db } from '../client.ts';
import { clampInt } from './common.ts';

export interface LearnedRow {
  query: string;
  productId: string;
  /** sessions that viewed or clicked it after the query */
  views: number;
  /** sessions that carted it after the query */
  carts: number;
  /** purchases of it after the query */
  purchases: number;
}

interface Options {
  storeId: string;
  /** window in days (default 30) */
  days?: number;
  /** products kept per query (default 50) */
  perQuery?: number;
  now?: Date;
}

async function learned(
  db: Db,
  opts: Options & { queries: string[] | null; maxQueries?: number },
): Promise<LearnedRow[]> {
  const rows = await db.query<{ query: string; pid: string; nv: string; nc: string; np: string }>(
    `WITH toDate({today:String}) - {days:UInt32} AS from_day
     SELECT query, toString(product_id) AS pid, toString(sum(v)) AS nv, toString(sum(c)) AS nc, toString(sum(p)) AS np
     FROM (
       SELECT query, product_id, sessions AS v, 0 AS c, 0 AS p FROM searched_then_viewed
       WHERE store_id = {store:String} AND day >= from_day AND ({all:Bool} OR query IN {queries:Array(String)})
       UNION ALL
       SELECT query, product_id, 0, sessions, 0 FROM searched_then_carted
       WHERE store_id = {store:String} AND day >= from_day AND ({all:Bool} OR query IN {queries:Array(String)})
       UNION ALL
       SELECT query, product_id, 0, 0, purchases FROM searched_then_purchased
       WHERE store_id = {store:String} AND day >= from_day AND ({all:Bool} OR query IN {queries:Array(String)})
     )
     GROUP BY query, product_id
     ORDER BY query, sum(v) + 3 * sum(c) + 5 * sum(p) DESC, product_id
     LIMIT {perQuery:UInt32} BY query
     LIMIT {maxRows:UInt32}`,
    {
      store: opts.storeId,
      today: (opts.now ?? new Date()).toISOString().slice(0, 10),
      days: clampInt(opts.days, 1, 3650, 30),
      all: opts.queries === null,
      queries: opts.queries ?? [],
      perQuery: clampInt(opts.perQuery, 1, 1000, 50),
      maxRows: clampInt(opts.maxQueries, 1, 1_000_000, 20_000) * clampInt(opts.perQuery, 1, 1000, 50),
    },
  );
  return rows.map((r) => ({
    query: r.query,
    productId: r.pid,
    views: Number(r.nv),
    carts: Number(r.nc),
    purchases: Number(r.np),
  }));
}

/** Every query of a store (at most `maxQueries` × `perQuery` rows, default 20 000 queries). */
export function learnedForStore(db: Db, opts: Options & { maxQueries?: number }): Promise<LearnedRow[]> {
  return learned(db, { ...opts, queries: null });
}

/** Only these normalized queries (what `agg:search` names). */
export function learnedForQueries(db: Db, opts: Options & { queries: string[] }): Promise<LearnedRow[]> {
  if (opts.queries.length === 0) return Promise.resolve([]);
  return learned(db, { ...opts, queries: opts.queries });
}
