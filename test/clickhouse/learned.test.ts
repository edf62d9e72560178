// clickhouse/queries/learned.ts on the real migrations in a private chDB database: per query, the
// products viewed, carted and bought after it, summed over the three aggregates and the day window,
// the most engaged first, at most `perQuery` per query; one store never sees another's rows.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { learnedForQueries, learnedForStore } from '../../clickhouse/queries/learned.ts';
import { privateDb } from '../helpers/chdb.ts';

let db: Db;
const now = new Date('2026-11-20T12:00:00Z');
const day = (n: number) => new Date(now.getTime() - n * 86_400_000).toISOString().slice(0, 10);

beforeAll(async () => {
  db = await privateDb(`learned_${process.pid}`);
  await migrate(db as never);
  const row = (store: string, query: string, product: number, d: string, n: number) => ({
    store_id: store,
    query,
    product_id: product,
    day: d,
    sessions: n,
  });
  await db.insert('searched_then_viewed', [
    row('s1', 'linen shirt', 1, day(1), 4),
    row('s1', 'linen shirt', 1, day(2), 2),
    row('s1', 'linen shirt', 2, day(1), 9),
    row('s1', 'linen shirt', 3, day(40), 50), // outside the 30-day window
    row('s1', 'picnic', 7, day(0), 1),
    row('s2', 'linen shirt', 1, day(1), 100), // another store
  ]);
  await db.insert('searched_then_carted', [row('s1', 'linen shirt', 1, day(1), 2)]);
  await db.insert('searched_then_purchased', [
    { store_id: 's1', query: 'linen shirt', product_id: 1, day: day(3), purchases: 1 },
  ]);
});

describe('learned query evidence', () => {
  it('sums views, carts and purchases per query and product inside the window, most engaged first', async () => {
    const rows = await learnedForStore(db, { storeId: 's1', now });
    expect(rows.filter((r) => r.query === 'linen shirt')).toEqual([
      // 6 views + 3·2 carts + 5·1 purchase = 17 > 9
      { query: 'linen shirt', productId: '1', views: 6, carts: 2, purchases: 1 },
      { query: 'linen shirt', productId: '2', views: 9, carts: 0, purchases: 0 },
    ]);
    expect(rows.filter((r) => r.query === 'picnic')).toEqual([
      { query: 'picnic', productId: '7', views: 1, carts: 0, purchases: 0 },
    ]);
  });

  it('reads only the named queries, keeps perQuery products each, and is scoped by store', async () => {
    expect(await learnedForQueries(db, { storeId: 's1', queries: ['picnic'], now })).toEqual([
      { query: 'picnic', productId: '7', views: 1, carts: 0, purchases: 0 },
    ]);
    expect(await learnedForQueries(db, { storeId: 's1', queries: ['linen shirt'], perQuery: 1, now })).toHaveLength(1);
    expect(await learnedForQueries(db, { storeId: 's3', queries: ['linen shirt'], now })).toEqual([]);
    expect(await learnedForQueries(db, { storeId: 's1', queries: [], now })).toEqual([]);
  });
});
