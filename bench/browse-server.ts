// The server half of bench/browse.ts (run by it, over IPC): in its own process, so the load generator
// does not share its event loop and chDB has this process's data directory to itself.
//
//  1. builds the synthetic store (bench/browse-store.ts) into a fresh chDB directory (BENCH_DIR) through
//     the catalog processors, with progress on stderr
//  2. loads the CatalogIndex for the store (subscribed to agg:catalog on REDIS_URL, as the app does) and
//     times catalog point reads of 50 ids: through the index and through clickhouse/queries/catalog.ts
//     productsByIds (the query path the index replaces)
//  3. serves storefrontPlugin twice on one Fastify app, as the app mounts it: uncached at
//     /api/storefront/v1 (resultsCache null) and behind the Redis results cache at /cached/api/storefront/v1;
//     a memory store directory (test/storefront/harness.ts) with one store, its token and a price_asc sort
//     order; the real rate limiter with limits no run reaches; request events dropped (bench/autocomplete.ts
//     measures their cost)
//  4. on {cmd: 'stats'}: GC pause time and CPU time so far, results-cache lookups by result, and the
//     store's catalog version (part of the results-cache key; the index bumps it on every applied change
//     and on a signals refresh that changed something)
//  5. on {cmd: 'ranked', n}: sets the ranked collection lists' budget (results/ranked.ts; 0 turns them off,
//     so every request computes its list) and answers {type: 'ranked'}
//  6. on {cmd: 'change', n}: writes a changed product (new title) of the `fresh` collection through the
//     products processor, whose afterWrite publishes its record key on agg:catalog (as in the app), and
//     answers with the time the insert returned (performance.timeOrigin-based, comparable across processes)
//
// Messages to the parent: {type: 'ready', port, token, storeId, figures}, {type: 'changed', …}.
import { createBlockServices } from '../services/storefront/blocks/services.ts';
import { rankedLists } from '../services/storefront/results/ranked.ts';
import { PerformanceObserver } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import Fastify from 'fastify';
import { openDb } from '../clickhouse/client.ts';
import { migrate } from '../clickhouse/migrate.ts';
import { productsByIds } from '../clickhouse/queries/catalog.ts';
import { parseTrustedProxies } from '../services/common/enrich.ts';
import { createLogger } from '../services/common/logger.ts';
import { registry } from '../services/common/metrics.ts';
import { AutocompleteIndex } from '../services/storefront/autocomplete/index.ts';
import { MAX_PARAM_LENGTH, STOREFRONT_PREFIX, storefrontPlugin } from '../services/storefront/plugin.ts';
import { createRateLimiter } from '../services/storefront/rate-limit.ts';
import { ResultsCache } from '../services/storefront/results/cache.ts';
import { CatalogIndex } from '../services/storefront/results/catalog.ts';
import { createSearchServices, noFeedbackLog } from '../services/storefront/search/services.ts';
import { StoreViews } from '../services/storefront/store-view.ts';
import { MemoryDirectory } from '../test/storefront/harness.ts';
import { buildStore, catalogWriter, collectionsOf, membersOf, productPayload } from './browse-store.ts';

const N = Number(process.env.BENCH_PRODUCTS ?? 100_000);
const dir = process.env.BENCH_DIR as string;
const redisUrl = process.env.REDIS_URL as string;
const send = (m: unknown) => process.send?.(m);
const pct = (xs: number[], p: number) => {
  const a = [...xs].sort((x, y) => x - y);
  return a[Math.min(a.length - 1, Math.floor((p / 100) * a.length))];
};
const round = (v: number, d = 2) => Math.round(v * 10 ** d) / 10 ** d;

const logger = createLogger('bench-browse', (process.env.LOG_LEVEL as 'warn') ?? 'warn');
const db = await openDb({ chdbPath: dir, database: 'bench' });
await migrate(db);

// ── 1. the store
const directory = new MemoryDirectory();
const { storeId, token } = directory.addStore({ storeId: 'bench', name: 'browse bench' });
directory.put(storeId, 'sort_order', {
  code: 'price_asc',
  nickname: 'Price: low to high',
  scope: 'both',
  expressions: [{ attribute: 'price', direction: 'asc' }],
});
process.stderr.write(`building a store of ${N} products through the catalog processors…\n`);
let lastShown = 0;
const built = await buildStore(db, storeId, N, (done, s) => {
  if (done === N || s - lastShown >= 5) {
    lastShown = s;
    process.stderr.write(`  ${done}/${N} products, ${s.toFixed(1)} s\n`);
  }
});

// ── 2. the index and point reads
const subscriber = new Redis(redisUrl, { lazyConnect: false });
const catalogIndex = new CatalogIndex({ db, subscriber, logger });
await catalogIndex.start();
process.stderr.write('loading the catalog index…\n');
const t = performance.now();
const catalog = await catalogIndex.get(storeId);
const indexLoadSeconds = (performance.now() - t) / 1000;
const heapMb = process.memoryUsage().heapUsed / 1024 / 1024;

// 50 ids spread over the store, a different set each repetition
const idSets = Array.from({ length: 200 }, (_, r) =>
  Array.from({ length: 50 }, (_, i) => String(((r * 977 + i * 104_729) % N) + 1)),
);
const indexUs: number[] = [];
for (let r = 0; r < 2_000; r++) {
  const ids = idSets[r % idSets.length];
  const a = performance.now();
  const got = [];
  for (const id of ids) got.push(catalog.products.get(id));
  indexUs.push((performance.now() - a) * 1000);
  if (got.length !== 50 || got.some((x) => !x)) throw new Error('index point read missed a product');
}
const queryMs: number[] = [];
await productsByIds(db, storeId, idSets[0]);
for (let r = 0; r < 40; r++) {
  const a = performance.now();
  const rows = await productsByIds(db, storeId, idSets[r % idSets.length]);
  queryMs.push(performance.now() - a);
  if (rows.length !== 50) throw new Error(`productsByIds returned ${rows.length} of 50`);
}

// ── 3. the HTTP app
const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
const views = new StoreViews(directory);
const high = 10_000_000;
const rateLimiter = createRateLimiter(redis, {
  storePerSec: high,
  storeBurst: high,
  ipPerSec: high,
  ipBurst: high,
  timeoutMs: 200,
});
const frame = {
  directory,
  views,
  rateLimiter,
  trustedProxies: parseTrustedProxies('127.0.0.0/8,::1/128'),
  bodyLimit: 64 * 1024,
  logger,
  build: 'bench',
  emit: () => {},
};
const autocomplete = new AutocompleteIndex({ rebuildDebounceMs: 0 });
const search = await createSearchServices({ db, redis, logger, recordFeedback: noFeedbackLog });
const blocks = await createBlockServices({ db, logger });
const app = Fastify({ routerOptions: { maxParamLength: MAX_PARAM_LENGTH }, bodyLimit: 1024 * 1024 });
await app.register(storefrontPlugin, {
  ...frame,
  autocomplete,
  catalog: catalogIndex,
  resultsCache: null,
  search,
  blocks,
  prefix: STOREFRONT_PREFIX,
});
await app.register(storefrontPlugin, {
  ...frame,
  autocomplete,
  search,
  blocks,
  catalog: catalogIndex,
  // BENCH_CACHE_TIMEOUT_MS: the cache's GET timeout (default: the ResultsCache default), to try another
  resultsCache: new ResultsCache(
    redis,
    process.env.BENCH_CACHE_TIMEOUT_MS ? { timeoutMs: Number(process.env.BENCH_CACHE_TIMEOUT_MS) } : {},
  ),
  prefix: `/cached${STOREFRONT_PREFIX}`,
});
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;

// ── 4. changes for the freshness probe: products of the `fresh` collection, one after the other
const publisher = new Redis(redisUrl);
// the processor's own afterWrite publishes the record key on agg:catalog (streams/catalog/notify.ts)
const writer = catalogWriter(db, storeId, { replay: false, redis: publisher, logger });
const freshCollection = collectionsOf(N).find((c) => c.handle === 'fresh');
const freshIds = freshCollection ? membersOf(freshCollection, N) : [];
// GC pauses and CPU of this process, asked for around each run
let gcMs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcMs += e.duration;
}).observe({ entryTypes: ['gc'] });

process.on('message', async (m: { cmd: string; n: number }) => {
  if (m.cmd === 'stats') {
    const cpu = process.cpuUsage();
    // results-cache lookups so far (a GET slower than the cache's timeout counts as a miss)
    const lookups = { hit: 0, miss: 0, error: 0 };
    const metric = await registry.getSingleMetric('storefront_results_cache_total')?.get();
    for (const v of metric?.values ?? []) lookups[v.labels.result as keyof typeof lookups] += v.value;
    send({
      lookups,
      type: 'stats',
      at: performance.timeOrigin + performance.now(),
      gcMs,
      cpuMs: (cpu.user + cpu.system) / 1000,
      version: catalogIndex.peek(storeId)?.version ?? 0,
    });
  } else if (m.cmd === 'ranked') {
    rankedLists.budget = m.n;
    rankedLists.clear();
    send({ type: 'ranked' });
  } else if (m.cmd === 'change') {
    const id = Number(freshIds[m.n % freshIds.length]);
    const title = `Fresh ${m.n} ${Date.now().toString(36)}`;
    const { writtenAt } = await writer.products([productPayload(id, { title, updatedAt: new Date().toISOString() })]);
    send({ type: 'changed', id: String(id), title, writtenAt });
  } else if (m.cmd === 'stop') {
    await app.close();
    await catalogIndex.close();
    await rateLimiter.close();
    views.close();
    autocomplete.close();
    subscriber.disconnect();
    publisher.disconnect();
    redis.disconnect();
    await db.close();
    process.exit(0);
  }
});

send({
  type: 'ready',
  port,
  token,
  storeId,
  figures: {
    products: N,
    collections: catalog.collections.size,
    buildProductsSeconds: round(built.productsSeconds),
    buildCollectionsSeconds: round(built.collectionsSeconds),
    productsPerSecond: Math.round(N / built.productsSeconds),
    indexLoadSeconds: round(indexLoadSeconds),
    indexHeapMb: Math.round(heapMb),
    lookup50Index: { p50Ms: round(pct(indexUs, 50) / 1000, 4), p99Ms: round(pct(indexUs, 99) / 1000, 4) },
    lookup50Query: { p50Ms: round(pct(queryMs, 50), 1), p99Ms: round(pct(queryMs, 99), 1) },
  },
});
