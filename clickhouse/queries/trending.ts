// Trending queries per store (and optionally per country), for autocomplete and "trending now".
//
// Votes: distinct voters (session, else device) who searched the normalized query in an hourly bucket —
// one shopper cannot inflate a query. Score = an uptick: the recent window's votes, decayed with a
// half-life, against what the baseline window predicts for the same span:
//   score = (Σ_recent votes·2^(−age/halfLife) + 1) / (baselineVotesPerHour · effectiveHours + 1)
// where effectiveHours = ∫ of the decay over the recent window, and a query needs at least `minVoters`
// votes in the recent window. A steady best-seller query scores ≈ 1, a new surge scores high.
import type { Db } from '../client.ts';
import type { TrendingCell } from '../../schemas/channels.ts';
import { normalizeQuery } from '../../schemas/fields.ts';
import { chNow, clampInt } from './common.ts';

export interface TrendingOptions {
  storeId: string;
  /** ISO 3166-1 alpha-2; omitted = store-wide (a voter counts once across countries) */
  country?: string;
  /** only queries starting with this (normalized) prefix */
  prefix?: string;
  limit?: number;
  /** recent window, hours (default 24) */
  windowHours?: number;
  /** baseline window before the recent one, hours (default 7 days) */
  baselineHours?: number;
  /** decay half-life inside the recent window, hours (default 6) */
  halfLifeHours?: number;
  /** minimum distinct voters in the recent window (default 2) */
  minVoters?: number;
  /** evaluation time (tests, backfills); default now */
  now?: Date;
}

export interface TrendingQuery {
  query: string;
  score: number;
  /** distinct voters per bucket, summed over the recent window */
  recentVotes: number;
  baselineVotesPerHour: number;
  searches: number;
  /** share of the recent window's searches that returned no results */
  zeroResultRate: number;
  /** sessions that viewed or clicked a product after searching the query since the window started
   *  (store-wide: the click signal has no country) */
  clickSessions: number;
}

export async function trendingQueries(db: Db, opts: TrendingOptions): Promise<TrendingQuery[]> {
  const windowHours = clampInt(opts.windowHours, 1, 24 * 30, 24);
  const baselineHours = clampInt(opts.baselineHours, 1, 24 * 90, 24 * 7);
  const halfLife = Math.max(0.1, opts.halfLifeHours ?? 6);
  const effectiveHours = (halfLife / Math.LN2) * (1 - 2 ** (-windowHours / halfLife));
  const rows = await db.query<{
    query: string;
    score: number;
    recent_votes: string;
    baseline: number;
    searches: string;
    zero: string;
    clicks: string;
  }>(
    `WITH
       toDateTime({now:String}, 'UTC') AS now_,
       now_ - toIntervalHour({window:UInt32}) AS window_start,
       window_start - toIntervalHour({baseline:UInt32}) AS baseline_start
     SELECT t.query AS query, t.score AS score, t.recent_votes AS recent_votes, t.baseline AS baseline, t.searches AS searches,
            t.zero AS zero, ifNull(c.click_sessions, 0) AS clicks
     FROM
     (
       SELECT
         query,
         (sumIf(votes * pow(2, -dateDiff('second', bucket, now_) / 3600 / {halfLife:Float64}), bucket >= window_start) + 1)
           / (sumIf(votes, bucket < window_start) / {baseline:UInt32} * {effective:Float64} + 1) AS score,
         sumIf(votes, bucket >= window_start) AS recent_votes,
         sumIf(votes, bucket < window_start) / {baseline:UInt32} AS baseline,
         sumIf(n_searches, bucket >= window_start) AS searches,
         sumIf(n_zero, bucket >= window_start) AS zero
       FROM
       (
         SELECT query, bucket, uniqExactMerge(voters) AS votes, sum(searches) AS n_searches, sum(zero_results) AS n_zero
         FROM trending_queries
         WHERE store_id = {store:String}
           AND ({country:String} = '' OR country = {country:String})
           AND bucket >= baseline_start AND bucket <= now_
           AND startsWith(query, {prefix:String})
         GROUP BY query, bucket
       )
       GROUP BY query
       HAVING recent_votes >= {minVoters:UInt32}
     ) AS t
     LEFT JOIN
     (
       SELECT query, sum(sessions) AS click_sessions FROM searched_then_viewed
       WHERE store_id = {store:String} AND day >= toDate(window_start) AND startsWith(query, {prefix:String})
       GROUP BY query
     ) AS c ON c.query = t.query
     ORDER BY score DESC, recent_votes DESC, query ASC
     LIMIT {limit:UInt32}`,
    {
      now: chNow(opts.now),
      window: windowHours,
      baseline: baselineHours,
      halfLife,
      effective: effectiveHours,
      store: opts.storeId,
      country: (opts.country ?? '').toUpperCase(),
      prefix: opts.prefix ? normalizeQuery(opts.prefix) : '',
      minVoters: clampInt(opts.minVoters, 1, 1_000_000, 2),
      limit: clampInt(opts.limit, 1, 1000, 10),
    },
  );
  return rows.map((r) => ({
    query: r.query,
    score: Number(r.score),
    recentVotes: Number(r.recent_votes),
    baselineVotesPerHour: Number(r.baseline),
    searches: Number(r.searches),
    zeroResultRate: Number(r.searches) > 0 ? Number(r.zero) / Number(r.searches) : 0,
    clickSessions: Number(r.clicks),
  }));
}

// ------------------------------------------------------------------------------------------------
// Trending cells: the one loader of the view `trending_queries` in the shape of the `agg:trending`
// messages (schemas/channels.ts), for the read API's autocomplete feed (full loads) and the processors'
// notifications (the current votes of the cells a chunk touched). The hour is selected as `bucket_s`: an
// alias named like the column would shadow it in WHERE.

/** A cell's identity: store, country, normalized query and hour (ISO, as in TrendingCell). */
export type TrendingKey = Pick<TrendingCell, 'store_id' | 'country' | 'query' | 'bucket'>;

const CELLS_SQL = (where: string) =>
  `SELECT store_id, country, query, toString(bucket) AS bucket_s, uniqExactMerge(voters) AS votes
   FROM trending_queries
   WHERE ${where}
   GROUP BY store_id, country, query, bucket
   HAVING votes > 0
   ORDER BY store_id, country, query, bucket`;

type CellRow = { store_id: string; country: string; query: string; bucket_s: string; votes: string | number };
const toCell = (r: CellRow): TrendingCell => ({
  store_id: r.store_id,
  country: r.country,
  query: r.query,
  bucket: `${r.bucket_s.replace(' ', 'T')}.000Z`,
  votes: Number(r.votes),
});
/** ISO hour → ClickHouse DateTime text */
const chHour = (iso: string) => iso.slice(0, 19).replace('T', ' ');

/** The stores with trending cells at or after `sinceMs`. */
export async function trendingStores(db: Db, sinceMs: number): Promise<string[]> {
  const rows = await db.query<{ store_id: string }>(
    `SELECT DISTINCT store_id FROM trending_queries WHERE bucket >= toDateTime({since:UInt32}, 'UTC') ORDER BY store_id`,
    { since: Math.floor(sinceMs / 1000) },
  );
  return rows.map((r) => r.store_id);
}

/**
 * Every trending cell with an hour at or after `sinceMs`: of one store, or of every store, one query per
 * store (scoped by `store_id` first, the table's primary key; the engine's single query slot is released
 * between stores).
 */
export async function loadTrendingCells(db: Db, opts: { sinceMs: number; storeId?: string }): Promise<TrendingCell[]> {
  const since = Math.floor(opts.sinceMs / 1000);
  const out: TrendingCell[] = [];
  for (const store of opts.storeId === undefined ? await trendingStores(db, opts.sinceMs) : [opts.storeId]) {
    const rows = await db.query<CellRow>(
      CELLS_SQL(`store_id = {store:String} AND bucket >= toDateTime({since:UInt32}, 'UTC')`),
      { store, since },
    );
    for (const r of rows) out.push(toCell(r));
  }
  return out;
}

/** The current votes of the given cells (those with votes; a key with none is left out). */
export async function trendingCellsOf(db: Db, keys: readonly TrendingKey[]): Promise<TrendingCell[]> {
  if (keys.length === 0) return [];
  const wanted = new Set(keys.map((k) => `${k.store_id}|${k.country}|${k.query}|${k.bucket}`));
  const rows = await db.query<CellRow>(
    CELLS_SQL(
      "store_id IN {stores:Array(String)} AND bucket IN {buckets:Array(DateTime('UTC'))} AND query IN {queries:Array(String)}",
    ),
    {
      stores: [...new Set(keys.map((k) => k.store_id))],
      buckets: [...new Set(keys.map((k) => chHour(k.bucket)))],
      queries: [...new Set(keys.map((k) => k.query))],
    },
  );
  return rows.map(toCell).filter((c) => wanted.has(`${c.store_id}|${c.country}|${c.query}|${c.bucket}`));
}
