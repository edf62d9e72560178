// The site's ClickHouse reads (server-side parameters only): the arcade leaderboard from site_events_raw
// and the operations dashboard's series. The site's rows are keyed by `site` first; the platform
// aggregates the dashboard reads take an optional store ('' = every store).
import type { Db } from '../../clickhouse/client.ts';

export const SITE = 'public';

export interface LeaderboardRow {
  player: string;
  best: number;
  games: number;
}

export async function leaderboard(db: Db, limit = 10): Promise<LeaderboardRow[]> {
  const rows = await db.query<{ player: string; best: string; games: string }>(
    `SELECT player, toString(max(score)) AS best, toString(count()) AS games
     FROM site_events_raw
     WHERE site = {site:String} AND kind = 'arcade_score' AND player IS NOT NULL
     GROUP BY player ORDER BY max(score) DESC, player LIMIT {limit:UInt32}`,
    { site: SITE, limit },
  );
  return rows.map((r) => ({ player: r.player, best: Number(r.best), games: Number(r.games) }));
}

export interface MinutePoint {
  t: string;
  n: number;
}

/** rows per minute over the last `minutes` of events_raw (beacon) and requests_raw (read API) */
export async function throughput(
  db: Db,
  opts: { store?: string; minutes?: number } = {},
): Promise<{ events: MinutePoint[]; requests: MinutePoint[] }> {
  const params = { store: opts.store ?? '', minutes: opts.minutes ?? 30 };
  const per = (table: 'events_raw' | 'requests_raw') =>
    db.query<{ t: string; n: string }>(
      `SELECT formatDateTime(toStartOfMinute(ts), '%Y-%m-%dT%H:%i:00Z') AS t, toString(count()) AS n
       FROM ${table}
       WHERE ({store:String} = '' OR store_id = {store:String}) AND ts >= now() - toIntervalMinute({minutes:UInt32})
       GROUP BY t ORDER BY t`,
      params,
    );
  const [events, requests] = await Promise.all([per('events_raw'), per('requests_raw')]);
  // every minute of the window, 0 where nothing arrived (a plot of the last half hour, not of the busy minutes)
  const now = Math.floor(Date.now() / 60_000) * 60_000;
  const minutes = Array.from({ length: params.minutes }, (_, i) =>
    new Date(now - (params.minutes - 1 - i) * 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
  );
  const conv = (rows: { t: string; n: string }[]) => {
    const by = new Map(rows.map((r) => [r.t, Number(r.n)]));
    return minutes.map((t) => ({ t, n: by.get(t) ?? 0 }));
  };
  return { events: conv(events), requests: conv(requests) };
}

export async function trendingNow(
  db: Db,
  opts: { store?: string; hours?: number; limit?: number } = {},
): Promise<{ query: string; votes: number; searches: number }[]> {
  const rows = await db.query<{ query: string; votes: string; searches: string }>(
    `SELECT query, toString(uniqExactMerge(voters)) AS votes, toString(sum(searches)) AS searches
     FROM trending_queries_hourly
     WHERE ({store:String} = '' OR store_id = {store:String}) AND bucket >= now() - toIntervalHour({hours:UInt32})
       AND query != ''
     GROUP BY query ORDER BY uniqExactMerge(voters) DESC, query LIMIT {limit:UInt32}`,
    { store: opts.store ?? '', hours: opts.hours ?? 24, limit: opts.limit ?? 10 },
  );
  return rows.map((r) => ({ query: r.query, votes: Number(r.votes), searches: Number(r.searches) }));
}

export async function searchesPerDay(
  db: Db,
  opts: { store?: string; days?: number } = {},
): Promise<{ day: string; n: number }[]> {
  const rows = await db.query<{ d: string; n: string }>(
    `SELECT toString(day) AS d, toString(sum(searches)) AS n FROM searches_served_daily
     WHERE ({store:String} = '' OR store_id = {store:String}) AND day > today() - {days:UInt32}
     GROUP BY day ORDER BY day`,
    { store: opts.store ?? '', days: opts.days ?? 30 },
  );
  return rows.map((r) => ({ day: r.d, n: Number(r.n) }));
}
