// The processors in this process over a private chDB database, against the real broker, registry and
// redis-server: poison messages go to the DLQ without blocking the partition, trending notifications
// reach `agg:trending` with the current votes, the query helpers rank what the stream produced, and a
// replay rebuilds identical aggregates and swaps them without a gap in reads.
import type { Redis } from 'ioredis';
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { relatedProducts, searchedThenViewed, searchesServed, trendingCells, trendingQueries, bestSellers, trendingProducts } from '../../clickhouse/queries/index.ts';
import { type Config, loadConfig } from '../../services/common/config.ts';
import { createKafka } from '../../services/common/kafka.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { selectProcessors } from '../../streams/registry.ts';
import { type ReplayEvent, runReplay } from '../../streams/replay/replay.ts';
import { applyRetention, type Streams, startStreams } from '../../streams/service.ts';
import { parseTrendingMessage, TRENDING_CHANNEL, type TrendingDelta } from '../../streams/trending/notify.ts';
import { privateDb } from '../helpers/chdb.ts';
import { enrichedEvent, type Infra, order, produce, produceRaw, searchRequest, startInfra, waitCaughtUp } from './helpers.ts';
import { generateScenario } from './scenario.ts';
import { type QueryFn, readAggregates } from './truth.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(100);
  }
}

describe('stream processors in process', () => {
  let infra: Infra;
  let db: Db;
  let redis: Redis;
  let streams: Streams;
  let config: Config;
  const logger = createLogger('streams-test', 'warn');

  beforeAll(async () => {
    infra = await startInfra();
    db = await privateDb(`streams_${ulid().toLowerCase()}`);
    await migrate(db);
    config = loadConfig({
      KAFKA_BROKERS: infra.brokers.join(','),
      REDIS_URL: infra.redisUrl,
      SCHEMA_REGISTRY_URL: infra.registryUrl,
      KAFKA_TOPIC_PREFIX: infra.prefix,
      DATA_DIR: infra.dir,
      LOG_LEVEL: 'warn',
      STREAMS_MAX_BATCH_MESSAGES: '200',
      STREAMS_SESSION_TIMEOUT_MS: '6000',
    });
    redis = createRedis(infra.redisUrl);
    streams = await startStreams({ config, db, redis, kafka: createKafka(infra.brokers, 'streams-test', logger), logger, processors: selectProcessors('all') });
  });
  afterAll(async () => {
    await streams?.stop();
    redis?.disconnect();
    await db?.close();
    await infra?.stop();
  });

  const q: QueryFn = (sql) => db.query(sql);

  it('applies EVENTS_RETENTION_DAYS to the raw tables at start-up', async () => {
    const own = await privateDb(`retention_${ulid().toLowerCase()}`);
    try {
      await migrate(own);
      await applyRetention(own, 30, logger);
      const rows = await own.query<{ name: string; engine_full: string }>(
        "SELECT name, engine_full FROM system.tables WHERE database = currentDatabase() AND name IN ('events_raw', 'requests_raw', 'orders_raw') ORDER BY name",
      );
      expect(rows.map((r) => [r.name, /TTL toDateTime\(ts\) \+ toIntervalDay\((\d+)\)/.exec(r.engine_full)?.[1]])).toEqual([
        ['events_raw', '30'],
        ['orders_raw', '30'],
        ['requests_raw', '30'],
      ]);
    } finally {
      await own.close();
    }
  });

  it('sends garbage bytes and schema-violating values to the DLQ with the reason, and keeps the partition flowing', async () => {
    const store = `dlq_${ulid()}`;
    const key = `${store}:s1`; // one key → one partition, so the good event sits behind the poison
    const bad = enrichedEvent({ event_type: 'product_view', store_id: store, session_id: 's1', timestamp: new Date().toISOString(), product_id: '7' });
    await produceRaw(infra, 'events', [{ key, value: Buffer.from('definitely not avro') }]);
    await produce(infra, 'events', [{ key, value: { ...bad, price: 'twelve dollars' } }]);
    await produceRaw(infra, 'events', [{ key, value: Buffer.from([0, 0, 0, 0x7f, 0x7f, 1, 2, 3]) }]); // unknown schema id
    const good = enrichedEvent({ event_type: 'product_view', store_id: store, session_id: 's1', timestamp: new Date().toISOString(), product_id: '8' });
    await produce(infra, 'events', [{ key, value: good }]);

    const rows = await until(async () => {
      const r = await db.query<{ event_id: string }>('SELECT event_id FROM events_raw WHERE store_id = {s:String}', { s: store });
      return r.length ? r : undefined;
    });
    expect(rows.map((r) => r.event_id)).toEqual([good.event_id]);

    const consumer = infra.kafka.consumer({ groupId: `dlq-reader-${ulid()}` });
    await consumer.connect();
    await consumer.subscribe({ topic: `${infra.topic('events')}.dlq`, fromBeginning: true });
    const seen: { reason: string; topic: string; partition: string; offset: string; value: Buffer | null }[] = [];
    await consumer.run({
      eachMessage: async ({ message }) => {
        const h = (n: string) => String(message.headers?.[n] ?? '');
        seen.push({ reason: h('x-dlq-reason'), topic: h('x-dlq-original-topic'), partition: h('x-dlq-original-partition'), offset: h('x-dlq-original-offset'), value: message.value });
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
  });

  it('publishes changed trending cells with their current votes on agg:trending, and ranks the uptick', async () => {
    const store = `trend_${ulid()}`;
    const sub = createRedis(infra.redisUrl);
    const got: TrendingDelta[] = [];
    await sub.subscribe(TRENDING_CHANNEL);
    sub.on('message', (_ch, msg) => got.push(...parseTrendingMessage(msg).filter((d) => d.store_id === store)));
    try {
      const now = new Date();
      const at = now.toISOString();
      const old = new Date(now.getTime() - 3 * 24 * 3600_000).toISOString();
      const reqs = [
        // 'boots' is steady: searched 3 days ago by 4 shoppers and today by 2
        ...['a', 'b', 'c', 'd'].map((s) => searchRequest({ store_id: store, query: 'Boots', session_id: `old-${s}`, country: 'DE', at: old })),
        ...['a', 'b'].map((s) => searchRequest({ store_id: store, query: 'boots', session_id: s, country: 'DE', at })),
        // 'red dress' surges today: 3 shoppers, one of them searching three times (one vote)
        ...['x', 'y', 'z', 'z', 'z'].map((s) => searchRequest({ store_id: store, query: 'Red  Dress', session_id: s, country: s === 'x' ? 'US' : 'DE', at })),
        // one shopper alone cannot make a query trend
        ...[1, 2, 3, 4].map(() => searchRequest({ store_id: store, query: 'spam', session_id: 'bot-like', country: 'DE', at })),
      ];
      // shopper x also clicked a result after searching: the click signal of the query
      await produce(infra, 'events', [
        enrichedEvent({ event_type: 'search', store_id: store, session_id: 'x', timestamp: at, query: 'red dress', contextual_data: { search_source: 'typed' } }),
        enrichedEvent({ event_type: 'product_click', store_id: store, session_id: 'x', timestamp: at, product_id: '77', position: 1 }),
      ].map((e) => ({ key: `${store}:x`, value: e })));
      const t0 = Date.now();
      await produce(infra, 'requests', reqs.map((r) => ({ key: `${store}:${r.session_id}`, value: r })));
      const bucket = `${at.slice(0, 13)}:00:00.000Z`;
      const dress = await until(async () => {
        const de = got.filter((d) => d.query === 'red dress' && d.country === 'DE' && d.bucket === bucket).at(-1);
        return de && de.votes === 2 ? de : undefined;
      });
      expect(Date.now() - t0).toBeLessThan(20_000);
      expect(dress).toEqual({ store_id: store, country: 'DE', query: 'red dress', bucket, votes: 2 });
      // the 'boots' searches are keyed by other sessions, so other partitions: wait for their cells too
      const oldBucket = `${old.slice(0, 13)}:00:00.000Z`;
      const votesOf = (b: string) => got.filter((d) => d.query === 'boots' && d.country === 'DE' && d.bucket === b).at(-1)?.votes;
      await until(async () => (votesOf(bucket) === 2 && votesOf(oldBucket) === 4 ? true : undefined));

      const de = await trendingQueries(db, { storeId: store, country: 'DE', now: new Date(now.getTime() + 60_000) });
      expect(de.map((t) => t.query)).toEqual(['red dress', 'boots']);
      expect(de[0].recentVotes).toBe(2);
      await until(async () => {
        const r = await db.query<{ n: string }>('SELECT count() AS n FROM searched_then_viewed WHERE store_id = {s:String}', { s: store });
        return Number(r[0].n) > 0 ? true : undefined;
      });
      const all = await trendingQueries(db, { storeId: store, now: new Date(now.getTime() + 60_000) });
      expect(all[0]).toMatchObject({ query: 'red dress', recentVotes: 3, searches: 5, clickSessions: 1, zeroResultRate: 0 });
      expect(all.find((t) => t.query === 'spam')).toBeUndefined();
      const prefixed = await trendingQueries(db, { storeId: store, prefix: 'B', now: new Date(now.getTime() + 60_000) });
      expect(prefixed.map((t) => t.query)).toEqual(['boots']);
      // other stores see nothing of this one
      expect(await trendingQueries(db, { storeId: `${store}_other`, now })).toEqual([]);

      const cells = await trendingCells(db, { storeId: store, sinceHours: 24 * 7 });
      expect(cells).toContainEqual({ store_id: store, country: 'US', query: 'red dress', bucket, votes: 1 });
      expect(await searchesServed(db, { storeId: store })).toBe(String(reqs.length));
    } finally {
      sub.disconnect();
    }
  });

  it('ranks related products, journeys, best sellers and trending products from what the stream produced', async () => {
    const store = `rel_${ulid()}`;
    const t = Date.now() - 3600_000;
    const at = (i: number) => new Date(t + i * 1000).toISOString();
    const events = [];
    // 6 sessions view 1 and 2 together; 1 is also viewed with the best-seller 9 in 2 sessions, but 9 is
    // viewed by 30 other sessions: cosine must rank 2 above 9 for product 1
    for (let s = 0; s < 6; s++) {
      events.push(enrichedEvent({ event_type: 'search', store_id: store, session_id: `p${s}`, timestamp: at(0), query: 'Linen Shirt', contextual_data: { search_source: 'typed' } }));
      events.push(enrichedEvent({ event_type: 'product_view', store_id: store, session_id: `p${s}`, timestamp: at(1), product_id: '1' }));
      events.push(enrichedEvent({ event_type: 'product_view', store_id: store, session_id: `p${s}`, timestamp: at(2), product_id: '2' }));
    }
    for (let s = 0; s < 2; s++) {
      events.push(enrichedEvent({ event_type: 'product_view', store_id: store, session_id: `q${s}`, timestamp: at(1), product_id: '1' }));
      events.push(enrichedEvent({ event_type: 'product_view', store_id: store, session_id: `q${s}`, timestamp: at(2), product_id: '9' }));
    }
    for (let s = 0; s < 30; s++) events.push(enrichedEvent({ event_type: 'product_view', store_id: store, session_id: `r${s}`, timestamp: at(3), product_id: '9' }));
    await produce(infra, 'events', events.map((e) => ({ key: `${store}:${e.session_id}`, value: e })));
    const line = (p: string, qty: number, price: string) => ({ product_id: p, variant_id: null, quantity: qty, price });
    const orders = [
      order({ store_id: store, order_id: 'o1', created_at: at(10), line_items: [line('1', 1, '10.00'), line('3', 1, '5.00')] }),
      order({ store_id: store, order_id: 'o2', created_at: at(11), line_items: [line('1', 1, '10.00'), line('3', 2, '5.00')] }),
      order({ store_id: store, order_id: 'o3', created_at: at(12), line_items: [line('9', 1, '100.00')] }),
      order({ store_id: store, order_id: 'o4', created_at: at(13), line_items: [line('2', 1, '1.00')] }),
    ];
    // o4 is cancelled later: it must vanish from revenue
    const cancelled = { ...orders[3], cancelled: true };
    await produce(infra, 'orders', [...orders, cancelled].map((o) => ({ key: `${store}:${o.order_id}`, value: o })));

    await until(async () => {
      const r = await db.query<{ n: string }>('SELECT count() AS n FROM orders_raw WHERE store_id = {s:String}', { s: store });
      const e = await db.query<{ n: string }>('SELECT count() AS n FROM events_raw WHERE store_id = {s:String}', { s: store });
      return Number(r[0].n) >= 6 && Number(e[0].n) >= events.length ? true : undefined;
    });
    await sleep(300);
    const coView = await relatedProducts(db, { storeId: store, strategy: 'co_view', productIds: ['1'] });
    expect(coView.map((r) => r.productId)).toEqual(['2', '9']);
    expect(coView[0].support).toBe(6);
    expect(coView[0].score).toBeCloseTo(6 / Math.sqrt(8 * 6), 6);
    const cart = await relatedProducts(db, { storeId: store, strategy: 'co_view', productIds: ['1', '2'], excludeProductIds: [] });
    expect(cart.map((r) => r.productId)).toEqual(['9']);
    const fbt = await relatedProducts(db, { storeId: store, strategy: 'co_purchase', productIds: ['1'] });
    expect(fbt).toEqual([{ productId: '3', score: 1, support: 2 }]);
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

  it('replays the events, requests and orders processors into shadow tables, finds them identical and swaps without a gap in reads', { timeout: 240_000 }, async () => {
    const sc = generateScenario({ seed: 7, stores: ['replay_a', 'replay_b'], visitsPerStore: 30, ordersPerStore: 15 });
    await produce(infra, 'events', sc.events);
    await produce(infra, 'requests', sc.requests);
    await produce(infra, 'orders', sc.orders);
    const groups = (['events', 'requests', 'orders'] as const).map((k) => ({ group: `streams.${k}`, topic: infra.topic(k) }));
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
          if (Number(r.e) === 0 || Number(r.p) === 0 || Number(r.t) === 0) readErrors.push(`empty read ${JSON.stringify(r)}`);
          reads++;
        } catch (err) {
          readErrors.push((err as Error).message);
        }
        await sleep(20);
      }
    })();

    const env = { config, db, redis, kafka: infra.kafka, logger, streams, deps: streams.deps, runOptions: streams.runOptions };
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
    const [{ n }] = await db.query<{ n: string }>("SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'events_raw__shadow'");
    expect(Number(n)).toBe(1);
    const fresh = enrichedEvent({ event_type: 'product_view', store_id: 'replay_a', session_id: 'after-swap', timestamp: new Date().toISOString(), product_id: '4242' });
    await produce(infra, 'events', [{ key: 'replay_a:after-swap', value: fresh }]);
    await until(async () => {
      const r = await db.query<{ n: string }>("SELECT count() AS n FROM co_view_pairs WHERE store_id = 'replay_a' AND product_a = 4242");
      return Number(r[0].n) > 0 ? true : undefined;
    });
    // a replay of a part of the history refuses to swap unless told to
    await expect(runReplay(env, { processor: 'events', from: { kind: 'time', ms: Date.now() } }, () => {})).resolves.toMatchObject({ swapped: false });
  });
});
