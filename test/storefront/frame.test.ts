// The storefront frame on its own (real plugin, real redis-server, in-memory store directory): auth
// statuses, the error body for every kind of bad input, B2B authorization, rate limiting, request events.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { newUlid } from '../../services/common/ids.ts';
import { AuthCache } from '../../services/storefront/frame.ts';
import { createRateLimiter } from '../../services/storefront/rate-limit.ts';
import { type Harness, MemoryDirectory, type RedisServer, startHarness, startRedis, TEST_BUILD } from './harness.ts';

const BASE = '/api/storefront/v1';
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

let redis: RedisServer;
let h: Harness;
let token: string;
let storeId: string;

beforeAll(async () => {
  redis = await startRedis();
  h = await startHarness(redis.url);
  ({ token, storeId } = h.directory.addStore());
  h.directory.put(storeId, 'b2b_company_location', {
    gid: 'gid://shopify/CompanyLocation/501',
    company_id: '77',
    catalog_id: 'cat-77',
  });
  h.directory.put(storeId, 'b2b_customer', { customer_id: '9001', company_ids: ['77'] });
  h.directory.put(storeId, 'b2b_customer', { customer_id: '9002', company_ids: ['78'] });
});
afterAll(async () => {
  await h?.close();
  await redis?.stop();
});

function expectErrorShape(body: unknown, code: string) {
  expect(body).toMatchObject({ error: { code, message: expect.any(String), fields: expect.any(Array) } });
}

/** both headers the frame guarantees, set by the plugin itself (the harness host adds none) */
function expectFrameHeaders(r: { headers: Record<string, unknown> }) {
  expect(r.headers['x-request-id']).toMatch(ULID);
  expect(r.headers['x-service-build']).toBe(TEST_BUILD);
}

const echo = (payload: unknown, headers: Record<string, string> = {}) =>
  h.app.inject({
    method: 'POST',
    url: `${BASE}-echo/echo`,
    headers: { 'x-storefront-access-token': token, 'content-type': 'application/json', ...headers },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });

describe('authentication', () => {
  it('401 missing_token without the header, with x-request-id and x-service-build', async () => {
    const r = await h.app.inject({ method: 'GET', url: `${BASE}/sort-orders` });
    expect(r.statusCode).toBe(401);
    expectErrorShape(r.json(), 'missing_token');
    expect(r.headers['x-request-id']).toMatch(ULID);
    expect(r.headers['x-service-build']).toBe(TEST_BUILD);
  });

  it('401 invalid_token for an unknown token', async () => {
    const r = await h.app.inject({
      method: 'GET',
      url: `${BASE}/sort-orders`,
      headers: { 'x-storefront-access-token': 'sf_nope' },
    });
    expect(r.statusCode).toBe(401);
    expectErrorShape(r.json(), 'invalid_token');
  });

  it('402 store_suspended while the store is suspended, 200 again once lifted', async () => {
    const s = h.directory.addStore({ status: 'suspended' });
    const call = () =>
      h.app.inject({ method: 'GET', url: `${BASE}/sort-orders`, headers: { 'x-storefront-access-token': s.token } });
    const r = await call();
    expect(r.statusCode).toBe(402);
    expectErrorShape(r.json(), 'store_suspended');
    h.directory.updateStore(s.storeId, { status: 'active' });
    expect((await call()).statusCode).toBe(200);
  });

  it('a suspension applies to the very next request of a token that authenticated before', async () => {
    const s = h.directory.addStore();
    const call = () =>
      h.app.inject({ method: 'GET', url: `${BASE}/sort-orders`, headers: { 'x-storefront-access-token': s.token } });
    expect((await call()).statusCode).toBe(200);
    expect((await call()).statusCode).toBe(200);
    h.directory.updateStore(s.storeId, { status: 'suspended' });
    expect((await call()).statusCode).toBe(402);
    h.directory.updateStore(s.storeId, { status: 'active' });
    expect((await call()).statusCode).toBe(200);
  });

  it('serves the OpenAPI document without a token', async () => {
    const r = await h.app.inject({ method: 'GET', url: `${BASE}/openapi.json` });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ openapi: '3.1.0' });
  });
});

describe('B2B scope', () => {
  it('403 when companyLocationId comes without customerId', async () => {
    const r = await echo({ identity: { companyLocationId: 'gid://shopify/CompanyLocation/501' } });
    expect(r.statusCode).toBe(403);
    expectErrorShape(r.json(), 'b2b_forbidden');
    expect(r.json().error.fields).toEqual([{ path: 'identity.customerId', message: expect.any(String) }]);
    expect(r.headers['x-request-id']).toMatch(ULID);
  });

  it('403 when the customer belongs to another company, or the location is unknown', async () => {
    const wrong = await echo({
      identity: { companyLocationId: 'gid://shopify/CompanyLocation/501', customerId: '9002' },
    });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json().error.fields[0].path).toBe('identity.companyLocationId');
    const unknown = await echo({
      identity: { companyLocationId: 'gid://shopify/CompanyLocation/999', customerId: '9001' },
    });
    expect(unknown.statusCode).toBe(403);
  });

  it("scopes the request to the company when the customer belongs to the location's company", async () => {
    const r = await echo({
      identity: { companyLocationId: 'gid://shopify/CompanyLocation/501', customerId: 'gid://shopify/Customer/9001' },
      context: { b2bCompany: 'other' },
    });
    expect(r.statusCode).toBe(200);
    const ctx = r.json().context;
    expect(ctx.b2b).toEqual({ companyLocationId: 'gid://shopify/CompanyLocation/501', companyId: '77' });
    // b2bCompany is a company location identifier: the authorized location wins over the sent value
    expect(ctx.b2bCompany).toBe('gid://shopify/CompanyLocation/501');
    expect(ctx.customer.segments).toEqual(['b2b', 'company:77']);
  });

  it('a client-sent b2bCompany without companyLocationId scopes nothing (no b2b scope, no company segment)', async () => {
    const guest = await echo({ context: { b2bCompany: 'gid://shopify/CompanyLocation/501' } });
    expect(guest.statusCode).toBe(200);
    expect(guest.json().context).toMatchObject({
      b2b: null,
      b2bCompany: 'gid://shopify/CompanyLocation/501',
      customer: { segments: [] },
    });
    // a customer of another company naming company 77's location: still no scope, segments of their own
    const other = await echo({
      identity: { customerId: '9002' },
      context: { b2bCompany: 'gid://shopify/CompanyLocation/501' },
    });
    expect(other.statusCode).toBe(200);
    expect(other.json().context).toMatchObject({ b2b: null, customer: { segments: ['b2b', 'company:78'] } });
  });
});

describe('the error body for bad input (never a 5xx)', () => {
  it('422 validation_failed with field paths into identity and context', async () => {
    const r = await echo({
      identity: { companyLocationId: 'location-5' },
      context: { productsInCart: [{ title: 'x', price: 5 }, { title: 7 }], currency: 'dollars', shoppingChannel: 'tv' },
    });
    expect(r.statusCode).toBe(422);
    expectErrorShape(r.json(), 'validation_failed');
    const paths = r
      .json()
      .error.fields.map((f: { path: string }) => f.path)
      .sort();
    expect(paths).toEqual([
      'context.currency',
      'context.productsInCart[1].title',
      'context.shoppingChannel',
      'identity.companyLocationId',
    ]);
  });

  it('422 invalid_json for a malformed body', async () => {
    const r = await echo('{"context": ');
    expect(r.statusCode).toBe(422);
    expectErrorShape(r.json(), 'invalid_json');
    expectFrameHeaders(r);
  });

  it('422 validation_failed for a JSON body that is not an object, naming the body root', async () => {
    const cases: [string, string][] = [
      ['[]', 'array'],
      ['[{"identity":{}}]', 'array'],
      ['"x"', 'string'],
      ['1', 'number'],
      ['true', 'boolean'],
      ['null', 'null'],
    ];
    for (const [payload, got] of cases) {
      const r = await echo(payload);
      expect({ payload, status: r.statusCode }).toEqual({ payload, status: 422 });
      expect(r.json()).toEqual({
        error: {
          code: 'validation_failed',
          message: 'The request is invalid; see error.fields.',
          fields: [{ path: '', message: `expected a JSON object, received ${got}` }],
        },
      });
      expectFrameHeaders(r);
    }
    // an object body is fine, `{}` included
    expect((await echo('{}')).statusCode).toBe(200);
  });

  it('413 payload_too_large above the body limit', async () => {
    const r = await echo({ context: { custom: { blob: 'x'.repeat(20_000) } } });
    expect(r.statusCode).toBe(413);
    expectErrorShape(r.json(), 'payload_too_large');
    expectFrameHeaders(r);
  });

  it('415 unsupported_media_type for a non-JSON content type', async () => {
    const r = await echo('context=1', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(r.statusCode).toBe(415);
    expectErrorShape(r.json(), 'unsupported_media_type');
    expectFrameHeaders(r);
    // text/plain too (not handed to the frame as a string body)
    const text = await echo('"x"', { 'content-type': 'text/plain' });
    expect(text.statusCode).toBe(415);
    expectErrorShape(text.json(), 'unsupported_media_type');
  });

  it('422 for a query over 255 characters, naming the field', async () => {
    const r = await h.app.inject({
      method: 'GET',
      url: `${BASE}/search/complete?query=${'a'.repeat(256)}`,
      headers: { 'x-storefront-access-token': token },
    });
    expect(r.statusCode).toBe(422);
    expect(r.json()).toEqual({
      error: {
        code: 'validation_failed',
        message: expect.any(String),
        fields: [{ path: 'query', message: 'at most 255 characters' }],
      },
    });
    expectFrameHeaders(r);
  });

  it('404 not_found in the same shape for an unknown storefront path, with both headers', async () => {
    const r = await h.app.inject({
      method: 'GET',
      url: `${BASE}/nope`,
      headers: { 'x-storefront-access-token': token },
    });
    expect(r.statusCode).toBe(404);
    expectErrorShape(r.json(), 'not_found');
    expectFrameHeaders(r);
  });
});

describe('request events', () => {
  it('one per request, after the response, with device type, normalized context, attribution token and counts', async () => {
    h.index.load(storeId, {
      storeWide: [
        { query: 'linen shirt', score: 9 },
        { query: 'linen pants', score: 4 },
      ],
      byCountry: {},
    });
    const before = h.events.length;
    const r = await h.app.inject({
      method: 'GET',
      url: `${BASE}/search/complete?query=Linen`,
      headers: {
        'x-storefront-access-token': token,
        'user-agent':
          'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
        'x-country-code': 'de',
      },
    });
    expect(r.statusCode).toBe(200);
    expect(r.json().matchedQueries).toEqual(['linen shirt', 'linen pants']);
    await new Promise((res) => setTimeout(res, 20));
    expect(h.events.length).toBe(before + 1);
    const e = h.events[h.events.length - 1];
    expect(e).toMatchObject({
      request_id: r.headers['x-request-id'],
      store_id: storeId,
      kind: 'autocomplete',
      device_type: 'mobile',
      query: 'Linen',
      normalized_query: 'linen',
      result_count: 2,
      total_results: 2,
      status_code: 200,
      geo_country: 'DE',
      shopping_channel: 'web',
    });
    expect(JSON.parse(e.context_json)).toMatchObject({ shoppingChannel: 'web', productsInCart: [] });
  });

  it('a request refused by the route schema (422) still gets its event, with the context its signals give', async () => {
    const r = await h.app.inject({
      method: 'GET',
      url: `${BASE}/search/complete?query=${'a'.repeat(256)}`,
      headers: { 'x-storefront-access-token': token, 'x-country-code': 'de' },
    });
    expect(r.statusCode).toBe(422);
    await vi.waitFor(() => expect(h.events.some((e) => e.request_id === r.headers['x-request-id'])).toBe(true));
    const e = h.events.find((x) => x.request_id === r.headers['x-request-id'])!;
    expect(e).toMatchObject({ kind: 'autocomplete', status_code: 422, geo_country: 'DE', shopping_channel: 'web' });
    expect(JSON.parse(e.context_json)).toMatchObject({ shoppingChannel: 'web', productsInCart: [] });
  });

  it('carries the validated context only (unknown keys dropped, click tokens reduced to networks)', async () => {
    const r = await echo({
      identity: { sessionId: 'sess-1', deviceId: 'dev-1', evil: true },
      context: {
        secret: 'x',
        marketing: { source: 'google', clickIds: { gclid: 'TOKEN123', fbclid: 'TOKEN456' } },
        geo: { country: 'fr', planet: 'earth' },
      },
    });
    expect(r.statusCode).toBe(200);
    const e = h.events.find((x) => x.request_id === r.headers['x-request-id'])!;
    expect(e).toMatchObject({ session_id: 'sess-1', device_id: 'dev-1', geo_country: 'FR', kind: 'search' });
    expect(e.context_json).not.toContain('TOKEN123');
    expect(e.context_json).not.toContain('secret');
    expect(e.context_json).not.toContain('planet');
    expect(JSON.parse(e.context_json).marketing.clickNetworks).toEqual(['google', 'meta']);
  });
});

describe('rate limiting (Redis token buckets)', () => {
  it('429 rate_limited with Retry-After once a client exhausts its bucket; other clients are unaffected', async () => {
    const limited = await startHarness(redis.url, { ipPerSec: 1, ipBurst: 3, storePerSec: 100, storeBurst: 100 });
    try {
      const s = limited.directory.addStore();
      const call = (ip: string) =>
        limited.app.inject({
          method: 'GET',
          url: `${BASE}/sort-orders`,
          headers: { 'x-storefront-access-token': s.token, 'x-forwarded-for': ip },
        });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await call('203.0.113.7')).statusCode);
      expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
      expect(statuses.slice(3)).toEqual([429, 429]);
      const r = await call('203.0.113.7');
      expect(r.statusCode).toBe(429);
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expectErrorShape(r.json(), 'rate_limited');
      expectFrameHeaders(r);
      expect((await call('203.0.113.8')).statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it("the store bucket caps all of a store's clients together, and refills", async () => {
    const client = new Redis(redis.url);
    try {
      const rl = createRateLimiter(client, { storePerSec: 20, storeBurst: 2, ipPerSec: 0, ipBurst: 1, timeoutMs: 500 });
      const a = await rl.take('store-x', '198.51.100.1');
      const b = await rl.take('store-x', '198.51.100.2');
      const c = await rl.take('store-x', '198.51.100.3');
      expect([a.allowed, b.allowed, c.allowed]).toEqual([true, true, false]);
      if (!c.allowed) {
        expect(c.scope).toBe('store');
        expect(c.retryAfterMs).toBeGreaterThan(0);
        expect(c.retryAfterMs).toBeLessThanOrEqual(50);
      }
      // another store has its own bucket
      expect((await rl.take('store-y', '198.51.100.1')).allowed).toBe(true);
      await new Promise((r) => setTimeout(r, 120));
      expect((await rl.take('store-x', '198.51.100.3')).allowed).toBe(true);
      // keys are scoped by store
      const keys = await client.keys('sf:rl:*');
      expect(keys.every((k) => /^sf:rl:\{store-[xy]\}/.test(k) || /^sf:rl:\{s-/.test(k))).toBe(true);
    } finally {
      client.disconnect();
    }
  });

  it('lets requests through when Redis is unreachable (fail-open)', async () => {
    const dead = new Redis('redis://127.0.0.1:1', {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      lazyConnect: true,
    });
    dead.on('error', () => {});
    let degraded = 0;
    const rl = createRateLimiter(
      dead,
      { storePerSec: 1, storeBurst: 1, ipPerSec: 1, ipBurst: 1, timeoutMs: 100 },
      () => degraded++,
    );
    expect(await rl.take('s', '1.2.3.4')).toEqual({ allowed: true, degraded: true });
    expect(degraded).toBe(1);
    dead.disconnect();
  });
});

describe('x-request-id and x-service-build come from the plugin itself', () => {
  it('on a bare host (Fastify ids req-1, …): a fresh ULID per response, the request event carries the same id', async () => {
    h.index.load(storeId, { storeWide: [{ query: 'wool socks', score: 3 }], byCountry: {} });
    const ids = new Set<string>();
    for (const r of [
      await h.app.inject({
        method: 'GET',
        url: `${BASE}/search/complete?query=wo`,
        headers: { 'x-storefront-access-token': token },
      }),
      await h.app.inject({ method: 'GET', url: `${BASE}/openapi.json` }),
      await h.app.inject({
        method: 'GET',
        url: `${BASE}/sort-orders`,
        headers: { 'x-storefront-access-token': token },
      }),
    ]) {
      expect(r.statusCode).toBe(200);
      expectFrameHeaders(r);
      ids.add(r.headers['x-request-id'] as string);
    }
    expect(ids.size).toBe(3);
    const first = [...ids][0];
    await new Promise((res) => setTimeout(res, 20));
    expect(h.events.filter((e) => e.request_id === first).map((e) => ({ kind: e.kind, query: e.query }))).toEqual([
      { kind: 'autocomplete', query: 'wo' },
    ]);
  });

  it("inside a host that makes ULID ids and sets the headers itself (as services/app/app.ts does), the host's id is kept", async () => {
    const issued: string[] = [];
    const hosted = await startHarness(redis.url, {}, 16 * 1024, {
      genReqId: () => {
        const id = newUlid();
        issued.push(id);
        return id;
      },
      hostBuild: TEST_BUILD,
    });
    try {
      const s = hosted.directory.addStore();
      const ok = await hosted.app.inject({
        method: 'GET',
        url: `${BASE}/search/complete?query=ab`,
        headers: { 'x-storefront-access-token': s.token },
      });
      const denied = await hosted.app.inject({ method: 'GET', url: `${BASE}/search/complete?query=ab` });
      expect([ok.statusCode, denied.statusCode]).toEqual([200, 401]);
      expect([ok.headers['x-request-id'], denied.headers['x-request-id']]).toEqual(issued);
      expect(ok.headers['x-service-build']).toBe(TEST_BUILD);
      await new Promise((res) => setTimeout(res, 20));
      expect(hosted.events.map((e) => e.request_id)).toEqual([issued[0]]);
    } finally {
      await hosted.close();
    }
  });
});

describe('token cache', () => {
  class CountingDirectory extends MemoryDirectory {
    calls = 0;
    override authenticate(t: string | undefined | null) {
      this.calls++;
      return super.authenticate(t);
    }
  }

  it('is keyed by the SHA-256 digest (no plaintext token held), skips the directory on a hit and empties on a config change', () => {
    const dir = new CountingDirectory();
    const s = dir.addStore();
    const cache = new AuthCache(dir);
    try {
      expect(cache.authenticate(s.token)).toMatchObject({ ok: true, store: { storeId: s.storeId } });
      expect(cache.authenticate(s.token)).toMatchObject({ ok: true, store: { storeId: s.storeId } });
      expect(dir.calls).toBe(1);
      expect(cache.keys()).toEqual([createHash('sha256').update(s.token, 'utf8').digest('base64')]);
      expect(cache.keys().some((k) => k.includes(s.token))).toBe(false);
      // failures are not cached; a near-miss token is refused
      expect(cache.authenticate(`${s.token}x`)).toMatchObject({ ok: false, status: 401, code: 'invalid_token' });
      expect(cache.authenticate(null)).toMatchObject({ ok: false, status: 401, code: 'missing_token' });
      expect(cache.keys()).toHaveLength(1);
      // a suspension empties the cache, so the next request sees it
      dir.updateStore(s.storeId, { status: 'suspended' });
      expect(cache.keys()).toEqual([]);
      expect(cache.authenticate(s.token)).toMatchObject({ ok: false, status: 402, code: 'store_suspended' });
    } finally {
      cache.close();
    }
  });
});

describe('autocomplete query limits count code points', () => {
  const complete = (query: string) =>
    h.app.inject({
      method: 'GET',
      url: `${BASE}/search/complete?query=${encodeURIComponent(query)}`,
      headers: { 'x-storefront-access-token': token },
    });

  it('255 emoji (510 UTF-16 units) are within the limit, 256 are not', async () => {
    const ok = await complete('🧦'.repeat(255));
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ originalQuery: '🧦'.repeat(255), normalizedQuery: '🧦'.repeat(255) });
    const mixed = await complete(`a${'🧦'.repeat(254)}`);
    expect(mixed.statusCode).toBe(200);
    const over = await complete('🧦'.repeat(256));
    expect(over.statusCode).toBe(422);
    expect(over.json()).toEqual({
      error: {
        code: 'validation_failed',
        message: expect.any(String),
        fields: [{ path: 'query', message: 'at most 255 characters' }],
      },
    });
  });

  it('one emoji is under the 2-character minimum; two are an effective query', async () => {
    expect((await complete('🧦')).json()).toMatchObject({ originalQuery: null, normalizedQuery: null });
    expect((await complete(' 🧦 ')).json()).toMatchObject({ originalQuery: null, normalizedQuery: null });
    expect((await complete('🧦🧦')).json()).toMatchObject({ originalQuery: '🧦🧦', normalizedQuery: '🧦🧦' });
    expect((await complete('a🧦')).json()).toMatchObject({ originalQuery: 'a🧦', normalizedQuery: 'a🧦' });
  });
});

describe('market resolution from real `market` configuration items (StoreViews over validated config)', () => {
  let market: { storeId: string; token: string };
  beforeAll(() => {
    market = h.directory.addStore({ marketMode: 'strict', primaryMarket: 'us' });
    // lower-case input as an admin would type it; the config schema normalizes it
    h.directory.put(market.storeId, 'market', {
      code: 'us',
      name: 'United States',
      market_id: '1001',
      countries: ['us'],
      currency: 'usd',
    });
    h.directory.put(market.storeId, 'market', {
      code: 'eu',
      name: 'Europe',
      market_id: '1002',
      countries: ['de', 'fr', 'nl'],
      currency: 'eur',
    });
    h.directory.put(market.storeId, 'market', {
      code: 'uk',
      name: 'United Kingdom',
      gid: 'gid://shopify/Market/1003',
      countries: ['gb'],
      currency: 'gbp',
    });
  });

  const resolve = async (context: unknown, detected?: string) => {
    const r = await echo(
      { context },
      { 'x-storefront-access-token': market.token, ...(detected ? { 'x-country-code': detected } : {}) },
    );
    expect(r.statusCode).toBe(200);
    const c = r.json().context;
    return { market: c.market, pricingCountry: c.pricingCountry, currency: c.currency };
  };

  it('strict: explicit market (code, numeric id, gid), then geo, then detected, then primary; catalog filtered, market pricing', async () => {
    const strict = { mode: 'strict', filterCatalog: true, marketPricing: true };
    expect(await resolve({ market: 'fr', geo: { country: 'GB' }, currency: 'chf' }, 'NL')).toEqual({
      market: { code: 'eu', marketId: '1002', source: 'explicit', ...strict },
      pricingCountry: 'FR',
      currency: 'EUR',
    });
    expect((await resolve({ market: '1002' }, 'NL')).market).toMatchObject({ code: 'eu', source: 'explicit' });
    expect((await resolve({ market: 'gid://shopify/Market/1003' })).market).toMatchObject({
      code: 'uk',
      marketId: '1003',
      source: 'explicit',
    });
    expect(await resolve({ geo: { country: 'gb' } }, 'DE')).toEqual({
      market: { code: 'uk', marketId: '1003', source: 'geo', ...strict },
      pricingCountry: 'GB',
      currency: 'GBP',
    });
    expect(await resolve({}, 'NL')).toEqual({
      market: { code: 'eu', marketId: '1002', source: 'detected', ...strict },
      pricingCountry: 'NL',
      currency: 'EUR',
    });
    expect((await resolve({}, 'JP')).market).toEqual({ code: 'us', marketId: '1001', source: 'primary', ...strict });
    expect((await resolve({}, 'JP')).currency).toBe('USD');
  });

  it('pricing_only: the same market, full catalog, market pricing', async () => {
    h.directory.updateStore(market.storeId, { marketMode: 'pricing_only' });
    expect(await resolve({ market: 'fr', currency: 'chf' }, 'GB')).toEqual({
      market: {
        code: 'eu',
        marketId: '1002',
        source: 'explicit',
        mode: 'pricing_only',
        filterCatalog: false,
        marketPricing: true,
      },
      pricingCountry: 'FR',
      currency: 'EUR',
    });
    expect((await resolve({}, 'GB')).market).toMatchObject({ code: 'uk', source: 'detected', mode: 'pricing_only' });
  });

  it('ignore: no market, no pricing country, the sent currency kept (upper-cased)', async () => {
    h.directory.updateStore(market.storeId, { marketMode: 'ignore' });
    expect(await resolve({ market: 'fr', geo: { country: 'DE' }, currency: 'chf' }, 'NL')).toEqual({
      market: null,
      pricingCountry: null,
      currency: 'CHF',
    });
    expect(await resolve({}, 'GB')).toEqual({ market: null, pricingCountry: null, currency: null });
  });
});

describe('redirect terms', () => {
  it('exact terms match the normalized query; semantic terms also match a query with the same word stems, in order', async () => {
    const s = h.directory.addStore();
    h.directory.put(s.storeId, 'redirect_term', {
      term: 'Running Shoes',
      url: '/collections/running',
      match: 'semantic',
    });
    h.directory.put(s.storeId, 'redirect_term', { term: 'gift cards', url: '/pages/gift-cards', match: 'exact' });
    const redirectOf = async (query: string) => {
      const r = await h.app.inject({
        method: 'GET',
        url: `${BASE}/search/complete?query=${encodeURIComponent(query)}`,
        headers: { 'x-storefront-access-token': s.token },
      });
      expect(r.statusCode).toBe(200);
      return (r.json() as { _meta: { redirect?: { url: string } } })._meta.redirect?.url ?? null;
    };
    const got: Record<string, string | null> = {};
    for (const q of [
      'running shoes',
      'Running Shoe',
      'run shoes',
      'runs  shoe',
      'shoes running',
      'running shoes sale',
      'sneakers',
      'gift cards',
      'gift card',
    ]) {
      got[q] = await redirectOf(q);
    }
    expect(got).toEqual({
      'running shoes': '/collections/running',
      'Running Shoe': '/collections/running',
      'run shoes': '/collections/running',
      'runs  shoe': '/collections/running',
      // the approximation: same stems in the same order, nothing looser (no embedding similarity)
      'shoes running': null,
      'running shoes sale': null,
      sneakers: null,
      'gift cards': '/pages/gift-cards',
      // exact terms do not stem
      'gift card': null,
    });
  });
});
