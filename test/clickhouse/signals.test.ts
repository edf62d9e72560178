// clickhouse/queries/signals.ts on the real migrations in a private chDB database: the ranking signals of
// the browse sort orders. best_selling is the revenue of the last 7 UTC days (today and the 6 before; an
// order 7 days old is left out), trending compares the last 3 days with the 14 before them, popularity
// weighs engagement over 30 days; one store never sees another's rows.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { storeProductSignals } from '../../clickhouse/queries/signals.ts';
import { privateDb } from '../helpers/chdb.ts';

let db: Db;
const now = new Date('2026-11-20T12:00:00Z');
const day = (n: number) => new Date(now.getTime() - n * 86_400_000).toISOString().slice(0, 10);
const sale = (store: string, product: number, d: string, units: number, revenue: string) => ({
  store_id: store,
  day: d,
  product_id: product,
  units,
  orders: 1,
  revenue,
});
const engagement = (store: string, product: number, d: string, views: number, clicks = 0, carts = 0) => ({
  store_id: store,
  day: d,
  product_id: product,
  views,
  clicks,
  add_to_carts: carts,
  impressions: 0,
});

beforeAll(async () => {
  db = await privateDb(`signals_${process.pid}`);
  await migrate(db as never);
  await db.insert('product_daily_sales', [
    sale('s1', 1, day(0), 1, '10.00'),
    sale('s1', 1, day(6), 2, '25.50'), // the oldest day inside the 7-day window
    sale('s1', 1, day(7), 3, '1000.00'), // 7 days old: outside
    sale('s1', 2, day(7), 1, '500.00'), // only an order older than the window
    sale('s1', 3, day(8), 4, '80.00'),
    sale('s2', 1, day(0), 1, '9999.00'), // another store
  ]);
  await db.insert('product_daily_engagement', [
    engagement('s1', 4, day(1), 10, 2, 1), // recent: trending
    engagement('s1', 5, day(10), 140), // baseline only: popular, not trending
    engagement('s1', 5, day(31), 1000), // older than 30 days
  ]);
});

describe('product ranking signals', () => {
  it('sums best-selling revenue over the last 7 days only: an order 7 days old is left out', async () => {
    const rows = new Map((await storeProductSignals(db, 's1', now)).map((r) => [r.productId, r]));
    expect(rows.get('1')?.revenue7d).toBe(35.5);
    expect(rows.get('2')?.revenue7d).toBe(0);
    expect(rows.get('3')?.revenue7d).toBe(0);
    // the old sales still count for popularity (5 per unit, 30 days)
    expect(rows.get('2')?.popularity).toBe(5);
    expect(rows.get('3')?.popularity).toBe(20);
  });

  it('ranks trending on the last 3 days against the 14 before, popularity on 30 days of engagement', async () => {
    const rows = new Map((await storeProductSignals(db, 's1', now)).map((r) => [r.productId, r]));
    // product 4: 10 views + 3·1 cart = 13 recent, no baseline → (13 + 1) / 1; popularity 10 + 2·2 + 3·1
    expect(rows.get('4')).toEqual({ productId: '4', revenue7d: 0, trending: 14, popularity: 17 });
    // product 5: 140 baseline views = 10 a day → (0 + 1) / (10·3 + 1); the views 31 days ago are left out
    expect(rows.get('5')?.trending).toBeCloseTo(1 / 31, 10);
    expect(rows.get('5')?.popularity).toBe(140);
    expect(rows.get('4')?.trending).toBeGreaterThan(rows.get('5')?.trending as number);
  });

  it('reads one store only', async () => {
    const other = await storeProductSignals(db, 's2', now);
    expect(other).toEqual([{ productId: '1', revenue7d: 9999, trending: 6, popularity: 5 }]);
    expect(await storeProductSignals(db, 's3', now)).toEqual([]);
  });
});
