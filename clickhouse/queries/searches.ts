// Searches served: cumulative search requests answered, per store or platform-wide (the site's
// `/api/searches-served` counter shows the platform-wide figure).
import type { Db } from '../client.ts';

/** Cumulative searches served, as a decimal string (UInt64 exceeds 2^53 eventually). */
export async function searchesServed(db: Db, opts: { storeId?: string } = {}): Promise<string> {
  const [row] = await db.query<{ n: string }>(
    `SELECT toString(sum(searches)) AS n FROM searches_served_daily WHERE ({store:String} = '' OR store_id = {store:String})`,
    { store: opts.storeId ?? '' },
  );
  return row?.n ?? '0';
}

/** Searches served per UTC day for one store, oldest first. */
export async function searchesServedDaily(
  db: Db,
  opts: { storeId: string; days?: number; now?: Date },
): Promise<{ day: string; searches: number }[]> {
  const rows = await db.query<{ day: string; n: string }>(
    `SELECT toString(day) AS day, sum(searches) AS n FROM searches_served_daily
     WHERE store_id = {store:String} AND day > toDate({today:String}) - {days:UInt32}
     GROUP BY day ORDER BY day`,
    {
      store: opts.storeId,
      today: (opts.now ?? new Date()).toISOString().slice(0, 10),
      days: Math.max(1, Math.min(3650, Math.trunc(opts.days ?? 30))),
    },
  );
  return rows.map((r) => ({ day: r.day, searches: Number(r.n) }));
}
