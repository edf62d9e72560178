// The searches-served counter over a real chDB database: the platform-wide sum of searches_served_daily
// (every store, every day) in billions as an exact decimal string, cached between refreshes and read
// again on the refresh interval (an hour in the app).
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { createLogger } from '../../services/common/logger.ts';
import { counterLabel, HOUR_MS, inBillions, SearchesServedCounter } from '../../services/site/counter.ts';
import { privateDb } from '../helpers/chdb.ts';

const logger = createLogger('site-counter-test', 'silent');
let db: Db;

beforeAll(async () => {
  db = await privateDb(`site_counter_${newUlid().toLowerCase()}`);
  await migrate(db);
});
afterAll(async () => {
  await db?.close();
});

describe('count in billions', () => {
  it('divides by 10^9 exactly, as a decimal string without trailing zeros', () => {
    expect(inBillions('0')).toBe('0');
    expect(inBillions('4213')).toBe('0.000004213');
    expect(inBillions('1000000000')).toBe('1');
    expect(inBillions('1250000000')).toBe('1.25');
    expect(inBillions('18446744073709551615')).toBe('18446744073.709551615');
    expect(() => inBillions('-1')).toThrow();
  });

  it('labels the figure for people', () => {
    expect(counterLabel('0')).toBe('0 searches served');
    expect(counterLabel('1')).toBe('1 search served');
    expect(counterLabel('4213')).toBe('4,213 searches served');
    expect(counterLabel('2345678')).toBe('2.3 million searches served');
    expect(counterLabel('1259999999')).toBe('1.25 billion searches served');
  });
});

describe('SearchesServedCounter', () => {
  it('serves the sum over every store and day, cached until the next refresh', async () => {
    await db.insert('searches_served_daily', [
      { store_id: 'store-a', day: '2026-11-20', searches: 1_500_000_000 },
      { store_id: 'store-a', day: '2026-11-21', searches: 250 },
      { store_id: 'store-b', day: '2026-11-21', searches: 1_000 },
    ]);
    const counter = new SearchesServedCounter({ db, logger });
    expect(counter.get()).toBeNull();
    await counter.start();
    expect(counter.get()).toEqual({ count: '1.50000125', label: '1.50 billion searches served' });
    expect(JSON.parse(counter.body() as string)).toEqual(counter.get());
    expect(counter.maxAgeSeconds()).toBeGreaterThan(HOUR_MS / 1000 - 5);

    // more searches: the cached value stands until the refresh
    await db.insert('searches_served_daily', [{ store_id: 'store-c', day: '2026-11-22', searches: 499_998_750 }]);
    expect(counter.get()?.count).toBe('1.50000125');
    await counter.refresh();
    expect(counter.get()).toEqual({ count: '2', label: '2.00 billion searches served' });
    counter.stop();
  });

  it('refreshes on its interval by itself', async () => {
    const counter = new SearchesServedCounter({ db, logger, refreshMs: 200 });
    await counter.start();
    const before = counter.total() as string;
    await db.insert('searches_served_daily', [{ store_id: 'store-d', day: '2026-11-23', searches: 7 }]);
    await vi.waitFor(() => expect(counter.total()).toBe(String(BigInt(before) + 7n)), { timeout: 5_000 });
    counter.stop();
  });
});
