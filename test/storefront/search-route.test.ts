// The search routes (POST /search/{q}/prepare, /execute, /search/feedback) through the storefront frame,
// over products projected by the catalog products processor into chDB, the learned index on its ClickHouse
// source and the prepared-search state in a real Redis. What the stack suite cannot provoke without
// disturbing other suites: a learned source that fails (its database is closed: execute degrades to
// prefix_only, never a 5xx), a feedback log that cannot be written (503), and prepared-search records
// planted in Redis under the keys the code uses (a ready plan execute would not compute itself, the
// 15-minute TTL, a pending record left by an instance that went away).
import Fastify, { type FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import type { RequestEvent } from '../../schemas/requests.ts';
import { PREPARED_SEARCH_TTL_SECONDS } from '../../schemas/storefront.ts';
import { normalizeProduct } from '../../services/catalog/normalize.ts';
import { parseTrustedProxies } from '../../services/common/enrich.ts';
import { createLogger } from '../../services/common/logger.ts';
import { installFrame } from '../../services/storefront/frame.ts';
import { MAX_PARAM_LENGTH, STOREFRONT_PREFIX } from '../../services/storefront/plugin.ts';
import { createRateLimiter, type RateLimiter } from '../../services/storefront/rate-limit.ts';
import { CatalogIndex } from '../../services/storefront/results/catalog.ts';
import { serializerCompiler, validatorCompiler } from '../../services/storefront/schema-compilers.ts';
import { searchRoutes } from '../../services/storefront/search.ts';
import { LearnedIndex } from '../../services/storefront/search/learned.ts';
import { PENDING_STALE_MS, SearchState } from '../../services/storefront/search/prepared.ts';
import { CooccurrenceProvider } from '../../services/storefront/search/semantic.ts';
import { clickhouseLearnedSource, noFeedbackLog } from '../../services/storefront/search/services.ts';
import type { QueryPlan } from '../../services/storefront/search/understand.ts';
import { StoreViews } from '../../services/storefront/store-view.ts';
import { catalogProductsProcessor } from '../../streams/catalog/products.ts';
import type { Decoded } from '../../streams/runtime/types.ts';
import { privateDb } from '../helpers/chdb.ts';
import { MemoryDirectory, type RedisServer, startRedis } from './harness.ts';

const logger = createLogger('search-route-test', 'silent');
const NOW = '2026-01-01T00:00:00.000Z';

let server: RedisServer;
let redis: Redis;
let db: Db;
let closedDb: Db;
let rateLimiter: RateLimiter;
let views: StoreViews;
const directory = new MemoryDirectory();
const { storeId, token } = directory.addStore();
const events: RequestEvent[] = [];
const learned: LearnedIndex[] = [];
/** learned evidence read from the migrated database (empty: no shopper behaviour yet) */
let healthy: FastifyInstance;
/** learned evidence read from a closed database: every read rejects */
let degraded: FastifyInstance;

const PRODUCTS: [number, string, string, number][] = [
  [1, 'Linen Shirt', 'Shirt', 40],
  [2, 'Breezy Linen Shirt', 'Shirt', 60],
  [3, 'Linen Dress', 'Dress', 80],
  [4, 'Wool Sweater', 'Sweater', 70],
  [5, 'Cotton Shirt', 'Shirt', 25],
];
const idsOf = (title: (t: string) => boolean) => PRODUCTS.filter((p) => title(p[1])).map((p) => p[0]);

async function deliver() {
  let offset = 0n;
  const batch: Decoded<never>[] = PRODUCTS.map(([id, title, type, price]) => {
    const n = normalizeProduct(
      storeId,
      {
        id,
        title,
        handle: `p-${id}`,
        body_html: `<p>${title}</p>`,
        vendor: 'Acme',
        product_type: type,
        tags: '',
        status: 'active',
        created_at: NOW,
        updated_at: NOW,
        published_at: NOW,
        options: [{ name: 'Title', position: 1, values: ['Default'] }],
        variants: [
          { id: id * 10, price: `${price}.00`, option1: 'Default', position: 1, inventory_quantity: 5, sku: `S${id}` },
        ],
        images: [],
      },
      { source: 'import', now: NOW },
    );
    if (!n.ok) throw new Error(JSON.stringify(n.issues));
    const parsed = catalogProductsProcessor.parse(n.value.product);
    if (!parsed.ok) throw new Error(parsed.reason);
    return {
      value: parsed.value as never,
      position: { topic: 'products', partition: 0, offset: offset++ },
      brokerTime: Date.now(),
    };
  });
  const projected = await catalogProductsProcessor.process(batch, {} as never);
  for (const w of projected.writes) await db.insert(w.table, w.rows);
}

async function host(learnedDb: Db): Promise<FastifyInstance> {
  const index = new LearnedIndex({ source: clickhouseLearnedSource(learnedDb), logger });
  learned.push(index);
  const frame = {
    directory,
    views,
    rateLimiter,
    trustedProxies: parseTrustedProxies('127.0.0.0/8,::1/128'),
    bodyLimit: 64 * 1024,
    logger,
    build: 'search-route-test',
    emit: (e: RequestEvent) => events.push(e),
  };
  const app = Fastify({ routerOptions: { maxParamLength: MAX_PARAM_LENGTH }, bodyLimit: 1024 * 1024 });
  await app.register(
    async (sf) => {
      installFrame(sf, frame);
      sf.setValidatorCompiler(validatorCompiler);
      sf.setSerializerCompiler(serializerCompiler);
      await searchRoutes(sf, {
        catalog: new CatalogIndex({ db, logger }),
        learned: index,
        semantic: new CooccurrenceProvider(),
        directory,
        cache: null,
        state: new SearchState(redis),
        // the feedback writer of a host without a log (as the harnesses and benches run)
        recordFeedback: noFeedbackLog,
        logger,
      });
    },
    { prefix: STOREFRONT_PREFIX },
  );
  await app.ready();
  return app;
}

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  db = await privateDb(`search_route_${process.pid}`);
  await migrate(db);
  closedDb = await privateDb(`search_route_closed_${process.pid}`);
  await migrate(closedDb);
  await closedDb.close();
  await deliver();
  views = new StoreViews(directory);
  rateLimiter = createRateLimiter(redis, {
    storePerSec: 0,
    storeBurst: 1,
    ipPerSec: 0,
    ipBurst: 1,
    timeoutMs: 200,
  });
  healthy = await host(db);
  degraded = await host(closedDb);
}, 120_000);

afterAll(async () => {
  await healthy?.close();
  await degraded?.close();
  for (const l of learned) l.close();
  await rateLimiter?.close();
  views?.close();
  redis?.disconnect();
  await db?.close();
  await server?.stop();
});

interface Envelope {
  results: { id: number }[];
  totalResults: number;
  _meta: Record<string, any>;
  _workflow: { type: string; payload: any }[];
  error?: { code: string; fields: { path: string }[] };
}

async function post<T = Envelope>(
  app: FastifyInstance,
  path: string,
  body: unknown = {},
  headers: Record<string, string> = {},
) {
  const res = await app.inject({
    method: 'POST',
    url: `${STOREFRONT_PREFIX}${path}`,
    headers: { 'x-storefront-access-token': token, 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(body),
  });
  return { status: res.statusCode, headers: res.headers, body: res.json() as T };
}
const execute = (app: FastifyInstance, q: string, body: unknown = {}, headers: Record<string, string> = {}) =>
  post(app, `/search/${encodeURIComponent(q)}/execute`, body, headers);
const ids = (e: Envelope) => e.results.map((r) => r.id);
const workflow = (e: Envelope, type: string) => e._workflow.find((w) => w.type === type)?.payload;
const prepKey = (id: string) => `sf:prep:${storeId}:${id}`;
const ctxKey = (id: string) => `sf:sctx:${storeId}:${id}`;

describe('search route: degraded mode', () => {
  it('answers 200 with _meta.degraded prefix_only when the learned source rejects, never a 5xx', async () => {
    // the healthy host: the whole pipeline (a misspelling corrected)
    const ok = await execute(healthy, 'lnien shirt');
    expect(ok.status).toBe(200);
    expect(ok.body._meta.degraded).toBeUndefined();
    expect(workflow(ok.body, 'query-interpretation').corrections).toEqual([{ from: 'lnien', to: 'linen' }]);

    const r = await execute(degraded, 'linen shi');
    expect(r.status).toBe(200);
    expect(r.body._meta.degraded).toBe('prefix_only');
    expect(workflow(r.body, 'query-interpretation').classification).toBe('prefix_only');
    // the text as typed, the last word as a prefix: the linen shirts
    expect(ids(r.body).slice(0, 2).sort()).toEqual(idsOf((t) => t.includes('Linen Shirt')));
    // nothing else: no spelling correction, no intents
    const typo = await execute(degraded, 'lnien shirt under 50');
    expect(typo.status).toBe(200);
    expect(typo.body._meta.degraded).toBe('prefix_only');
    expect(workflow(typo.body, 'query-interpretation').corrections).toEqual([]);
    expect(workflow(typo.body, 'intent-modifiers')).toBeUndefined();
    // the request event says so
    await vi.waitFor(() => {
      const e = events.find((x) => x.kind === 'search' && x.query === 'linen shi');
      expect(JSON.parse(e?.details_json ?? '{}')).toMatchObject({ degraded: 'prefix_only' });
    });
  });

  it('keeps no prepared plan made while degraded: execute processes normally, fully once the stage is back', async () => {
    const p = await post<{ search_id: string }>(degraded, '/search/lnien%20shirt/prepare');
    expect(p.status).toBe(202);
    const id = p.body.search_id;
    // the background work drops the record instead of caching a literal plan for 15 minutes
    await vi.waitFor(async () => expect(await redis.exists(prepKey(id))).toBe(0));
    const r = await execute(degraded, 'lnien shirt', { search_id: id }, { 'x-sdk-client': 'storefront-sdk/1.2.0' });
    expect(r.status).toBe(200);
    expect(r.body._meta.degraded).toBe('prefix_only');
    // the learned stage back (another instance): the query is understood in full, the misspelling corrected
    const full = await execute(healthy, 'lnien shirt', { search_id: id });
    expect(full.status).toBe(200);
    expect(full.body._meta.degraded).toBeUndefined();
    expect(workflow(full.body, 'query-interpretation').corrections).toEqual([{ from: 'lnien', to: 'linen' }]);
    expect(ids(full.body).slice(0, 2).sort()).toEqual(idsOf((t) => t.includes('Linen Shirt')));
  });
});

describe('search route: prepared searches in Redis', () => {
  it('keeps a prepared search 15 minutes: the record and the feedback context expire together', async () => {
    const p = await post<{ search_id: string }>(healthy, '/search/cheap%20linen%20under%2050/prepare');
    expect(p.status).toBe(202);
    const id = p.body.search_id;
    expect(PREPARED_SEARCH_TTL_SECONDS).toBe(900);
    // pending at once, with the full TTL
    const pendingTtl = await redis.ttl(prepKey(id));
    expect(pendingTtl).toBeGreaterThan(890);
    expect(pendingTtl).toBeLessThanOrEqual(900);
    await vi.waitFor(async () => expect(JSON.parse((await redis.get(prepKey(id))) ?? '{}').state).toBe('ready'));
    for (const key of [prepKey(id), ctxKey(id)]) {
      const ttl = await redis.ttl(key);
      expect(ttl, key).toBeGreaterThan(890);
      expect(ttl, key).toBeLessThanOrEqual(900);
    }
    // the feedback context holds what understanding found: the text matched (intent words out), the intents
    expect(JSON.parse((await redis.get(ctxKey(id))) as string)).toEqual({
      query: 'cheap linen under 50',
      normalized_query: 'cheap linen under 50',
      expanded_queries: ['linen'],
      intent_modifiers: [
        { type: 'price_max', value: 50, text: 'under 50' },
        { type: 'price_sensitivity', direction: 'lower', text: 'cheap' },
      ],
    });
  });

  it('executes with the plan prepared under the search_id, not one it computes itself', async () => {
    const query = 'zzplanted';
    // what execute computes by itself: no product has the word
    const own = await execute(healthy, query);
    expect(own.body.totalResults).toBe(0);
    const id = newUlid();
    const plan: QueryPlan = {
      query,
      normalized: query,
      text: 'wool sweater',
      corrections: [],
      expansions: [],
      intents: [],
    };
    await redis.set(
      prepKey(id),
      JSON.stringify({ state: 'ready', query, startedAt: Date.now(), plan }),
      'EX',
      PREPARED_SEARCH_TTL_SECONDS,
    );
    const r = await execute(healthy, query, { search_id: id });
    expect(r.status).toBe(200);
    expect(ids(r.body)).toEqual(idsOf((t) => t === 'Wool Sweater'));
    expect(workflow(r.body, 'query-replacement')).toBe('wool sweater');
    // a plan prepared for another query is not used
    const other = await execute(healthy, 'zzplanted again', { search_id: id });
    expect(other.body.totalResults).toBe(0);
  });

  it('processes normally once a pending record is older than 10 s (the preparing instance went away)', async () => {
    const sdk = { 'x-sdk-client': 'storefront-sdk/1.2.0' };
    const fresh = newUlid();
    const stale = newUlid();
    const pending = (startedAt: number) => JSON.stringify({ state: 'pending', query: 'linen', startedAt });
    await redis.set(prepKey(fresh), pending(Date.now()), 'EX', PREPARED_SEARCH_TTL_SECONDS);
    await redis.set(prepKey(stale), pending(Date.now() - PENDING_STALE_MS - 1_000), 'EX', PREPARED_SEARCH_TTL_SECONDS);
    expect(PENDING_STALE_MS).toBe(10_000);
    const notReady = await execute(healthy, 'linen', { search_id: fresh }, sdk);
    expect(notReady.status).toBe(425);
    expect(notReady.headers['retry-after']).toBe('1');
    const r = await execute(healthy, 'linen', { search_id: stale }, sdk);
    expect(r.status).toBe(200);
    expect(ids(r.body).sort()).toEqual(idsOf((t) => t.includes('Linen')));
  });
});

describe('search route: feedback', () => {
  it('answers 503 with Retry-After when the feedback cannot be written to the log', async () => {
    const r = await post<Envelope>(healthy, '/search/feedback', { search_id: newUlid(), rating: 'positive' });
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toBe('5');
    expect(r.body.error?.code).toBe('unavailable');
  });
});
