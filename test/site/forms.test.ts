// The site's forms on the site plugin alone, with a real embedded broker, a real Redis and an in-memory
// registry client: every field rule and status of the spec ("Site endpoints", "Limits"), RFC 9457 bodies,
// the spam trap, the per-IP limit (429 + Retry-After), 405s, and the submission store: a 200 means the
// event is in the log; the log unreachable → 503 + Retry-After (500 for article-unlock, as the spec lists),
// the log refusing → 502; Redis down → the limiter admits.
import Fastify, { type FastifyInstance } from 'fastify';
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { type SiteEvent, SiteEventSchema } from '../../schemas/site.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { parseTrustedProxies } from '../../services/common/enrich.ts';
import {
  createKafka,
  createValueCodec,
  ensureTopics,
  type Kafka,
  topicConfigs,
  type ValueCodec,
} from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { ARTICLES } from '../../services/site/content.ts';
import { SearchesServedCounter } from '../../services/site/counter.ts';
import { OpsSampler } from '../../services/site/ops.ts';
import { sitePlugin } from '../../services/site/plugin.ts';
import { SiteRateLimiter } from '../../services/site/rate-limit.ts';
import { createSiteRecorder, type SiteRecorder } from '../../services/site/recorder.ts';
import {
  memoryRegistry,
  type RedisServer,
  readTopic,
  startRedis,
  startTestBroker,
  type TestBroker,
} from '../beacon/helpers.ts';
import { privateDb } from '../helpers/chdb.ts';

const logger = createLogger('site-forms-test', 'silent');
const TOPIC = TOPICS.site.name;
let broker: TestBroker;
let redis: RedisServer;
let kafka: Kafka;
let codec: ValueCodec;
let recorder: SiteRecorder;
let db: Db;
let app: FastifyInstance;
let sampler: OpsSampler;
let ipSeq = 0;
let recordTo: (e: SiteEvent) => Promise<void>;

beforeAll(async () => {
  broker = await startTestBroker();
  redis = await startRedis();
  kafka = createKafka(broker.brokers, 'site-forms-test', logger);
  await ensureTopics(kafka, topicConfigs({ KAFKA_TOPIC_PREFIX: '' }, ['site']), logger);
  codec = createValueCodec({ registryUrl: '', registry: memoryRegistry() });
  recorder = createSiteRecorder({ kafka, codec, topic: TOPIC, timeoutMs: 3_000 });
  recordTo = (e) => recorder.record(e);
  db = await privateDb(`site_forms_${newUlid().toLowerCase()}`);
  sampler = new OpsSampler({ everyMs: 60_000 });
  app = Fastify();
  await app.register(sitePlugin, {
    db,
    logger,
    storefrontDocument: async () => ({ openapi: '3.1.0', info: { title: 't', version: '1.0.0' }, paths: {} }),
    counter: new SearchesServedCounter({ db, logger }),
    limiter: new SiteRateLimiter(createRedis(redis.url, { connectionName: 'site-forms-test' }).on('error', () => {})),
    record: (e) => recordTo(e),
    sampler,
    trustedProxies: parseTrustedProxies('127.0.0.0/8,::1/128'),
  });
  await app.ready();
});

afterAll(async () => {
  sampler?.stop();
  await app?.close();
  await recorder?.close();
  await db?.close();
  await broker?.stop();
  await redis?.stop();
});

/** a fresh client address per call site (the limits are per address) */
const freshIp = () => `10.9.${Math.floor(++ipSeq / 250)}.${ipSeq % 250}`;

async function post(path: string, fields: Record<string, string>, opts: { ip?: string; type?: string } = {}) {
  const r = await app.inject({
    method: 'POST',
    url: path,
    headers: {
      'content-type': opts.type ?? 'application/x-www-form-urlencoded',
      'x-forwarded-for': opts.ip ?? freshIp(),
    },
    payload: opts.type?.includes('json') ? JSON.stringify(fields) : new URLSearchParams(fields).toString(),
  });
  return { status: r.statusCode, headers: r.headers, body: r.json() };
}

/** expect a 400 RFC 9457 body naming `field` */
function expectFieldError(r: Awaited<ReturnType<typeof post>>, field: string, code = 'invalid_field') {
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(r.body).toMatchObject({
    type: `/problems/${code}`,
    title: 'Bad Request',
    status: 400,
    detail: expect.stringContaining(field),
    error: { code, field, message: expect.stringContaining(field), hint: expect.any(String) },
  });
}

/** every method but POST is a 405 naming POST in Allow, with a problem body (HEAD: the status and Allow) */
async function expectPostOnly(path: string) {
  for (const method of ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH'] as const) {
    const r = await app.inject({ method, url: path });
    expect(r.statusCode, `${method} ${path}`).toBe(405);
    expect(r.headers.allow, `${method} ${path}`).toBe('POST');
    if (method === 'HEAD') continue;
    expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(r.json()).toMatchObject({
      status: 405,
      title: 'Method Not Allowed',
      instance: path,
      error: { code: 'method_not_allowed', hint: expect.any(String) },
    });
  }
}

async function storedEvents(count: number): Promise<SiteEvent[]> {
  const records = await readTopic(kafka, TOPIC, { count, timeoutMs: 10_000 });
  return Promise.all(records.map(async (r) => SiteEventSchema.parse((await codec.decode(r.value, TOPIC)).value)));
}

const subscribe = { email: 'ana@example.com' };
const request = {
  name: 'Ana',
  email: 'ana@example.com',
  service_name: 'Gorgias',
  category: 'Other',
  notes: 'Helpdesk macros with product links.',
};
const correction = {
  integration_name: 'Klaviyo',
  integration_slug: 'klaviyo',
  details: 'The sync runs hourly, not daily.',
  email: 'ana@example.com',
};

describe('stored submissions', () => {
  it('a 200 acknowledges an event that is in the log, spam-trap field removed, with the form’s fields', async () => {
    const r = await post('/api/footer-subscribe', { ...subscribe, source: 'changelog', company_website: '' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      ok: true,
      id: expect.stringMatching(/^[0-9A-Z]{26}$/),
      status: 'subscribed',
      message: expect.any(String),
    });
    const events = await storedEvents(1);
    const e = events.find((x) => x.event_id === r.body.id) as SiteEvent;
    expect(e).toMatchObject({ kind: 'footer_subscribe', email: 'ana@example.com', player: null, score: null });
    expect(JSON.parse(e.fields_json)).toEqual({ email: 'ana@example.com', source: 'changelog' });
    expect(e.client_ip_hash).toMatch(/^[0-9a-f]{16}$/);
  });

  it('a filled spam trap is answered like a success and not stored', async () => {
    const before = (await storedEvents(1)).length;
    const r = await post('/api/footer-subscribe', { ...subscribe, company_website: 'http://spam.example' });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('subscribed');
    const real = await post('/api/integration-request', request);
    expect(real.status).toBe(200);
    const after = await storedEvents(before + 1);
    expect(after.map((e) => e.event_id)).not.toContain(r.body.id);
    expect(after.map((e) => e.event_id)).toContain(real.body.id);
  });
});

describe('footer-subscribe', () => {
  it('defaults source to newsletter and takes changelog; anything else is a 400 naming source', async () => {
    expect((await post('/api/footer-subscribe', subscribe)).body.message).toContain('newsletter');
    expect((await post('/api/footer-subscribe', { ...subscribe, source: '' })).body.message).toContain('newsletter');
    expectFieldError(await post('/api/footer-subscribe', { ...subscribe, source: 'weekly' }), 'source');
  });

  it('email is required and must be an email address', async () => {
    expectFieldError(await post('/api/footer-subscribe', {}), 'email', 'missing_field');
    expectFieldError(await post('/api/footer-subscribe', { email: 'not-an-address' }), 'email');
    expectFieldError(await post('/api/footer-subscribe', { email: `${'a'.repeat(250)}@example.com` }), 'email');
  });

  it('only a URL-encoded form is accepted: JSON and an empty body are 400s', async () => {
    const json = await post('/api/footer-subscribe', subscribe, { type: 'application/json' });
    expect(json.status).toBe(400);
    expect(json.body.error.code).toBe('unsupported_media_type');
    const r = await app.inject({ method: 'POST', url: '/api/footer-subscribe' });
    expect(r.statusCode).toBe(400);
    expect(r.json().error.code).toBe('unsupported_media_type');
  });

  it('the sixth submission from one address within a minute is a 429 with Retry-After; others are not limited', async () => {
    const ip = freshIp();
    for (let i = 0; i < 5; i++) expect((await post('/api/footer-subscribe', subscribe, { ip })).status).toBe(200);
    const r = await post('/api/footer-subscribe', subscribe, { ip });
    expect(r.status).toBe(429);
    expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(r.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(r.body).toMatchObject({ status: 429, title: 'Too Many Requests', error: { code: 'rate_limited' } });
    expect((await post('/api/footer-subscribe', subscribe)).status).toBe(200);
  });

  it('other methods are 405 with Allow: POST', async () => {
    await expectPostOnly('/api/footer-subscribe');
  });

  it('a body over the limit is refused with a problem body, never a 5xx', async () => {
    const r = await post('/api/footer-subscribe', { email: 'a@example.com', pad: 'x'.repeat(20_000) });
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('body_too_large');
  });
});

describe('article-unlock', () => {
  const gated = ARTICLES.find((a) => a.gated) as (typeof ARTICLES)[number];

  it('subscribes the address and returns the canonical article URL, emailSent and an unlock cookie', async () => {
    const r = await post('/api/article-unlock', { email: 'bo@example.com', slug: gated.slug });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      ok: true,
      id: expect.any(String),
      status: 'unlocked',
      message: expect.any(String),
      articleUrl: `http://localhost:80/articles/${gated.slug}`,
      emailSent: false,
    });
    expect(String(r.headers['set-cookie'])).toMatch(
      new RegExp(`^unlock_[a-z_]+=[\\w-]+; Path=/articles/${gated.slug};`),
    );
    const e = (await storedEvents(1)).length;
    expect(e).toBeGreaterThan(0);
  });

  it('an unknown slug is a 404, a malformed one or a missing email a 400; 429 after ten', async () => {
    const missing = await post('/api/article-unlock', { email: 'bo@example.com', slug: 'no-such-article' });
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ status: 404, error: { code: 'article_not_found', field: 'slug' } });
    expectFieldError(await post('/api/article-unlock', { email: 'bo@example.com', slug: 'Bad Slug!' }), 'slug');
    expectFieldError(await post('/api/article-unlock', { email: 'bo@example.com' }), 'slug', 'missing_field');
    expectFieldError(await post('/api/article-unlock', { slug: gated.slug }), 'email', 'missing_field');
    const ip = freshIp();
    for (let i = 0; i < 10; i++)
      expect((await post('/api/article-unlock', { email: 'c@example.com', slug: gated.slug }, { ip })).status).toBe(
        200,
      );
    expect((await post('/api/article-unlock', { email: 'c@example.com', slug: gated.slug }, { ip })).status).toBe(429);
  });

  it('other methods are 405 with Allow: POST', async () => {
    await expectPostOnly('/api/article-unlock');
  });
});

describe('integration-request', () => {
  it('accepts the bounds and refuses one past each, naming the field', async () => {
    expect(
      (await post('/api/integration-request', { ...request, name: 'n'.repeat(120), notes: 'x'.repeat(2000) })).status,
    ).toBe(200);
    expect(
      (await post('/api/integration-request', { ...request, store_url: `https://s.example/${'p'.repeat(180)}` }))
        .status,
    ).toBe(200);
    expectFieldError(await post('/api/integration-request', { ...request, name: 'n'.repeat(121) }), 'name');
    expectFieldError(await post('/api/integration-request', { ...request, name: '   ' }), 'name');
    expectFieldError(
      await post('/api/integration-request', { ...request, service_name: 's'.repeat(121) }),
      'service_name',
    );
    expectFieldError(await post('/api/integration-request', { ...request, notes: 'x'.repeat(2001) }), 'notes');
    expectFieldError(await post('/api/integration-request', { ...request, category: 'Toasters' }), 'category');
    expectFieldError(await post('/api/integration-request', { ...request, email: 'nope' }), 'email');
    expectFieldError(await post('/api/integration-request', { ...request, store_url: 'not a url' }), 'store_url');
    expectFieldError(
      await post('/api/integration-request', { ...request, store_url: `https://s.example/${'p'.repeat(190)}` }),
      'store_url',
    );
    for (const f of ['name', 'email', 'service_name', 'category', 'notes']) {
      const { [f as keyof typeof request]: _, ...rest } = request;
      expectFieldError(await post('/api/integration-request', rest), f, 'missing_field');
    }
  });

  it('other methods are 405 with Allow: POST', async () => {
    await expectPostOnly('/api/integration-request');
  });
});

describe('integration-correction', () => {
  it('requires integration_name, integration_slug, details and email; name and page_url are optional and bounded', async () => {
    expect((await post('/api/integration-correction', correction)).status).toBe(200);
    expect(
      (
        await post('/api/integration-correction', {
          ...correction,
          name: 'n'.repeat(120),
          page_url: 'https://x.example/p',
        })
      ).status,
    ).toBe(200);
    for (const f of ['integration_name', 'integration_slug', 'details', 'email']) {
      const { [f as keyof typeof correction]: _, ...rest } = correction;
      expectFieldError(await post('/api/integration-correction', rest), f, 'missing_field');
    }
    expectFieldError(
      await post('/api/integration-correction', { ...correction, integration_slug: 's'.repeat(121) }),
      'integration_slug',
    );
    expectFieldError(
      await post('/api/integration-correction', { ...correction, details: 'd'.repeat(2001) }),
      'details',
    );
    expectFieldError(await post('/api/integration-correction', { ...correction, name: 'n'.repeat(121) }), 'name');
    expectFieldError(
      await post('/api/integration-correction', { ...correction, page_url: `https://x.example/${'p'.repeat(290)}` }),
      'page_url',
    );
  });

  it('other methods are 405 with Allow: POST', async () => {
    await expectPostOnly('/api/integration-correction');
  });
});

describe('arcade scores', () => {
  it('player 1–24 characters (letters, digits, space, _ . -) and score 0–1 000 000, each refusal naming its field', async () => {
    expect((await post('/api/arcade/scores', { player: 'p'.repeat(24), score: '0' })).status).toBe(200);
    const top = await post('/api/arcade/scores', { player: 'Åsa_1.-x', score: '1000000' });
    expect(top.status, JSON.stringify(top.body)).toBe(200);
    expect(top.body.status).toBe('recorded');
    expectFieldError(await post('/api/arcade/scores', { player: 'p'.repeat(25), score: '1' }), 'player');
    expectFieldError(await post('/api/arcade/scores', { player: '<b>', score: '1' }), 'player');
    expectFieldError(await post('/api/arcade/scores', { score: '1' }), 'player', 'missing_field');
    for (const score of ['1000001', '-1', '1.5', 'lots'])
      expectFieldError(await post('/api/arcade/scores', { player: 'ana', score }), 'score');
    expectFieldError(await post('/api/arcade/scores', { player: 'ana' }), 'score', 'missing_field');
  });

  it('the 31st score from one address within a minute is a 429 with Retry-After', async () => {
    const ip = freshIp();
    for (let i = 0; i < 30; i++)
      expect((await post('/api/arcade/scores', { player: 'ana', score: String(i) }, { ip })).status).toBe(200);
    const r = await post('/api/arcade/scores', { player: 'ana', score: '31' }, { ip });
    expect(r.status).toBe(429);
    expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(r.body.error.code).toBe('rate_limited');
  });

  it('other methods are 405 with Allow: POST', async () => {
    await expectPostOnly('/api/arcade/scores');
  });
});

describe('when the submission store fails', () => {
  it('the log refusing the write is a 502 (a topic the broker does not have); 500 for article-unlock', async () => {
    const refusing = createSiteRecorder({ kafka, codec, topic: 'site.missing.v1', timeoutMs: 3_000 });
    recordTo = (e) => refusing.record(e);
    try {
      for (const [path, body] of [
        ['/api/footer-subscribe', subscribe],
        ['/api/integration-request', request],
        ['/api/integration-correction', correction],
      ] as const) {
        const r = await post(path, body);
        expect(r.status, `${path} ${JSON.stringify(r.body)}`).toBe(502);
        expect(r.headers['retry-after'], path).toBeUndefined();
        expect(r.body).toMatchObject({ status: 502, title: 'Bad Gateway', error: { code: 'store_rejected' } });
      }
      const unlock = await post('/api/article-unlock', { email: 'e@example.com', slug: ARTICLES[0].slug });
      expect(unlock.status).toBe(500);
      expect(unlock.body).toMatchObject({ status: 500, error: { code: 'store_failed' } });
      expect(unlock.headers['set-cookie']).toBeUndefined();
    } finally {
      recordTo = (e) => recorder.record(e);
      await refusing.close();
    }
  });

  it('the log unreachable is a 503 with Retry-After (500 for article-unlock); nothing half-stored', async () => {
    const dead = createSiteRecorder({
      kafka: createKafka(['127.0.0.1:1'], 'site-forms-dead', logger),
      codec,
      topic: TOPIC,
      timeoutMs: 2_000,
    });
    recordTo = (e) => dead.record(e);
    try {
      for (const [path, body] of [
        ['/api/footer-subscribe', subscribe],
        ['/api/integration-request', request],
        ['/api/integration-correction', correction],
      ] as const) {
        const r = await post(path, body);
        expect(r.status, path).toBe(503);
        expect(r.headers['retry-after']).toBe('30');
        expect(r.body).toMatchObject({
          status: 503,
          title: 'Service Unavailable',
          error: { code: 'store_unavailable' },
        });
      }
      const unlock = await post('/api/article-unlock', { email: 'd@example.com', slug: ARTICLES[0].slug });
      expect(unlock.status).toBe(500);
      expect(unlock.body.error.code).toBe('store_failed');
      expect(unlock.headers['set-cookie']).toBeUndefined();
    } finally {
      recordTo = (e) => recorder.record(e);
      await dead.close().catch(() => {});
    }
  });

  it('Redis down: the limiter admits (the form is stored, no 5xx)', async () => {
    await redis.stop();
    const r = await post('/api/footer-subscribe', subscribe);
    expect(r.status).toBe(200);
  });
});
