// The storefront API core against the real single-node stack: authentication through the real store
// directory, headers on errors, sort orders from store config, autocomplete over the real trending
// pipeline (request events → broker → requests processor → ClickHouse + agg:trending → in-process index),
// and request events landing in Kafka.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import { type Consumer, Kafka, logLevel, type Producer } from 'kafkajs';
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { VALUE_SCHEMAS } from '../../schemas/avro/index.ts';
import { createValueCodec, type ValueCodec } from '../../services/common/kafka/codec.ts';
import { type RequestEvent, requestEvent } from '../../schemas/requests.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { TopicCatalogSink } from '../../services/demo/generator/catalog-sink.ts';
import { generateDemoStore } from '../../services/demo/generator/generator.ts';
import { applyDemoConfig, replaySessions } from '../../services/demo/generator/load.ts';
import { loadConfig } from '../../services/common/config.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { DEMO_SUGGEST_PREFIX, demoCurl } from '../../services/demo/module.ts';
import { sql, stack } from '../helpers/stack.ts';
import { closeTestStoreWriter, createTestStore, testStoreWriter, waitForApp } from '../helpers/stores.ts';
import { testSeed } from '../helpers/demo-stack.ts';

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const REQUESTS = TOPICS.requests.name;

let base: string;
let kafka: Kafka;
let producer: Producer;
let codec: ValueCodec;

beforeAll(async () => {
  base = `${stack().httpUrl}/api/storefront/v1`;
  kafka = new Kafka({ clientId: `sf-test-${process.pid}`, brokers: stack().kafkaBrokers, logLevel: logLevel.NOTHING });
  producer = kafka.producer({ idempotent: true, allowAutoTopicCreation: false });
  await producer.connect();
  codec = createValueCodec({ registryUrl: stack().schemaRegistryUrl });
  await codec.register(REQUESTS, VALUE_SCHEMAS.requests);
});

afterAll(async () => {
  await producer?.disconnect();
  await closeTestStoreWriter();
});

const get = (path: string, token?: string, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, {
    headers: { accept: 'application/json', ...(token ? { 'x-storefront-access-token': token } : {}), ...headers },
  });

/** search request events as the search endpoint emits them: one per session, into storefront.requests.v1 */
async function searchEvents(storeId: string, query: string, sessions: number, country = 'US'): Promise<number> {
  const now = new Date().toISOString();
  const messages = Array.from({ length: sessions }, (_, i) => {
    const e: RequestEvent = requestEvent({
      request_id: newUlid(),
      store_id: storeId,
      kind: 'search',
      occurred_at: now,
      device_type: 'desktop',
      status_code: 200,
      latency_ms: 3,
      session_id: `sess-${query}-${i}`,
      query,
      normalized_query: query.toLowerCase().trim(),
      geo_country: country,
      total_results: 12,
      result_count: 12,
    });
    return { key: `${storeId}:sess-${i}`, value: codec.encode(REQUESTS, e) };
  });
  await producer.send({ topic: REQUESTS, messages, acks: -1 });
  return Date.now();
}

async function suggestions(token: string, query: string | null, headers: Record<string, string> = {}) {
  const r = await get(`/search/complete${query === null ? '' : `?query=${encodeURIComponent(query)}`}`, token, headers);
  expect(r.status).toBe(200);
  return (await r.json()) as {
    matchedQueries: string[];
    originalQuery: string | null;
    normalizedQuery: string | null;
    _meta: { redirect?: { url: string } };
  };
}

/** the first answer that satisfies `ok`, asked again every 25 ms (vi.waitFor) until `timeoutMs` */
function pollUntil<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs: number): Promise<T> {
  return vi.waitFor(
    async () => {
      const v = await fn();
      if (!ok(v)) throw new Error(`not yet: ${JSON.stringify(v)}`);
      return v;
    },
    { timeout: timeoutMs, interval: 25 },
  );
}

describe('authentication and headers', () => {
  it('401 missing, 401 invalid, 402 suspended — each with the JSON error body, x-request-id and x-service-build', async () => {
    const { storeId, token } = await createTestStore({ name: 'sf auth' });
    const check = async (r: Response, status: number, code: string) => {
      expect(r.status).toBe(status);
      expect(r.headers.get('x-request-id')).toMatch(ULID);
      expect(r.headers.get('x-service-build')).toBe('test');
      expect(await r.json()).toMatchObject({ error: { code, message: expect.any(String), fields: [] } });
    };
    await check(await get('/sort-orders'), 401, 'missing_token');
    await check(await get('/sort-orders', 'sf_not_a_token'), 401, 'invalid_token');
    expect((await get('/sort-orders', token)).status).toBe(200);
    const w = testStoreWriter();
    await waitForApp(await w.suspendStore(storeId));
    await check(await get('/search/complete?query=ab', token), 402, 'store_suspended');
    await waitForApp(await w.resumeStore(storeId));
    expect((await get('/sort-orders', token)).status).toBe(200);
  });

  it('422 for an over-long query, with the field path and the headers', async () => {
    const { token } = await createTestStore({ name: 'sf 422' });
    const r = await get(`/search/complete?query=${'x'.repeat(256)}`, token);
    expect(r.status).toBe(422);
    expect(r.headers.get('x-request-id')).toMatch(ULID);
    expect(r.headers.get('x-service-build')).toBe('test');
    expect(await r.json()).toEqual({
      error: {
        code: 'validation_failed',
        message: expect.any(String),
        fields: [{ path: 'query', message: 'at most 255 characters' }],
      },
    });
    // the limit counts code points: 255 emoji pass, 256 do not
    expect((await get(`/search/complete?query=${encodeURIComponent('🧦'.repeat(255))}`, token)).status).toBe(200);
    expect((await get(`/search/complete?query=${encodeURIComponent('🧦'.repeat(256))}`, token)).status).toBe(422);
  });

  it('404 for an unknown storefront path, with the error body and both headers', async () => {
    const { token } = await createTestStore({ name: 'sf 404' });
    const r = await get('/no-such-endpoint', token);
    expect(r.status).toBe(404);
    expect(r.headers.get('x-request-id')).toMatch(ULID);
    expect(r.headers.get('x-service-build')).toBe('test');
    expect(await r.json()).toMatchObject({ error: { code: 'not_found', message: expect.any(String), fields: [] } });
  });

  it('429 once a client exhausts its per-IP bucket, with Retry-After, the error body and both headers', async () => {
    // a store and a client address of its own (X-Forwarded-For is believed from the loopback peer), so
    // no other suite shares the bucket; requests go out in concurrent rounds until the bucket refuses
    const { token } = await createTestStore({ name: 'sf 429' });
    const ip = `198.51.100.${1 + (process.pid % 250)}`;
    let limited: Response | undefined;
    let sent = 0;
    while (!limited && sent < 5_000) {
      const round = await Promise.all(
        Array.from({ length: 25 }, () => get('/sort-orders', token, { 'x-forwarded-for': ip })),
      );
      sent += round.length;
      for (const r of round) {
        if (r.status === 429 && !limited) limited = r;
        else await r.arrayBuffer();
      }
    }
    expect(limited, `no 429 after ${sent} requests`).toBeDefined();
    const r = limited!;
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(r.headers.get('x-request-id')).toMatch(ULID);
    expect(r.headers.get('x-service-build')).toBe('test');
    expect(await r.json()).toMatchObject({ error: { code: 'rate_limited', message: expect.any(String), fields: [] } });
  });
});

describe('OpenAPI document', () => {
  it('is served without a token and validates as OpenAPI 3.1', async () => {
    const r = await get('/openapi.json');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const doc = (await r.json()) as { paths: Record<string, unknown> };
    const res = await new Validator().validate(doc as never);
    expect(res.errors ?? []).toEqual([]);
    expect(res.valid).toBe(true);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/search/complete', '/sort-orders']));
  });
});

describe('sort orders', () => {
  it('lists relevance first, then the store-configured sort orders', async () => {
    const { token } = await createTestStore({
      name: 'sf sorts',
      items: {
        sort_order: [
          { code: 'newest', nickname: 'Newest', expressions: [{ attribute: 'published_at', direction: 'desc' }] },
          {
            code: 'price_asc',
            nickname: 'Price, low to high',
            expressions: [{ attribute: 'price', direction: 'asc' }],
          },
        ],
      },
    });
    const r = await get('/sort-orders', token);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({
      sortOrders: [
        { code: 'relevance', nickname: 'Relevance' },
        { code: 'newest', nickname: 'Newest' },
        { code: 'price_asc', nickname: 'Price, low to high' },
      ],
    });
  });
});

describe('autocomplete over the real trending pipeline', () => {
  it('query echo: originalQuery exactly as sent, normalizedQuery lower-cased and trimmed; null when too short or omitted', async () => {
    const { token } = await createTestStore({ name: 'sf echo' });
    expect(await suggestions(token, '  Red <b>DRESS</b> ')).toMatchObject({
      originalQuery: '  Red <b>DRESS</b> ',
      normalizedQuery: 'red dress',
    });
    expect(await suggestions(token, ' a ')).toMatchObject({ originalQuery: null, normalizedQuery: null });
    expect(await suggestions(token, null)).toEqual({
      matchedQueries: [],
      originalQuery: null,
      normalizedQuery: null,
      _meta: {},
    });
  });

  it('redirect terms put _meta.redirect.url on a matching query only', async () => {
    const { token } = await createTestStore({
      name: 'sf redirect',
      items: { redirect_term: [{ term: 'Gift Cards', url: '/pages/gift-cards' }] },
    });
    expect((await suggestions(token, 'gift cards'))._meta).toEqual({ redirect: { url: '/pages/gift-cards' } });
    expect((await suggestions(token, 'GIFT   cards '))._meta).toEqual({ redirect: { url: '/pages/gift-cards' } });
    expect((await suggestions(token, 'gift'))._meta).toEqual({});
  });

  it('a burst of searches from 25 sessions for a new query becomes a suggestion for its prefix (live deltas); curation and trending apply', async () => {
    const { storeId, token } = await createTestStore({
      name: 'sf freshness',
      items: {
        autocomplete_curation: [
          { query: 'cheap knockoff parka', allowed: false, display_label: null },
          { query: 'alpine parkas', allowed: true, display_label: 'Alpine Parka Collection' },
        ],
      },
    });
    const tag = `q${Date.now().toString(36)}`;
    const query = `${tag} parka`;
    const ackedAt = await searchEvents(storeId, query, 25);
    const r = await pollUntil(
      () => suggestions(token, tag.slice(0, 4)),
      (v) => v.matchedQueries.includes(query),
      10_000,
    );
    const latency = Date.now() - ackedAt;
    expect(r.matchedQueries).toContain(query);
    // a figure for the report, not an assertion (bench/autocomplete.ts measures p50/p95)
    console.log(`autocomplete freshness: 25 search events acknowledged → suggested in ${latency} ms`);

    // stem collapse + curation over pipeline data
    await searchEvents(storeId, 'alpine parkas', 3);
    await searchEvents(storeId, 'alpine parka', 2);
    await searchEvents(storeId, 'cheap knockoff parka', 30);
    const al = await pollUntil(
      () => suggestions(token, 'alp'),
      (v) => v.matchedQueries.length > 0,
      10_000,
    );
    expect(al.matchedQueries).toEqual(['Alpine Parka Collection']);
    const top = await pollUntil(
      () => suggestions(token, 'p'),
      (v) => v.matchedQueries.length >= 2,
      10_000,
    );
    // under 2 characters → the store's top trending queries, with curation applied (the knockoff is suppressed)
    expect(top.originalQuery).toBeNull();
    expect(top.matchedQueries).toEqual([query, 'Alpine Parka Collection']);
  });

  it('search events sent to POST /beacon feed the suggestions too, one vote per session however often it searches', async () => {
    const { storeId, token } = await createTestStore({ name: 'sf beacon searches' });
    const tag = `b${Date.now().toString(36)}`;
    const query = `${tag} mittens`;
    const search = (session: string) => ({
      event_id: newUlid(),
      event_type: 'search',
      timestamp: new Date().toISOString(),
      session_id: session,
      query: `  ${query.toUpperCase()} `,
      contextual_data: { search_source: 'typed' },
    });
    // 3 sessions, one of them searching 10 times: 3 votes, below a 4-voter query from the API path
    const events = [search('s-1'), search('s-2'), ...Array.from({ length: 10 }, () => search('s-3'))];
    const r = await fetch(`${stack().httpUrl}/beacon`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-storefront-access-token': token,
        'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0',
      },
      body: JSON.stringify({ events }),
    });
    expect(r.status).toBe(201);
    await searchEvents(storeId, `${tag} mitts`, 4);
    // votes arrive chunk by chunk (the beacon's events spread over partitions by session): wait for the
    // counts to settle at the voters each query has, then for the suggestions to show them in that order
    const votes = async () =>
      (
        await sql<{ query: string; country: string; votes: string }>(
          'SELECT query, country, uniqExactMerge(voters) AS votes FROM trending_queries WHERE store_id = {s:String} GROUP BY query, country ORDER BY query',
          { s: storeId },
        )
      ).map((v) => ({ ...v, votes: Number(v.votes) }));
    await expect.poll(votes, { timeout: 10_000, interval: 50 }).toEqual([
      { query, country: '', votes: 3 },
      { query: `${tag} mitts`, country: 'US', votes: 4 },
    ]);
    const got = await pollUntil(
      () => suggestions(token, tag),
      (v) => v.matchedQueries[0] === `${tag} mitts` && v.matchedQueries.length === 2,
      10_000,
    );
    expect(got.matchedQueries).toEqual([`${tag} mitts`, query]);
    // one vote per session however often it searched: the counts stay where they settled
    expect(await votes()).toEqual([
      { query, country: '', votes: 3 },
      { query: `${tag} mitts`, country: 'US', votes: 4 },
    ]);
  });

  it('regional mode: a country with enough history gets its own suggestions; global mode gets the store-wide set', async () => {
    const { storeId, token } = await createTestStore({ name: 'sf regional' });
    await searchEvents(storeId, 'zebra print', 40, 'US');
    // France has no history of its own: the store-wide set
    const fromFr = await pollUntil(
      () => suggestions(token, 'ze', { 'x-country-code': 'FR' }),
      (v) => v.matchedQueries[0] === 'zebra print',
      10_000,
    );
    expect(fromFr.matchedQueries).toEqual(['zebra print']);
    // Germany gets 10 distinct queries (the threshold): from then on its own set, without zebra print
    const de = Array.from({ length: 10 }, (_, i) => `zelt modell ${String.fromCharCode(97 + i)}`);
    for (const q of de) await searchEvents(storeId, q, 1, 'DE');
    const fromDe = await pollUntil(
      () => suggestions(token, 'ze', { 'x-country-code': 'DE' }),
      (v) => !v.matchedQueries.includes('zebra print') && v.matchedQueries.length === 10,
      10_000,
    );
    expect(fromDe.matchedQueries).not.toContain('zebra print');
    expect([...fromDe.matchedQueries].sort()).toEqual(de);
    // still store-wide for France: zebra print (40 voters) leads the zelt queries
    expect((await suggestions(token, 'ze', { 'x-country-code': 'FR' })).matchedQueries[0]).toBe('zebra print');
    await waitForApp(await testStoreWriter().updateStore(storeId, { autocomplete_mode: 'global' }));
    const global = await suggestions(token, 'ze', { 'x-country-code': 'DE' });
    expect(global.matchedQueries[0]).toBe('zebra print');
  });
});

describe('request events', () => {
  let consumer: Consumer;
  afterAll(async () => {
    await consumer?.disconnect();
  });

  it('land in storefront.requests.v1: one per request, request_id = x-request-id, with device type, counts and context', async () => {
    const { storeId, token } = await createTestStore({ name: 'sf events' });
    const r = await get('/search/complete?query=Linen%20Shirts', token, {
      'user-agent':
        'Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
      'x-requested-with': 'co.tapcart.app',
      'x-country-code': 'NL',
    });
    expect(r.status).toBe(200);
    const requestId = r.headers.get('x-request-id')!;
    consumer = kafka.consumer({ groupId: `sf-events-test-${newUlid()}` });
    await consumer.connect();
    await consumer.subscribe({ topic: REQUESTS, fromBeginning: true });
    const found = await new Promise<RequestEvent>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('request event not found within 20 s')), 20_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          if (!message.value) return;
          const { value } = await codec.decode<RequestEvent>(message.value, REQUESTS);
          if (value.request_id === requestId) {
            clearTimeout(timer);
            resolve(value);
          }
        },
      });
    });
    expect(found).toMatchObject({
      store_id: storeId,
      kind: 'autocomplete',
      device_type: 'tablet',
      query: 'Linen Shirts',
      normalized_query: 'linen shirts',
      status_code: 200,
      geo_country: 'NL',
      shopping_channel: 'app',
      result_count: 0,
    });
    expect(JSON.parse(found.context_json)).toMatchObject({ shoppingChannel: 'app' });
  });
});

describe('the request `npm start` prints for the demo store', () => {
  it("returns the demo store's trending query once its shoppers' sessions are replayed, run as printed", async () => {
    const s = stack();
    const log = createLogger('storefront-demo-curl-test', 'warn');
    const config = loadConfig({
      ...process.env,
      ...s.env,
      KAFKA_BROKERS: s.kafkaBrokers.join(','),
      REDIS_URL: s.redisUrl,
      SCHEMA_REGISTRY_URL: s.schemaRegistryUrl,
      CLICKHOUSE_URL: '',
    });
    // a demo store of its own (any seed: every demo store plants its trending burst the same way)
    const store = generateDemoStore({
      seed: testSeed('curl'),
      products: 200,
      sessions: 120,
      imageBaseUrl: `${s.httpUrl}/demo/images`,
    });
    const burst = store.groundTruth.trending;
    expect(burst.query.startsWith(DEMO_SUGGEST_PREFIX)).toBe(true);
    const { storeId, token } = await createTestStore({ name: 'Demo Store (printed request)' });
    const writer = testStoreWriter();
    await applyDemoConfig(writer, storeId, store);
    await waitForApp(writer);
    const command = demoCurl(s.httpUrl, token);
    const run = async () => {
      const { stdout } = await promisify(execFile)('sh', ['-c', `${command} --silent --show-error --fail-with-body`]);
      return JSON.parse(stdout) as { matchedQueries: string[]; normalizedQuery: string | null };
    };
    // before the sessions: a valid answer without suggestions
    expect(await run()).toMatchObject({ matchedQueries: [], normalizedQuery: DEMO_SUGGEST_PREFIX });

    // the burst sessions are the plan's last ones; the loader replays them as `npm start` does
    const first = store.sessionCount - burst.sessions;
    expect(store.session(first).kind).toBe('trending');
    const redis = createRedis(config.redisUrl, { connectionName: 'storefront-demo-curl-test' });
    const sink = new TopicCatalogSink({
      kafka: createKafka(config.kafkaBrokers, 'storefront-demo-curl-test', log),
      redis,
      config,
      logger: log,
    });
    try {
      const stats = await replaySessions({
        baseUrl: s.httpUrl,
        token,
        storeId,
        store,
        sink,
        replayStartMs: Date.now(),
        from: first,
        concurrency: 4,
        logger: log,
      });
      expect(stats.sessions).toBe(burst.sessions);
      expect(stats.rejected).toBe(0);
    } finally {
      await sink.close();
      redis.disconnect();
    }
    await expect
      .poll(async () => (await run()).matchedQueries, { timeout: 20_000, interval: 100 })
      .toContain(burst.query);
  });
});
