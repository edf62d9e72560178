// Redis flushed under the orders processor (issue #23): the processor keeps each order's last applied
// contribution in Redis, so that a re-sent order (a webhook retry, a re-import) changes nothing and an
// edit or a cancellation subtracts what the order had added. A real FLUSHALL takes that state away; the
// same orders are then sent again — unchanged, edited, cancelled — together with new ones, by two stores
// whose order ids overlap. Every order aggregate (units, orders and revenue per product, co-purchase
// pairs, the current lines of orders_raw) equals the ground truth of each order's latest record.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Order } from '../../schemas/orders.ts';
import { order, produce, rng, type StreamsHarness, startStreamsHarness, waitCaughtUp } from './helpers.ts';
import { fixed6 } from './truth.ts';

const STORES = ['store-flush-a', 'store-flush-b'] as const;
const DAY0 = Date.parse('2026-11-20T08:00:00.000Z');

interface Truth {
  /** store|product → units, orders containing it, revenue (6 decimals) */
  units: Record<string, number>;
  orders: Record<string, number>;
  revenue: Record<string, string>;
  /** store|a|b → orders containing both (a = b included) */
  pairs: Record<string, number>;
  /** store → current (not deleted) order lines */
  lines: Record<string, number>;
}

/** the aggregates each order's latest record implies, computed here without the processor's code */
function groundTruth(latest: Iterable<Order>): Truth {
  const t: Truth = { units: {}, orders: {}, revenue: {}, pairs: {}, lines: {} };
  const micros: Record<string, bigint> = {};
  const inc = (m: Record<string, number>, k: string, n = 1) => {
    m[k] = (m[k] ?? 0) + n;
  };
  for (const o of latest) {
    if (o.cancelled) continue;
    const s = o.store_id;
    inc(t.lines, s, o.line_items.length);
    const products: string[] = [];
    for (const li of o.line_items) {
      inc(t.units, `${s}|${li.product_id}`, li.quantity);
      const [a, b = ''] = li.price.split('.');
      const unit = BigInt(a) * 1_000_000n + BigInt((b + '000000').slice(0, 6));
      micros[`${s}|${li.product_id}`] = (micros[`${s}|${li.product_id}`] ?? 0n) + unit * BigInt(li.quantity);
      if (!products.includes(li.product_id)) products.push(li.product_id);
    }
    for (const a of products) {
      inc(t.orders, `${s}|${a}`);
      for (const b of products) inc(t.pairs, `${s}|${a}|${b}`);
    }
  }
  for (const [k, m] of Object.entries(micros))
    t.revenue[k] = `${m / 1_000_000n}.${(m % 1_000_000n).toString().padStart(6, '0')}`;
  return t;
}

describe('Redis flushed under the orders processor', () => {
  let h: StreamsHarness;
  beforeAll(async () => {
    h = await startStreamsHarness('orders-redis-flush', {
      processors: 'orders',
      // small chunks: re-sent, edited and new orders share chunks, and an order's versions span several
      env: { STREAMS_MAX_BATCH_MESSAGES: '7', STREAMS_LINGER_MS: '20' },
    });
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  const rand = rng(2323);
  const lines = () =>
    Array.from({ length: 1 + Math.floor(rand() * 4) }, () => ({
      product_id: String(1000 + Math.floor(rand() * 12)),
      variant_id: null,
      quantity: 1 + Math.floor(rand() * 3),
      price: `${1 + Math.floor(rand() * 50)}.${String(Math.floor(rand() * 100)).padStart(2, '0')}`,
    }));
  /** the latest record sent per store and order id */
  const latest = new Map<string, Order>();
  async function send(records: Order[]) {
    for (const o of records) latest.set(`${o.store_id}:${o.order_id}`, o);
    await produce(
      h.infra,
      'orders',
      records.map((o) => ({ key: `${o.store_id}:${o.order_id}`, value: o })),
    );
    await waitCaughtUp(h.infra.kafka, [{ group: 'streams.orders', topic: h.infra.topic('orders') }], 120_000);
  }
  const newOrder = (store: string, i: number) =>
    order({
      store_id: store,
      order_id: `o${i}`,
      created_at: new Date(DAY0 + i * 3_600_000).toISOString(),
      line_items: lines(),
      total_price: '0',
    });
  const edited = (o: Order, at: number): Order => ({
    ...o,
    line_items: lines(),
    updated_at: new Date(Date.parse(o.created_at) + at).toISOString(),
  });
  const cancelled = (o: Order, at: number): Order => ({
    ...o,
    cancelled: true,
    updated_at: new Date(Date.parse(o.created_at) + at).toISOString(),
  });
  const current = (store: string, i: number) => latest.get(`${store}:o${i}`) as Order;

  async function aggregates(): Promise<Truth> {
    const q = <R>(sql: string) => h.db.query<R>(sql, { stores: [...STORES] });
    const t: Truth = { units: {}, orders: {}, revenue: {}, pairs: {}, lines: {} };
    for (const r of await q<{ s: string; p: string; u: string; o: string; r: string }>(
      `SELECT store_id AS s, toString(product_id) AS p, sum(units) AS u, sum(orders) AS o, toString(sum(revenue)) AS r
       FROM product_daily_sales WHERE store_id IN {stores:Array(String)} GROUP BY s, p`,
    )) {
      const k = `${r.s}|${r.p}`;
      if (Number(r.u) !== 0) t.units[k] = Number(r.u);
      if (Number(r.o) !== 0) t.orders[k] = Number(r.o);
      if (Number(r.r) !== 0) t.revenue[k] = fixed6(r.r);
    }
    for (const r of await q<{ s: string; a: string; b: string; n: string }>(
      `SELECT store_id AS s, toString(product_a) AS a, toString(product_b) AS b, sum(orders) AS n
       FROM co_purchase_pairs WHERE store_id IN {stores:Array(String)} GROUP BY s, a, b HAVING n != 0`,
    ))
      t.pairs[`${r.s}|${r.a}|${r.b}`] = Number(r.n);
    for (const r of await q<{ s: string; n: string }>(
      'SELECT store_id AS s, count() AS n FROM orders_raw FINAL WHERE store_id IN {stores:Array(String)} GROUP BY s',
    ))
      t.lines[r.s] = Number(r.n);
    return t;
  }

  it('counts a re-sent order once, and subtracts an edit or a cancellation of what it counted, after a FLUSHALL', {
    timeout: 240_000,
  }, async () => {
    const [a, b] = STORES;
    // 1. both stores' orders o0..o19 (the same ids in each store), some of them edited or cancelled
    await send(STORES.flatMap((s) => Array.from({ length: 20 }, (_, i) => newOrder(s, i))));
    await send([edited(current(a, 0), 60_000), edited(current(b, 1), 60_000), cancelled(current(a, 2), 90_000)]);
    const before = groundTruth(latest.values());
    expect(before.units).not.toEqual({});
    expect(await aggregates()).toEqual(before);

    // 2. Redis forgets everything: claims, journal, the orders' last applied contributions
    const admin = new Redis(h.infra.redisUrl);
    try {
      expect(await admin.flushall()).toBe('OK');
      expect(await admin.dbsize()).toBeLessThan(10);
    } finally {
      admin.disconnect();
    }

    // 3. store a's platform retries every order it sent (the latest record of each: the edited o0 and the
    //    cancelled o2 too), store b only some; interleaved with edits and cancellations of orders counted
    //    before the flush, and new orders — one of them sent twice
    const resent = [...Array.from({ length: 20 }, (_, i) => current(a, i)), ...[1, 3, 5, 7].map((i) => current(b, i))];
    const changed = [
      edited(current(a, 4), 120_000),
      cancelled(current(a, 6), 120_000),
      edited(current(b, 8), 120_000),
      cancelled(current(b, 9), 120_000),
    ];
    const fresh = [...[20, 21, 22].map((i) => newOrder(a, i)), ...[20, 21].map((i) => newOrder(b, i))];
    const batch = [...resent.slice(0, 10), ...changed, ...fresh, ...resent.slice(10), fresh[0]];
    await send(batch);
    // and the retries come a second time, now that the processor holds their state again
    await send(resent.slice(10, 15));

    // 4. every aggregate as if each order had been counted once, in its latest form
    const after = groundTruth(latest.values());
    expect(after).not.toEqual(before);
    expect(await aggregates()).toEqual(after);
  });
});
