// The demo loader against the shared stack: a small demo store (its own store id) is configured, its
// catalog written through the catalog import path and its simulated sessions replayed through POST
// /beacon and the read API; then the planted ground truth is measured in the aggregates the stream
// processors built, over the analysts' SQL endpoint: co-view clusters in co_view_pairs, bundles in
// co_purchase_pairs, and the trending burst in the view trending_queries (the beacon's `search` events,
// plus the searches the storefront API served when this build serves search execute). The catalog the
// loader wrote is checked in the catalog projections: every product, the second market's prices, the B2B
// catalog's scope.
import { afterAll, describe, expect, it } from 'vitest';
import { TopicCatalogSink } from '../../services/demo/generator/catalog-sink.ts';
import {
  DEMO_B2B_CATALOG_ID,
  DEMO_EU_PRICE_LIST,
  DEMO_WHOLESALE_PRICE_LIST,
  generateDemoStore,
} from '../../services/demo/generator/generator.ts';
import { applyDemoConfig, loadCatalog, type ReplayStats, replaySessions } from '../../services/demo/generator/load.ts';
import { bundleQuality, coViewQuality, trendingRank } from '../../services/demo/generator/quality.ts';
import { loadConfig } from '../../services/common/config.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { sql, stack } from '../helpers/stack.ts';
import { closeTestStoreWriter, createTestStore, testStoreWriter, waitForApp } from '../helpers/stores.ts';
import { testSeed } from '../helpers/demo-stack.ts';

const log = createLogger('demo-load-test', 'warn');

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('demo store loaded into the running stack', () => {
  const s = stack();
  const config = loadConfig({
    ...process.env,
    ...s.env,
    KAFKA_BROKERS: s.kafkaBrokers.join(','),
    REDIS_URL: s.redisUrl,
    SCHEMA_REGISTRY_URL: s.schemaRegistryUrl,
    CLICKHOUSE_URL: '',
  });
  const redis = createRedis(config.redisUrl, { connectionName: 'demo-load-test' });
  const sink = new TopicCatalogSink({
    kafka: createKafka(config.kafkaBrokers, 'demo-load-test', log),
    redis,
    config,
    logger: log,
  });
  const store = generateDemoStore({
    seed: testSeed('stack'),
    products: 400,
    sessions: 400,
    imageBaseUrl: `${s.httpUrl}/demo/images`,
  });
  const gt = store.groundTruth;
  let storeId = '';
  let stats: ReplayStats | undefined;

  afterAll(async () => {
    await sink.close();
    redis.disconnect();
    await closeTestStoreWriter();
  });

  it('configures the store, loads the catalog and replays every session; every event is accepted once', async () => {
    const created = await createTestStore({ name: 'Demo Store (stack test)' });
    storeId = created.storeId;
    const writer = testStoreWriter();
    await applyDemoConfig(writer, storeId, store);
    await waitForApp(writer);
    const lines = await loadCatalog(sink, storeId, store);
    expect(lines).toBeGreaterThan(store.productCount);
    expect(sink.counts.products).toBe(store.productCount);

    stats = await replaySessions({
      baseUrl: s.httpUrl,
      token: created.token,
      storeId,
      store,
      sink,
      replayStartMs: Date.now(),
      from: 0,
      concurrency: 4,
      logger: log,
    });
    const planned = [...store.sessions()].reduce((n, x) => n + x.steps.length, 0);
    const purchases = [...store.sessions()].reduce(
      (n, x) => n + x.steps.filter((st) => st.type === 'purchase').length,
      0,
    );
    expect(stats.sessions).toBe(store.sessionCount);
    expect(stats.rejected).toBe(0);
    expect(stats.events + stats.duplicates).toBe(planned);
    expect(stats.orders).toBe(purchases);

    const rows = await until('events in events_raw', async () => {
      const [r] = await sql<{ n: string }>(
        'SELECT count() AS n FROM discovery.events_raw WHERE store_id = {store:String}',
        { store: storeId },
      );
      return Number(r.n) >= planned ? Number(r.n) : undefined;
    });
    expect(rows).toBe(planned);
    // the whole demo replayed through the stack: about 20 s alone, a minute and more beside other suites
  }, 180_000);

  it('the demo catalog reached ClickHouse: every product, the second market prices, the B2B catalog scope', async () => {
    expect(storeId).not.toBe('');
    const count = async (query: string, params: Record<string, string> = {}) =>
      Number((await sql<{ n: string }>(query, { store: storeId, ...params }))[0].n);
    // what the generator wrote
    const prices = [...store.prices()];
    const euPrices = prices.filter((p) => p.price_list_id === DEMO_EU_PRICE_LIST).length;
    const wholesalePrices = prices.filter((p) => p.price_list_id === DEMO_WHOLESALE_PRICE_LIST).length;
    const b2bCollections = new Set((store.b2b.catalog.collection_ids ?? []).map(String));
    const scope = new Set<string>((store.b2b.catalog.product_ids ?? []).map(String));
    for (const c of store.collections) if (b2bCollections.has(c.id)) for (const id of c.product_ids) scope.add(id);
    expect(store.markets.map((m) => m.price_list_id)).toEqual([null, DEMO_EU_PRICE_LIST]);
    expect(euPrices).toBeGreaterThan(0);
    expect(scope.size).toBeGreaterThan(0);

    await until('every demo product in catalog_products_current', async () => {
      const n = await count(
        'SELECT toString(count()) AS n FROM discovery.catalog_products_current WHERE store_id = {store:String}',
      );
      return n >= store.productCount ? n : undefined;
    });
    expect(
      await count(
        'SELECT toString(count()) AS n FROM discovery.catalog_products_current WHERE store_id = {store:String}',
      ),
    ).toBe(store.productCount);
    expect(
      await count(
        'SELECT toString(uniqExact(product_id)) AS n FROM discovery.catalog_products_current WHERE store_id = {store:String}',
      ),
    ).toBe(store.productCount);

    // the second market (EUR) prices every variant; the wholesale price list every B2B variant
    await until('the EUR and wholesale price lists', async () => {
      const rows = await sql<{ list: string; currency: string; n: string }>(
        `SELECT price_list_id AS list, any(currency) AS currency, toString(count()) AS n FROM discovery.catalog_prices_current
         WHERE store_id = {store:String} GROUP BY price_list_id ORDER BY price_list_id`,
        { store: storeId },
      );
      const total = rows.reduce((a, r) => a + Number(r.n), 0);
      return total >= euPrices + wholesalePrices ? rows : undefined;
    }).then((rows) =>
      expect(rows).toEqual([
        { list: DEMO_EU_PRICE_LIST, currency: 'EUR', n: String(euPrices) },
        { list: DEMO_WHOLESALE_PRICE_LIST, currency: 'USD', n: String(wholesalePrices) },
      ]),
    );

    // the B2B catalog's scope: its listed products plus the members of its listed collections
    const scoped = await until('the B2B catalog scope', async () => {
      const rows = await sql<{ id: string }>(
        'SELECT toString(product_id) AS id FROM discovery.catalog_b2b_scope WHERE store_id = {store:String} AND catalog_id = {catalog:String} ORDER BY id',
        { store: storeId, catalog: DEMO_B2B_CATALOG_ID },
      );
      return rows.length >= scope.size ? rows.map((r) => r.id) : undefined;
    });
    expect(scoped).toEqual([...scope].sort());
  });

  it('the planted co-view clusters are the nearest neighbours in co_view_pairs', async () => {
    expect(storeId).not.toBe('');
    const members = gt.coViewClusters.flatMap((c) => c.productIds);
    await until('co-view pairs of every cluster product', async () => {
      const [r] = await sql<{ n: string }>(
        "SELECT uniqExact(product_a) AS n FROM discovery.co_view_pairs WHERE store_id = {store:String} AND has(splitByChar(',', {ids:String}), toString(product_a)) AND product_a != product_b",
        { store: storeId, ids: members.join(',') },
      );
      return Number(r.n) >= members.length ? true : undefined;
    });
    const related = async (id: string) =>
      (
        await sql<{ b: string }>(
          `SELECT toString(product_b) AS b FROM discovery.co_view_pairs
           WHERE store_id = {store:String} AND product_a = {a:UInt64} AND product_b != product_a
           GROUP BY product_b ORDER BY sum(sessions) DESC, product_b LIMIT 10`,
          { store: storeId, a: id },
        )
      ).map((r) => r.b);
    const q = await coViewQuality(gt, related);
    expect(q.products).toBe(members.length);
    expect(q.recall).toBeGreaterThanOrEqual(0.95);
  });

  it('the planted bundles are what co_purchase_pairs says is bought together', async () => {
    const members = gt.bundles.flatMap((b) => b.productIds);
    await until('co-purchase pairs of every bundle product', async () => {
      const [r] = await sql<{ n: string }>(
        "SELECT uniqExact(product_a) AS n FROM discovery.co_purchase_pairs WHERE store_id = {store:String} AND has(splitByChar(',', {ids:String}), toString(product_a)) AND product_a != product_b",
        { store: storeId, ids: members.join(',') },
      );
      return Number(r.n) >= members.length ? true : undefined;
    });
    const boughtWith = async (id: string) =>
      (
        await sql<{ b: string }>(
          `SELECT toString(product_b) AS b FROM discovery.co_purchase_pairs
           WHERE store_id = {store:String} AND product_a = {a:UInt64} AND product_b != product_a
           GROUP BY product_b HAVING sum(orders) > 0 ORDER BY sum(orders) DESC, product_b LIMIT 10`,
          { store: storeId, a: id },
        )
      ).map((r) => r.b);
    const q = await bundleQuality(gt, boughtWith);
    expect(q.recall).toBe(1);
  });

  it('the trending burst is the top query of the last hour', async () => {
    // every replayed search is also a `search` event on /beacon, which feeds trending_queries whether or
    // not this build serves search execute (stats.unavailable), so this holds in either case
    expect(storeId).not.toBe('');
    expect(gt.trending.sessions).toBeGreaterThan(0);
    const top = await until('the trending burst in trending_queries', async () => {
      const rows = await sql<{ query: string; voters: string }>(
        `SELECT query, toString(uniqExactMerge(t.voters)) AS voters FROM discovery.trending_queries AS t
         WHERE store_id = {store:String} AND bucket >= toStartOfHour(now() - INTERVAL 1 HOUR)
         GROUP BY query ORDER BY uniqExactMerge(t.voters) DESC, query LIMIT 5`,
        { store: storeId },
      );
      const burst = rows.find((r) => r.query === gt.trending.query);
      return burst && Number(burst.voters) >= gt.trending.sessions ? rows : undefined;
    });
    expect(
      trendingRank(
        gt,
        top.map((r) => r.query),
      ),
    ).toBe(1);
    // one vote per burst session (each session searched it once, as a distinct shopper)
    expect(top[0]).toEqual({ query: gt.trending.query, voters: String(gt.trending.sessions) });
  });
});
