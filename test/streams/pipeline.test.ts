import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import type { EnrichedEvent } from '../../schemas/events.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import {
  bestSellers,
  productPopularity,
  relatedProducts,
  searchedThenPurchased,
  searchedThenViewed,
  searchesServed,
  loadTrendingCells,
  trendingProducts,
  trendingQueries,
} from '../../clickhouse/queries/index.ts';
import { type Config, loadConfig } from '../../services/common/config.ts';
import { registry } from '../../services/common/metrics.ts';
import { createRedis } from '../../services/common/redis.ts';
import { type ReplayEvent, runReplay } from '../../streams/replay/replay.ts';
import { applyRetention } from '../../streams/service.ts';
import { parseTrendingMessage, TRENDING_CHANNEL, type TrendingCell } from '../../schemas/channels.ts';
import { privateDb } from '../helpers/chdb.ts';
import { PAIR_SUPPORT_SHRINKAGE } from '../../clickhouse/queries/related.ts';
import {
  enrichedEvent,
  type Infra,
  order,
  produce,
  produceRaw,
  type StreamsHarness,
  searchRequest,
  startStreamsHarness,
  waitCaughtUp,
} from './helpers.ts';
import type { Logger } from '../../services/common/logger.ts';
import { generateScenario } from './scenario.ts';
import { type QueryFn, readAggregates } from './truth.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** the support shrinkage n / (n + k) every pair score carries */
const shrunk = (n: number) => n / (n + PAIR_SUPPORT_SHRINKAGE);

/** polls fn until it returns a value (vi.waitFor retries while the callback throws) */
function until<T>(fn: () => Promise<T | undefined>, timeout = 20_000): Promise<T> {
  return vi.waitFor(
    async () => {
      const v = await fn();
      if (v === undefined) throw new Error('condition not met yet');
      return v;
    },
    { timeout, interval: 100 },
  );
}

describe('stream processors in process', () => {
  let harness: StreamsHarness;
  let infra: Infra;
  let db: Db;
  let config: Config;
  let logger: Logger;

  beforeAll(async () => {
    harness = await startStreamsHarness('streams', { env: { STREAMS_MAX_BATCH_MESSAGES: '200' }, processors: 'all' });
    ({ infra, db, config, logger } = harness);
  });
  afterAll(() => harness?.stop());

  const q: QueryFn = (sql) => db.query(sql);

  /** stream_dlq_total from the process's metrics registry: `processor|mode|reason` → count */
  async function dlqCounts(): Promise<Map<string, number>> {
    const m = await registry.getSingleMetric('stream_dlq_total')?.get();
    return new Map(
      (m?.values ?? []).map((v) => [`${v.labels.processor}|${v.labels.mode}|${v.labels.reason}`, v.value]),
    );
  }

  it('applies EVENTS_RETENTION_DAYS and REJECTED_EVENTS_RETENTION_DAYS to the raw tables at start-up', async () => {
    const own = await privateDb(`retention_${newUlid().toLowerCase()}`);
    try {
      await migrate(own);
      const ttls = async () => {
        const rows = await own.query<{ name: string; engine_full: string }>(
          "SELECT name, engine_full FROM system.tables WHERE database = currentDatabase() AND name IN ('events_raw', 'requests_raw', 'orders_raw', 'rejected_events_raw') ORDER BY name",
        );
        return rows.map((r) => [r.name, /TTL toDateTime\(ts\) \+ toIntervalDay\((\d+)\)/.exec(r.engine_full)?.[1]]);
      };
      await applyRetention(own, 30, logger);
      expect(await ttls()).toEqual([
        ['events_raw', '30'],
        ['orders_raw', '30'],
        ['rejected_events_raw', '30'],
        ['requests_raw', '30'],
      ]);
      expect(config.REJECTED_EVENTS_RETENTION_DAYS).toBe(30);
      const rejectedDays = loadConfig({
        ...process.env,
        REJECTED_EVENTS_RETENTION_DAYS: '7',
      }).REJECTED_EVENTS_RETENTION_DAYS;
      await applyRetention(own, 400, logger, rejectedDays);
      expect(await ttls()).toEqual([
        ['events_raw', '400'],
        ['orders_raw', '400'],
        ['rejected_events_raw', '7'],
        ['requests_raw', '400'],
      ]);
      expect(() => loadConfig({ REJECTED_EVENTS_RETENTION_DAYS: '0' })).toThrow(/REJECTED_EVENTS_RETENTION_DAYS/);
    } finally {
      await own.close();
    }
  });

  it('sends garbage bytes and schema-violating values to the DLQ with the reason, and keeps the partition flowing', async () => {
    const store = `dlq_${newUlid()}`;
    const key = `${store}:s1`; // one key → one partition, so the good event sits behind the poison
    const dlqBefore = await dlqCounts();
    const bad = enrichedEvent({
      event_type: 'product_view',
      store_id: store,
      session_id: 's1',
      timestamp: new Date().toISOString(),
      product_id: '7',
    });
    await produceRaw(infra, 'events', [{ key, value: Buffer.from('definitely not avro') }]);
    await produce(infra, 'events', [{ key, value: { ...bad, price: 'twelve dollars' } }]);
    await produceRaw(infra, 'events', [{ key, value: Buffer.from([0, 0, 0, 0x7f, 0x7f, 1, 2, 3]) }]); // unknown schema id
    const good = enrichedEvent({
      event_type: 'product_view',
      store_id: store,
      session_id: 's1',
      timestamp: new Date().toISOString(),
      product_id: '8',
    });
    await produce(infra, 'events', [{ key, value: good }]);

    const rows = await until(async () => {
      const r = await db.query<{ event_id: string }>('SELECT event_id FROM events_raw WHERE store_id = {s:String}', {
        s: store,
      });
      return r.length ? r : undefined;
    });
    expect(rows.map((r) => r.event_id)).toEqual([good.event_id]);

    const consumer = infra.kafka.consumer({ groupId: `dlq-reader-${newUlid()}` });
    await consumer.connect();
    await consumer.subscribe({ topic: `${infra.topic('events')}.dlq`, fromBeginning: true });
    const seen: { reason: string; topic: string; partition: string; offset: string; value: Buffer | null }[] = [];
    await consumer.run({
      eachMessage: async ({ message }) => {
        const h = (n: string) => String(message.headers?.[n] ?? '');
        seen.push({
          reason: h('x-dlq-reason'),
          topic: h('x-dlq-original-topic'),
          partition: h('x-dlq-original-partition'),
          offset: h('x-dlq-original-offset'),
          value: message.value,
        });
      },
    });
    await until(async () => (seen.length >= 3 ? true : undefined));
    await consumer.disconnect();
    const mine = seen.filter((s) => s.topic === infra.topic('events'));
    expect(mine).toHaveLength(3);
    expect(mine[0].reason).toMatch(/^undecodable: .*magic byte/);
    expect(mine[0].value?.toString()).toBe('definitely not avro');
    expect(mine[1].reason).toMatch(/^invalid: price: /);
    expect(mine[2].reason).toMatch(/^undecodable: /);
    // the original position travels with the message
    expect(new Set(mine.map((m) => m.partition)).size).toBe(1);
    expect(Number(mine[1].offset)).toBe(Number(mine[0].offset) + 1);

    // the metrics registry counted them by reason kind, and the partition's lag is back to 0
    const dlqAfter = await dlqCounts();
    const delta = (reason: string) =>
      (dlqAfter.get(`events|live|${reason}`) ?? 0) - (dlqBefore.get(`events|live|${reason}`) ?? 0);
    expect({ undecodable: delta('undecodable'), invalid: delta('invalid') }).toEqual({ undecodable: 2, invalid: 1 });
    const partition = mine[0].partition;
    const lag = await until(async () => {
      const m = await registry.getSingleMetric('stream_consumer_lag')?.get();
      const v = m?.values.find(
        (x) =>
          x.labels.processor === 'events' &&
          x.labels.mode === 'live' &&
          x.labels.topic === infra.topic('events') &&
          String(x.labels.partition) === partition,
      );
      return v;
    });
    expect(lag.value).toBe(0);
  });

  it('publishes changed trending cells with their current votes on agg:trending, and ranks the uptick', async () => {
    const store = `trend_${newUlid()}`;
    const sub = createRedis(infra.redisUrl);
    const got: TrendingCell[] = [];
    await sub.subscribe(TRENDING_CHANNEL);
    sub.on('message', (_ch, msg) => got.push(...parseTrendingMessage(msg).filter((d) => d.store_id === store)));
    try {
      const now = new Date();
      const at = now.toISOString();
      const old = new Date(now.getTime() - 3 * 24 * 3600_000).toISOString();
      const reqs = [
        // 'boots' is steady: searched 3 days ago by 4 shoppers and today by 2
        ...['a', 'b', 'c', 'd'].map((s) =>
          searchRequest({ store_id: store, query: 'Boots', session_id: `old-${s}`, country: 'DE', at: old }),
        ),
        ...['a', 'b'].map((s) => searchRequest({ store_id: store, query: 'boots', session_id: s, country: 'DE', at })),
        // 'red dress' surges today: 3 shoppers, one of them searching three times (one vote)
        ...['x', 'y', 'z', 'z', 'z'].map((s) =>
          searchRequest({ store_id: store, query: 'Red  Dress', session_id: s, country: s === 'x' ? 'US' : 'DE', at }),
        ),
        // one shopper alone cannot make a query trend
        ...[1, 2, 3, 4].map(() =>
          searchRequest({ store_id: store, query: 'spam', session_id: 'bot-like', country: 'DE', at }),
        ),
      ];
      // shopper x also clicked a result after searching: the click signal of the query
      await produce(
        infra,
        'events',
        [
          enrichedEvent({
            event_type: 'search',
            store_id: store,
            session_id: 'x',
            timestamp: at,
            query: 'red dress',
            contextual_data: { search_source: 'typed' },
          }),
          enrichedEvent({
            event_type: 'product_click',
            store_id: store,
            session_id: 'x',
            timestamp: at,
            product_id: '77',
            position: 1,
          }),
        ].map((e) => ({ key: `${store}:x`, value: e })),
      );
      const t0 = Date.now();
      await produce(
        infra,
        'requests',
        reqs.map((r) => ({ key: `${store}:${r.session_id}`, value: r })),
      );
      const bucket = `${at.slice(0, 13)}:00:00.000Z`;
      const dress = await until(async () => {
        const de = got.filter((d) => d.query === 'red dress' && d.country === 'DE' && d.bucket === bucket).at(-1);
        return de && de.votes === 2 ? de : undefined;
      });
      expect(Date.now() - t0).toBeLessThan(20_000);
      expect(dress).toEqual({ store_id: store, country: 'DE', query: 'red dress', bucket, votes: 2 });
      // the 'boots' searches are keyed by other sessions, so other partitions: wait for their cells too
      const oldBucket = `${old.slice(0, 13)}:00:00.000Z`;
      const votesOf = (b: string) =>
        got.filter((d) => d.query === 'boots' && d.country === 'DE' && d.bucket === b).at(-1)?.votes;
      await until(async () => (votesOf(bucket) === 2 && votesOf(oldBucket) === 4 ? true : undefined));

      const de = await trendingQueries(db, { storeId: store, country: 'DE', now: new Date(now.getTime() + 60_000) });
      expect(de.map((t) => t.query)).toEqual(['red dress', 'boots']);
      expect(de[0].recentVotes).toBe(2);
      await until(async () => {
        const r = await db.query<{ n: string }>(
          'SELECT count() AS n FROM searched_then_viewed WHERE store_id = {s:String}',
          { s: store },
        );
        return Number(r[0].n) > 0 ? true : undefined;
      });
      const all = await trendingQueries(db, { storeId: store, now: new Date(now.getTime() + 60_000) });
      expect(all[0]).toMatchObject({
        query: 'red dress',
        recentVotes: 3,
        searches: 5,
        clickSessions: 1,
        zeroResultRate: 0,
      });
      expect(all.find((t) => t.query === 'spam')).toBeUndefined();
      const prefixed = await trendingQueries(db, {
        storeId: store,
        prefix: 'B',
        now: new Date(now.getTime() + 60_000),
      });
      expect(prefixed.map((t) => t.query)).toEqual(['boots']);
      // other stores see nothing of this one
      expect(await trendingQueries(db, { storeId: `${store}_other`, now })).toEqual([]);

      const cells = await loadTrendingCells(db, { storeId: store, sinceMs: Date.now() - 24 * 7 * 3_600_000 });
      expect(cells).toContainEqual({ store_id: store, country: 'US', query: 'red dress', bucket, votes: 1 });
      expect(await searchesServed(db, { storeId: store })).toBe(String(reqs.length));
    } finally {
      sub.disconnect();
    }
  });

  it('ranks related products, journeys, best sellers and trending products from what the stream produced', async () => {
    const store = `rel_${newUlid()}`;
    const t = Date.now() - 3600_000;
    const at = (i: number) => new Date(t + i * 1000).toISOString();
    const events = [];
    // 6 sessions view 1 and 2 together; 1 is also viewed with the best-seller 9 in 2 sessions, but 9 is
    // viewed by 30 other sessions: cosine must rank 2 above 9 for product 1
    for (let s = 0; s < 6; s++) {
      events.push(
        enrichedEvent({
          event_type: 'search',
          store_id: store,
          session_id: `p${s}`,
          timestamp: at(0),
          query: 'Linen Shirt',
          contextual_data: { search_source: 'typed' },
        }),
      );
      events.push(
        enrichedEvent({
          event_type: 'product_view',
          store_id: store,
          session_id: `p${s}`,
          timestamp: at(1),
          product_id: '1',
        }),
      );
      events.push(
        enrichedEvent({
          event_type: 'product_view',
          store_id: store,
          session_id: `p${s}`,
          timestamp: at(2),
          product_id: '2',
        }),
      );
    }
    for (let s = 0; s < 2; s++) {
      events.push(
        enrichedEvent({
          event_type: 'product_view',
          store_id: store,
          session_id: `q${s}`,
          timestamp: at(1),
          product_id: '1',
        }),
      );
      events.push(
        enrichedEvent({
          event_type: 'product_view',
          store_id: store,
          session_id: `q${s}`,
          timestamp: at(2),
          product_id: '9',
        }),
      );
    }
    for (let s = 0; s < 30; s++)
      events.push(
        enrichedEvent({
          event_type: 'product_view',
          store_id: store,
          session_id: `r${s}`,
          timestamp: at(3),
          product_id: '9',
        }),
      );
    await produce(
      infra,
      'events',
      events.map((e) => ({ key: `${store}:${e.session_id}`, value: e })),
    );
    const line = (p: string, qty: number, price: string) => ({ product_id: p, variant_id: null, quantity: qty, price });
    const orders = [
      order({
        store_id: store,
        order_id: 'o1',
        created_at: at(10),
        line_items: [line('1', 1, '10.00'), line('3', 1, '5.00')],
      }),
      order({
        store_id: store,
        order_id: 'o2',
        created_at: at(11),
        line_items: [line('1', 1, '10.00'), line('3', 2, '5.00')],
      }),
      order({ store_id: store, order_id: 'o3', created_at: at(12), line_items: [line('9', 1, '100.00')] }),
      order({ store_id: store, order_id: 'o4', created_at: at(13), line_items: [line('2', 1, '1.00')] }),
    ];
    // o4 is cancelled later: it must vanish from revenue
    const cancelled = { ...orders[3], cancelled: true };
    await produce(
      infra,
      'orders',
      [...orders, cancelled].map((o) => ({ key: `${store}:${o.order_id}`, value: o })),
    );

    await until(async () => {
      const r = await db.query<{ n: string }>('SELECT count() AS n FROM orders_raw WHERE store_id = {s:String}', {
        s: store,
      });
      const e = await db.query<{ n: string }>('SELECT count() AS n FROM events_raw WHERE store_id = {s:String}', {
        s: store,
      });
      return Number(r[0].n) >= 6 && Number(e[0].n) >= events.length ? true : undefined;
    });
    await expect
      .poll(async () =>
        (await relatedProducts(db, { storeId: store, strategy: 'co_view', productIds: ['1'] })).map((r) => r.productId),
      )
      .toEqual(['2', '9']);
    const coView = await relatedProducts(db, { storeId: store, strategy: 'co_view', productIds: ['1'] });
    expect(coView[0].support).toBe(6);
    expect(coView[0].score).toBeCloseTo((6 / Math.sqrt(8 * 6)) * shrunk(6), 6);
    const cart = await relatedProducts(db, {
      storeId: store,
      strategy: 'co_view',
      productIds: ['1', '2'],
      excludeProductIds: [],
    });
    expect(cart.map((r) => r.productId)).toEqual(['9']);
    const fbt = await relatedProducts(db, { storeId: store, strategy: 'co_purchase', productIds: ['1'] });
    expect(fbt).toEqual([{ productId: '3', score: shrunk(2), support: 2 }]);
    expect(await relatedProducts(db, { storeId: `${store}x`, strategy: 'co_purchase', productIds: ['1'] })).toEqual([]);
    const stv = await searchedThenViewed(db, { storeId: store, query: ' linen SHIRT ' });
    expect(stv.map((r) => [r.productId, r.count])).toEqual([
      ['1', 6],
      ['2', 6],
    ]);
    const best = await bestSellers(db, { storeId: store });
    expect(best.map((b) => [b.productId, b.revenue, b.units])).toEqual([
      ['9', '100', 1],
      ['1', '20', 2],
      ['3', '15', 3],
    ]);
    const trending = await trendingProducts(db, { storeId: store, productIds: ['1', '2', '3'] });
    // weighted engagement: views + 3·add-to-carts + 5·units (the cancelled order of 2 does not count)
    expect(trending.map((r) => [r.productId, r.recent])).toEqual([
      ['1', 8 + 5 * 2],
      ['3', 5 * 3],
      ['2', 6],
    ]);
  });

  it('answers searched-then-purchased, co-cart, viewed-then-bought, popularity, platform-wide searches and trending by prefix and country', async () => {
    const store = `qh_${newUlid()}`;
    const t = Date.now() - 3600_000;
    const at = (i: number) => new Date(t + i * 1000).toISOString();
    const ev = (sid: string, i: number, fields: Partial<EnrichedEvent>) =>
      enrichedEvent({
        event_type: 'product_view',
        store_id: store,
        session_id: sid,
        timestamp: at(i),
        geo_country: 'FR',
        ...fields,
      });
    const events: EnrichedEvent[] = [];
    // carts: 4 sessions add 10 and 11, 2 sessions 10 and 12, 4 sessions 12 alone
    for (let s = 0; s < 10; s++) {
      const items = s < 4 ? ['10', '11'] : s < 6 ? ['10', '12'] : ['12'];
      for (const [i, p] of items.entries())
        events.push(
          ev(`c${s}`, i, { event_type: 'add_to_cart', product_id: p, quantity: 1, price: '2.00', currency: 'USD' }),
        );
    }
    // journeys: b0, b1 search 'Rain Coat', view 20, buy 21; b2 searches 'umbrella', views 20, buys 21;
    // b3 searches 'rain coat', views 20 and 22, buys 22. b0 also clicks 20.
    const purchase = (sid: string, i: number, products: string[]) =>
      ev(sid, i, {
        event_type: 'purchase',
        order_id: `${sid}-order`,
        currency: 'USD',
        line_items: products.map((p) => ({ product_id: p, variant_id: null, quantity: 1, price: '7.50' })),
      });
    for (const [sid, query, bought] of [
      ['b0', 'Rain Coat', '21'],
      ['b1', 'Rain Coat', '21'],
      ['b2', 'umbrella', '21'],
    ] as const) {
      events.push(
        ev(sid, 0, { event_type: 'search', query, contextual_data: { search_source: 'typed' } }),
        ev(sid, 1, { product_id: '20' }),
        purchase(sid, 2, [bought]),
      );
    }
    events.push(ev('b0', 1, { event_type: 'product_click', product_id: '20', position: 1 }));
    events.push(
      ev('b3', 0, { event_type: 'search', query: 'rain coat', contextual_data: { search_source: 'typed' } }),
      ev('b3', 1, { product_id: '20' }),
      ev('b3', 2, { product_id: '22' }),
      purchase('b3', 3, ['22']),
    );
    await produce(
      infra,
      'events',
      events.map((e) => ({ key: `${store}:${e.session_id}`, value: e })),
    );
    await produce(infra, 'orders', [
      {
        key: `${store}:o1`,
        value: order({
          store_id: store,
          order_id: 'o1',
          created_at: at(5),
          line_items: [{ product_id: '21', variant_id: null, quantity: 2, price: '7.50' }],
        }),
      },
    ]);
    // searches served: 'rain coat' by 3 voters in DE and 2 in US, 'rain boots' by 2 in DE, 'red hat' by 2 in DE
    const served = await searchesServed(db);
    const now = new Date().toISOString();
    const reqs = [
      ...['1', '2', '3'].map((v) =>
        searchRequest({ store_id: store, query: 'Rain Coat', session_id: `de-${v}`, country: 'DE', at: now }),
      ),
      ...['1', '2'].map((v) =>
        searchRequest({ store_id: store, query: 'rain boots', session_id: `de-${v}`, country: 'DE', at: now }),
      ),
      ...['1', '2'].map((v) =>
        searchRequest({ store_id: store, query: 'red hat', session_id: `de-${v}`, country: 'DE', at: now }),
      ),
      ...['1', '2'].map((v) =>
        searchRequest({ store_id: store, query: 'rain coat', session_id: `us-${v}`, country: 'US', at: now }),
      ),
    ];
    await produce(
      infra,
      'requests',
      reqs.map((r) => ({ key: `${store}:${r.session_id}`, value: r })),
    );
    await waitCaughtUp(
      infra.kafka,
      (['events', 'requests', 'orders'] as const).map((k) => ({ group: `streams.${k}`, topic: infra.topic(k) })),
      60_000,
    );

    // platform-wide searches served grew by exactly this store's requests
    expect(await searchesServed(db)).toBe(String(BigInt(served) + BigInt(reqs.length)));
    expect(await searchesServed(db, { storeId: store })).toBe(String(reqs.length));

    // co_cart: cosine n_ab / sqrt(n_aa · n_bb) with n_10 = 6, n_11 = 4, n_12 = 6, shrunk by the support
    const coCart = await relatedProducts(db, { storeId: store, strategy: 'co_cart', productIds: ['10'] });
    expect(coCart.map((r) => [r.productId, r.support])).toEqual([
      ['11', 4],
      ['12', 2],
    ]);
    expect(coCart[0].score).toBeCloseTo((4 / Math.sqrt(6 * 4)) * shrunk(4), 9);
    expect(coCart[1].score).toBeCloseTo((2 / Math.sqrt(6 * 6)) * shrunk(2), 9);
    // a cart of 10 and 11: only 12 is left, scored through anchor 10 (11 never co-carted with 12)
    const cartOf = await relatedProducts(db, { storeId: store, strategy: 'co_cart', productIds: ['10', '11'] });
    expect(cartOf.map((r) => [r.productId, r.support])).toEqual([['12', 2]]);
    expect(cartOf[0].score).toBeCloseTo((2 / 6) * shrunk(2), 9);

    // viewed-then-bought from 20: 21 (3 purchases) and 22 (1); viewers of 20 = 4 sessions
    const vtb = await relatedProducts(db, { storeId: store, strategy: 'viewed_then_bought', productIds: ['20'] });
    expect(vtb.map((r) => [r.productId, r.support])).toEqual([
      ['21', 3],
      ['22', 1],
    ]);
    expect(vtb[0].score).toBeCloseTo((3 / Math.sqrt(4 * 3)) * shrunk(3), 9);
    expect(vtb[1].score).toBeCloseTo((1 / Math.sqrt(4 * 1)) * shrunk(1), 9);
    expect(
      await relatedProducts(db, {
        storeId: store,
        strategy: 'viewed_then_bought',
        productIds: ['20'],
        excludeProductIds: ['21'],
      }),
    ).toEqual([{ productId: '22', score: vtb[1].score, support: 1 }]);

    // searched-then-purchased: normalized by the product's purchases after any query (21: 3, 22: 1)
    const stp = await searchedThenPurchased(db, { storeId: store, query: '  RAIN coat' });
    expect(stp.map((r) => [r.productId, r.count])).toEqual([
      ['21', 2],
      ['22', 1],
    ]);
    expect(stp[0].score).toBeCloseTo(2 / Math.sqrt(3), 9);
    expect(stp[1].score).toBeCloseTo(1, 9);
    expect(await searchedThenPurchased(db, { storeId: store, query: 'umbrella' })).toEqual([
      { productId: '21', score: 1 / Math.sqrt(3), count: 1 },
    ]);
    expect(await searchedThenPurchased(db, { storeId: store, query: 'nothing' })).toEqual([]);

    // popularity: engagement and sales side by side; unknown products are absent
    expect(await productPopularity(db, { storeId: store, productIds: ['10', '20', '21', '22', '999'] })).toEqual([
      { productId: '10', views: 0, clicks: 0, addToCarts: 6, units: 0, revenue: '0' },
      { productId: '20', views: 4, clicks: 1, addToCarts: 0, units: 0, revenue: '0' },
      { productId: '21', views: 0, clicks: 0, addToCarts: 0, units: 2, revenue: '15' },
      { productId: '22', views: 1, clicks: 0, addToCarts: 0, units: 0, revenue: '0' },
    ]);

    // trending with a prefix and a country together
    const later = new Date(Date.now() + 60_000);
    const de = await trendingQueries(db, { storeId: store, country: 'de', prefix: 'Rain', now: later });
    expect(de.map((r) => [r.query, r.recentVotes, r.searches])).toEqual([
      ['rain coat', 3, 3],
      ['rain boots', 2, 2],
    ]);
    const us = await trendingQueries(db, { storeId: store, country: 'US', prefix: 'rain', now: later });
    expect(us.map((r) => [r.query, r.recentVotes, r.searches])).toEqual([['rain coat', 2, 2]]);
    // FR votes come from the beacon `search` events only (3 sessions; searches counts served ones: 0)
    const fr = await trendingQueries(db, { storeId: store, country: 'FR', prefix: 'rain c', now: later });
    expect(fr.map((r) => [r.query, r.recentVotes, r.searches, r.clickSessions])).toEqual([['rain coat', 3, 0, 4]]);
    expect(await trendingQueries(db, { storeId: store, country: 'US', prefix: 'red', now: later })).toEqual([]);
  });

  it('replays the events, requests and orders processors into shadow tables, finds them identical and swaps without a gap in reads', {
    timeout: 240_000,
  }, async () => {
    const sc = generateScenario({ seed: 7, stores: ['replay_a', 'replay_b'], visitsPerStore: 30, ordersPerStore: 15 });
    await produce(infra, 'events', sc.events);
    await produce(infra, 'requests', sc.requests);
    await produce(infra, 'orders', sc.orders);
    const groups = (['events', 'requests', 'orders'] as const).map((k) => ({
      group: `streams.${k}`,
      topic: infra.topic(k),
    }));
    await waitCaughtUp(infra.kafka, groups, 60_000);
    const before = await readAggregates(q);

    // readers keep querying live tables the whole time: never an error, never an empty table
    let reading = true;
    let reads = 0;
    const readErrors: string[] = [];
    const reader = (async () => {
      while (reading) {
        try {
          const [r] = await db.query<{ e: string; p: string; t: string }>(
            `SELECT (SELECT count() FROM events_raw WHERE store_id = 'replay_a') AS e,
                    (SELECT sum(sessions) FROM co_view_pairs WHERE store_id = 'replay_a') AS p,
                    (SELECT sum(searches) FROM searches_served_daily WHERE store_id = 'replay_a') AS t`,
          );
          if (Number(r.e) === 0 || Number(r.p) === 0 || Number(r.t) === 0)
            readErrors.push(`empty read ${JSON.stringify(r)}`);
          reads++;
        } catch (err) {
          readErrors.push((err as Error).message);
        }
        await sleep(20);
      }
    })();

    const env = harness.replayEnv();
    for (const processor of ['events', 'requests', 'orders']) {
      const events: ReplayEvent[] = [];
      const result = await runReplay(env, { processor, from: { kind: 'earliest' } }, (e) => events.push(e));
      expect(result.swapped, processor).toBe(true);
      expect(result.differences, JSON.stringify(events.filter((e) => e.type === 'diff').slice(0, 5))).toBe(0);
      expect(result.messages).toBeGreaterThan(0);
      expect(events.some((e) => e.type === 'progress')).toBe(true);
    }
    reading = false;
    await reader;
    expect(readErrors).toEqual([]);
    expect(reads).toBeGreaterThan(10);

    const after = await readAggregates(q);
    expect(after).toEqual(before);
    // the old live tables are now the shadows; the rebuilt ones are live and keep receiving data
    const [{ n }] = await db.query<{ n: string }>(
      "SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'events_raw__shadow'",
    );
    expect(Number(n)).toBe(1);

    // the materialized views fire on the swapped-in source tables and write into the swapped-in targets
    // (never into the __shadow tables, which now hold the previous generation)
    const viewFed = async (suffix: string) => {
      const [r] = await db.query<{
        searches: string;
        votes: string;
        zero: string;
        views: string;
        clicks: string;
        carts: string;
        beacon_votes: string;
      }>(
        `SELECT
           (SELECT sum(searches) FROM searches_served_daily${suffix} WHERE store_id = 'replay_a') AS searches,
           (SELECT uniqExactMerge(voters) FROM trending_queries_hourly${suffix} WHERE store_id = 'replay_a' AND query = 'after swap') AS votes,
           (SELECT sum(zero_results) FROM trending_queries_hourly${suffix} WHERE store_id = 'replay_a' AND query = 'after swap') AS zero,
           (SELECT sum(views) FROM product_daily_engagement${suffix} WHERE store_id = 'replay_a' AND product_id = 4242) AS views,
           (SELECT sum(clicks) FROM product_daily_engagement${suffix} WHERE store_id = 'replay_a' AND product_id = 4242) AS clicks,
           (SELECT sum(add_to_carts) FROM product_daily_engagement${suffix} WHERE store_id = 'replay_a' AND product_id = 4242) AS carts,
           (SELECT uniqExactMerge(voters) FROM trending_search_events_hourly${suffix} WHERE store_id = 'replay_a' AND query = 'after swap') AS beacon_votes`,
      );
      return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)]));
    };
    const liveBefore = await viewFed('');
    const shadowBefore = await viewFed('__shadow');
    expect(liveBefore).toMatchObject({ votes: 0, views: 0, clicks: 0, carts: 0, beacon_votes: 0 });
    const now = new Date().toISOString();
    // 5 searches served by 3 shoppers (one of them searching three times), one with no results
    const afterReqs = ['s1', 's2', 's3', 's3', 's3'].map((sid, i) =>
      searchRequest({
        store_id: 'replay_a',
        query: 'After Swap',
        session_id: `after-${sid}`,
        country: 'DE',
        at: now,
        total: i === 0 ? 0 : 10,
      }),
    );
    await produce(
      infra,
      'requests',
      afterReqs.map((r) => ({ key: `replay_a:${r.session_id}`, value: r })),
    );
    // 4 views of 4242 in 2 sessions, 1 click, 2 add-to-carts, and 2 beacon searches
    const ev = (sid: string, fields: Partial<EnrichedEvent>) =>
      enrichedEvent({
        event_type: 'product_view',
        store_id: 'replay_a',
        session_id: `after-${sid}`,
        timestamp: now,
        ...fields,
      });
    const afterEvents = [
      ev('v1', { product_id: '4242' }),
      ev('v1', { product_id: '4242' }),
      ev('v1', { product_id: '4243' }),
      ev('v2', { product_id: '4242' }),
      ev('v2', { product_id: '4242' }),
      ev('v2', { event_type: 'product_click', product_id: '4242', position: 1 }),
      ev('v1', { event_type: 'add_to_cart', product_id: '4242', quantity: 1, price: '3.00', currency: 'USD' }),
      ev('v2', { event_type: 'add_to_cart', product_id: '4242', quantity: 1, price: '3.00', currency: 'USD' }),
      ev('v1', { event_type: 'search', query: 'after swap', contextual_data: { search_source: 'typed' } }),
      ev('v2', { event_type: 'search', query: 'after swap', contextual_data: { search_source: 'typed' } }),
    ];
    await produce(
      infra,
      'events',
      afterEvents.map((e) => ({ key: `replay_a:${e.session_id}`, value: e })),
    );
    await waitCaughtUp(infra.kafka, groups, 60_000);
    expect(await viewFed('')).toEqual({
      ...liveBefore,
      searches: liveBefore.searches + 5,
      votes: 3,
      zero: 1,
      views: 4,
      clicks: 1,
      carts: 2,
      beacon_votes: 2,
    });
    expect(await viewFed('__shadow')).toEqual(shadowBefore);
    const pairs = await db.query<{ a: string; b: string; n: string }>(
      "SELECT toString(product_a) AS a, toString(product_b) AS b, toString(sum(sessions)) AS n FROM co_view_pairs WHERE store_id = 'replay_a' AND product_a IN (4242, 4243) GROUP BY a, b ORDER BY a, b",
    );
    expect(pairs).toEqual([
      { a: '4242', b: '4242', n: '2' },
      { a: '4242', b: '4243', n: '1' },
      { a: '4243', b: '4242', n: '1' },
      { a: '4243', b: '4243', n: '1' },
    ]);
    // a replay of a part of the history refuses to swap unless told to
    await expect(
      runReplay(env, { processor: 'events', from: { kind: 'time', ms: Date.now() } }, () => {}),
    ).resolves.toMatchObject({ swapped: false });
  });

  it('replays from explicit partition offsets (--from 0:N,1:M) into the shadow tables only', {
    timeout: 120_000,
  }, async () => {
    const topic = infra.topic('requests');
    await waitCaughtUp(infra.kafka, [{ group: 'streams.requests', topic }], 60_000);
    const admin = infra.kafka.admin();
    await admin.connect();
    const marks = new Map(
      (await admin.fetchTopicOffsets(topic)).map((w) => [w.partition, { low: BigInt(w.low), high: BigInt(w.high) }]),
    );
    await admin.disconnect();
    const p0 = marks.get(0);
    const p1 = marks.get(1);
    if (!p0 || !p1) throw new Error('the requests topic has fewer than 2 partitions');
    expect(p0.high).toBeGreaterThan(4n);
    // partition 0 from its middle; partition 1 past its end (clamped to the high watermark: nothing);
    // the partitions not named start at their earliest offset
    const n = p0.high / 2n;
    const from = {
      kind: 'offsets' as const,
      offsets: new Map([
        [0, n],
        [1, p1.high + 1000n],
      ]),
    };
    const env = harness.replayEnv();
    const events: ReplayEvent[] = [];
    const result = await runReplay(env, { processor: 'requests', from }, (e) => events.push(e));
    let expected = p0.high - n;
    for (const [p, w] of marks) if (p > 1) expected += w.high - w.low;
    expect(result).toMatchObject({
      swapped: false,
      messages: Number(expected),
      stoppedAt: Object.fromEntries([...marks].map(([p, w]) => [String(p), w.high.toString()])),
    });

    // the shadow holds exactly the live rows at or after the start offsets (same dedup decisions)
    const positions = (sql: string) =>
      db.query<{ p: number; o: string }>(
        `SELECT _partition AS p, toString(_offset) AS o FROM ${sql} ORDER BY p, _offset`,
        { n: n.toString() },
      );
    const want = await positions('requests_raw WHERE (_partition = 0 AND _offset >= {n:UInt64}) OR _partition > 1');
    expect(want.length).toBeGreaterThan(0);
    expect(await positions('requests_raw__shadow')).toEqual(want);
    // and its materialized views fed the shadow aggregates only
    const [agg] = await db.query<{ shadow: string; rows: string }>(
      `SELECT (SELECT sum(searches) FROM searches_served_daily__shadow) AS shadow,
              (SELECT count() FROM requests_raw__shadow WHERE kind = 'search' AND status_code < 400) AS rows`,
    );
    expect(Number(agg.shadow)).toBe(Number(agg.rows));
    expect(Number(agg.rows)).toBe(want.length);
    // a partial history differs from live: the differences are reported, live is untouched
    expect(result.differences).toBeGreaterThan(0);
    expect(
      events.some(
        (e) => e.type === 'diff' && e.diff.table === 'requests_raw' && Number(e.diff.shadow) < Number(e.diff.live),
      ),
    ).toBe(true);
    const [{ live }] = await db.query<{ live: string }>('SELECT count() AS live FROM requests_raw');
    expect(Number(live)).toBeGreaterThan(want.length);

    // a partition the topic does not have is refused before anything is consumed
    await expect(
      runReplay(env, { processor: 'requests', from: { kind: 'offsets', offsets: new Map([[99, 0n]]) } }, () => {}),
    ).rejects.toMatchObject({
      name: 'ReplayError',
      status: 422,
      message: `topic ${topic} has no partition 99`,
    });
  });
});
