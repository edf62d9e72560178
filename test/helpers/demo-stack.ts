// A demo store on the running stack, loaded through the catalog import path (catalog topics → stream
// processors → ClickHouse projections → the read API's in-process index): the setup of the
// product-result suites (browse, search). Every projection is awaited before the suite starts.
import { expect, vi } from 'vitest';
import { loadConfig } from '../../services/common/config.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { TopicCatalogSink } from '../../services/demo/generator/catalog-sink.ts';
import { type DemoStore, generateDemoStore } from '../../services/demo/generator/generator.ts';
import { applyDemoConfig, loadCatalog, type ReplayStats, replaySessions } from '../../services/demo/generator/load.ts';
import { sql, stack } from './stack.ts';
import { closeTestStoreWriter, createTestStore, testStoreWriter, waitForApp } from './stores.ts';

export interface DemoStack {
  storeId: string;
  token: string;
  demo: DemoStore;
  sink: TopicCatalogSink;
  redis: ReturnType<typeof createRedis>;
  base: string;
  /** POST a storefront endpoint with the store's token; the body parsed */
  post<T = Record<string, any>>(
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ res: Response; body: T }>;
  /** replay the demo's shopper sessions through the running app (beacon, read API, orders) */
  replay(): Promise<ReplayStats>;
  close(): Promise<void>;
}

/**
 * The demo seed of a suite: fixed by its name, so a run is reproducible and a failure can be
 * replayed; `TEST_SEED=<anything>` varies every suite's store at once (explore other seeds).
 */
export function testSeed(name: string): string {
  return process.env.TEST_SEED ? `${name}-${process.env.TEST_SEED}` : name;
}

/** a demo store generated for the running test stack (image URLs on its app) */
export function generateTestDemo(opts: {
  name: string;
  products: number;
  sessions?: number;
  seed?: string;
}): DemoStore {
  return generateDemoStore({
    seed: opts.seed ?? testSeed(opts.name),
    products: opts.products,
    sessions: opts.sessions ?? 50,
    imageBaseUrl: `${stack().httpUrl}/demo/images`,
  });
}

export async function demoStack(opts: {
  name: string;
  products: number;
  sessions?: number;
  /** default: testSeed(name) */
  seed?: string;
  /** a store generated already (generateTestDemo), else one is generated from the options above */
  demo?: DemoStore;
}): Promise<DemoStack> {
  const log = createLogger(opts.name, 'warn');
  const s = stack();
  const config = loadConfig({
    ...process.env,
    ...s.env,
    KAFKA_BROKERS: s.kafkaBrokers.join(','),
    REDIS_URL: s.redisUrl,
    SCHEMA_REGISTRY_URL: s.schemaRegistryUrl,
    CLICKHOUSE_URL: '',
  });
  const redis = createRedis(config.redisUrl, { connectionName: opts.name });
  const sink = new TopicCatalogSink({
    kafka: createKafka(config.kafkaBrokers, opts.name, log),
    redis,
    config,
    logger: log,
  });
  const demo = opts.demo ?? generateTestDemo(opts);
  const created = await createTestStore({ name: opts.name });
  const writer = testStoreWriter();
  await applyDemoConfig(writer, created.storeId, demo);
  await waitForApp(writer);
  await loadCatalog(sink, created.storeId, demo);
  const count = async (table: string) =>
    (
      await sql<{ n: string }>(
        `SELECT toString(count()) AS n FROM ${table} FINAL WHERE store_id = '${created.storeId}' AND is_deleted = 0`,
      )
    )[0]?.n;
  const priceEntries = [...demo.prices()].length;
  // each catalog topic has its own processor, so each projection is awaited
  await vi.waitFor(
    async () => {
      expect(await count('catalog_products')).toBe(String(demo.productCount));
      expect(await count('catalog_prices')).toBe(String(priceEntries));
      expect(await count('catalog_collections')).toBe(String(demo.collections.length));
      expect(await count('catalog_metaobjects')).toBe(String(demo.metaobjects.length));
      expect(await count('catalog_b2b_catalogs')).toBe('1');
    },
    { timeout: 90_000, interval: 250 },
  );
  const base = `${s.httpUrl}/api/storefront/v1`;
  return {
    storeId: created.storeId,
    token: created.token,
    demo,
    sink,
    redis,
    base,
    async post(path, body = {}, headers = {}) {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'x-storefront-access-token': created.token,
          ...headers,
        },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      return { res, body: (text ? JSON.parse(text) : null) as never };
    },
    replay: () =>
      replaySessions({
        baseUrl: s.httpUrl,
        token: created.token,
        storeId: created.storeId,
        store: demo,
        sink,
        replayStartMs: Date.now(),
        from: 0,
        concurrency: 4,
        logger: log,
      }),
    async close() {
      await sink.close();
      redis.disconnect();
      await closeTestStoreWriter();
    },
  };
}
