// POST /beacon against the running stack: what the intake answers, and what it wrote to Kafka
// (read back with a kafkajs consumer and the registry codec).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createValueCodec } from '../../services/common/kafka/codec.ts';
import { EVENT_TYPES, type EnrichedEvent, type RejectedEvent } from '../../schemas/events.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { type Collected, eventId, topicCollector } from '../beacon/helpers.ts';
import { stack } from '../helpers/stack.ts';
import { closeTestStoreWriter, createTestStore, testStoreWriter, waitForApp } from '../helpers/stores.ts';

const UA = {
  iphone:
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
  ipad: 'Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1',
  chrome:
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  googlebot: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
};

type Raw = Record<string, unknown>;

const common = (type: string): Raw & { event_id: string } => ({
  event_id: eventId(),
  event_type: type,
  timestamp: new Date().toISOString(),
  session_id: 'sess-1',
  attribution_token: '01JD0000000000000000000ATT',
});

/** A valid event of every type, and the type-specific field whose absence drops it. */
const SAMPLES: Record<(typeof EVENT_TYPES)[number], { extra: Raw; required: string }> = {
  product_click: { extra: { product_id: 11, position: 1, query: 'shoes' }, required: 'position' },
  product_view: { extra: { product_id: 12, variant_id: 99 }, required: 'product_id' },
  product_impression: { extra: { product_id: 13, position: 2 }, required: 'position' },
  product_hover: { extra: { product_id: 14, position: 3 }, required: 'product_id' },
  product_touch: { extra: { product_id: 15, position: 4 }, required: 'position' },
  add_to_cart: {
    extra: { product_id: 16, variant_id: 160, quantity: 2, price: '19.99', currency: 'usd' },
    required: 'product_id',
  },
  purchase: {
    extra: {
      order_id: 'o-1',
      currency: 'USD',
      total_price: 40,
      line_items: [{ product_id: 16, quantity: 2, price: 20 }],
    },
    required: 'line_items',
  },
  block_view: { extra: { block_id: 'blk-1' }, required: 'session_id' },
  collection_view: { extra: { collection_handle: 'shoes' }, required: 'collection_handle' },
  content_view: { extra: { content_type: 'article', content_id: 501 }, required: 'content_id' },
  content_click: { extra: { content_type: 'page', content_id: 502, position: 1 }, required: 'content_type' },
  content_impression: { extra: { content_type: 'article', content_id: 503 }, required: 'content_id' },
  banner_impression: {
    extra: { banner_id: '01JD00000000000000000BANNR', rule_id: 'r1', banner_mode: 'inject', web_position: 2 },
    required: 'banner_id',
  },
  banner_click: { extra: { banner_id: '01JD00000000000000000BANNR' }, required: 'banner_id' },
  search: { extra: { query: 'red shoes', contextual_data: { search_source: 'typed' } }, required: 'query' },
  autocomplete: { extra: { query: 're' }, required: 'event_id' },
  autocomplete_click: {
    extra: {
      query: 'red shoes',
      contextual_data: { typed_query: 'red', position: 1, selection_source: 'query_suggestion' },
    },
    required: 'contextual_data.typed_query',
  },
};

function without(obj: Raw, path: string): Raw {
  const copy = structuredClone(obj);
  const parts = path.split('.');
  let cur = copy;
  for (const p of parts.slice(0, -1)) cur = cur[p] as Raw;
  delete cur[parts.at(-1)!];
  return copy;
}

interface PostOptions {
  token?: string | null;
  query?: string;
  headers?: Record<string, string>;
  contentType?: string;
  raw?: string;
}

async function post(body: unknown, opts: PostOptions & { defaultToken: string }) {
  const headers: Record<string, string> = {
    'content-type': opts.contentType ?? 'application/json',
    'user-agent': UA.chrome,
    ...opts.headers,
  };
  const token = opts.token === undefined ? opts.defaultToken : opts.token;
  if (token !== null && opts.query === undefined) headers['x-storefront-access-token'] = token;
  const res = await fetch(`${stack().httpUrl}/beacon${opts.query ?? ''}`, {
    method: 'POST',
    headers,
    body: opts.raw ?? JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as Record<string, any> };
}

describe('POST /beacon (stack)', () => {
  let store: { storeId: string; token: string };
  let events: Awaited<ReturnType<typeof topicCollector<EnrichedEvent>>>;
  let rejected: Awaited<ReturnType<typeof topicCollector<RejectedEvent>>>;
  const send = (body: unknown, opts: PostOptions = {}) => post(body, { ...opts, defaultToken: store.token });
  const eventsOf = (ids: string[]) =>
    events.waitFor((items) => ids.every((id) => items.some((i) => i.value.event_id === id)));

  beforeAll(async () => {
    store = await createTestStore({ name: 'beacon stack test' });
    const logger = createLogger('beacon-stack-test', 'silent');
    const kafka = createKafka(stack().kafkaBrokers, `beacon-stack-test-${process.pid}`, logger);
    const codec = createValueCodec({ registryUrl: stack().schemaRegistryUrl });
    events = await topicCollector<EnrichedEvent>(
      kafka,
      codec,
      [TOPICS.events.name],
      (v) => v.store_id === store.storeId,
    );
    rejected = await topicCollector<RejectedEvent>(
      kafka,
      codec,
      [TOPICS.rejected.name],
      (v) => v.store_id === store.storeId,
    );
  });
  afterAll(async () => {
    await events?.stop();
    await rejected?.stop();
    await closeTestStoreWriter();
  });

  it('accepts every event type with its required fields and drops each without them, reporting why', async () => {
    const valid = EVENT_TYPES.map((t) => ({ ...common(t), ...SAMPLES[t].extra }));
    const invalid = EVENT_TYPES.map((t) => without({ ...common(t), ...SAMPLES[t].extra }, SAMPLES[t].required));
    const unknown = { ...common('wishlist_add'), product_id: 1 };
    const batch = [...valid, ...invalid, unknown, 'not an object'];
    // split in two requests (a batch holds at most 100 events; this one fits, the split covers both paths)
    const r = await send({ events: batch });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ accepted: valid.length, duplicates: 0, rejected: invalid.length + 2 });
    const rejections = r.body.rejections as { index: number; code: string; path: string; reason: string }[];
    EVENT_TYPES.forEach((t, i) => {
      const rej = rejections.find((x) => x.index === valid.length + i);
      expect(rej, t).toBeDefined();
      expect(rej!.path, t).toBe(SAMPLES[t].required);
      expect(rej!.code, t).toBe('missing_field');
    });
    expect(rejections.find((x) => x.index === batch.length - 2)).toMatchObject({
      code: 'unknown_event_type',
      path: 'event_type',
    });
    expect(rejections.find((x) => x.index === batch.length - 1)).toMatchObject({ code: 'not_an_object', path: '' });

    const got = await eventsOf(valid.map((v) => v.event_id as string));
    for (const v of valid) {
      const e = got.find((g) => g.value.event_id === v.event_id)!;
      expect(e.value).toMatchObject({ event_type: v.event_type, store_id: store.storeId, session_id: 'sess-1' });
      expect(e.key).toBe(`${store.storeId}:sess-1`);
    }
    const pv = got.find((g) => g.value.event_type === 'product_view')!.value;
    expect(pv).toMatchObject({ product_id: '12', variant_id: '99', attribution_token: '01JD0000000000000000000ATT' });
    const atc = got.find((g) => g.value.event_type === 'add_to_cart')!.value;
    expect(atc).toMatchObject({ quantity: 2, price: '19.99', currency: 'USD' });
    const ac = got.find((g) => g.value.event_type === 'autocomplete_click')!.value;
    expect(ac.contextual_data).toEqual({ typed_query: 'red', position: 1, selection_source: 'query_suggestion' });
    // nothing of the invalid ones reached the events topic
    const invalidIds = new Set(invalid.map((v) => v.event_id));
    expect(events.items.filter((i) => invalidIds.has(i.value.event_id))).toHaveLength(0);

    // and every drop is on the rejected topic with its reason
    const rej = await rejected.waitFor((items) =>
      invalid.every((v) => items.some((i) => JSON.parse(i.value.raw_json).event_id === v.event_id)),
    );
    const ofType = (t: string) =>
      rej.find((i: Collected<RejectedEvent>) => i.value.event_type === t && i.value.code === 'missing_field')!.value;
    expect(ofType('collection_view')).toMatchObject({
      path: 'collection_handle',
      reason: expect.stringContaining('collection_handle'),
    });
    expect(rej.some((i) => i.value.code === 'unknown_event_type' && i.value.event_type === 'wishlist_add')).toBe(true);
    expect(rej.some((i) => i.value.code === 'not_an_object' && i.value.raw_json === '"not an object"')).toBe(true);

    // and counted by store and reason
    const metrics = await (await fetch(`${stack().httpUrl}/metrics`)).text();
    expect(metrics).toMatch(
      new RegExp(`beacon_events_rejected_total\\{store="${store.storeId}",reason="missing_field"\\} ${invalid.length}`),
    );
    expect(metrics).toMatch(
      new RegExp(`beacon_events_rejected_total\\{store="${store.storeId}",reason="unknown_event_type"\\} 1`),
    );
  });

  it('answers 422 with field paths for every bad batch shape', async () => {
    const cases: [string, PostOptions & { body?: unknown }, string][] = [
      ['not JSON', { raw: '{"events": [' }, ''],
      ['empty body', { raw: '' }, ''],
      ['an array', { body: [{ event_type: 'search' }] }, ''],
      ['no events', { body: { event: [] } }, 'events'],
      ['events not an array', { body: { events: { a: 1 } } }, 'events'],
      ['empty events', { body: { events: [] } }, 'events'],
      [
        '101 events',
        { body: { events: Array.from({ length: 101 }, () => ({ ...common('autocomplete') })) } },
        'events',
      ],
    ];
    for (const [name, opts, path] of cases) {
      const r = await send(opts.body, opts);
      expect(r.status, name).toBe(422);
      expect(r.body.errors, name).toEqual([expect.objectContaining({ path, message: expect.any(String) })]);
      expect(r.body.error, name).toMatchObject({ code: expect.any(String), fields: r.body.errors });
    }
  });

  it('answers 413 with a JSON error above the body limit', async () => {
    const big = {
      events: [
        { ...common('search'), query: 'x', contextual_data: { search_source: 'typed', pad: 'x'.repeat(600 * 1024) } },
      ],
    };
    const r = await send(big);
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('payload_too_large');
  });

  it('authenticates by header or by ?token= with a text/plain body (sendBeacon), 401 without, 402 when suspended', async () => {
    const viaHeader = { ...common('collection_view'), collection_handle: 'a' };
    expect((await send({ events: [viaHeader] })).status).toBe(201);

    const viaQuery = { ...common('collection_view'), collection_handle: 'b' };
    const q = await send(
      { events: [viaQuery] },
      { token: null, query: `?token=${encodeURIComponent(store.token)}`, contentType: 'text/plain;charset=UTF-8' },
    );
    expect(q.status).toBe(201);
    expect(q.body.accepted).toBe(1);
    await eventsOf([viaHeader.event_id as string, viaQuery.event_id as string]);

    const missing = await send({ events: [viaHeader] }, { token: null });
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('missing_token');
    const invalid = await send({ events: [viaHeader] }, { token: 'not-a-token' });
    expect(invalid.status).toBe(401);
    expect(invalid.body.error.code).toBe('invalid_token');

    const other = await createTestStore({ name: 'beacon suspended' });
    const w = testStoreWriter();
    await w.suspendStore(other.storeId);
    await waitForApp(w);
    const suspended = await post({ events: [{ ...common('autocomplete') }] }, { defaultToken: other.token });
    expect(suspended.status).toBe(402);
    expect(suspended.body.error.code).toBe('store_suspended');
  });

  it('enriches from the request: geo from X-Forwarded-For of a trusted proxy, device/browser/OS/bot from the User-Agent, channel', async () => {
    const ids: Record<string, string> = {};
    const sendAs = async (name: string, headers: Record<string, string>, extra: Raw = {}) => {
      const e = { ...common('product_view'), product_id: 7, ...extra };
      ids[name] = e.event_id as string;
      const r = await send({ events: [e] }, { headers });
      expect(r.status, name).toBe(201);
    };
    await sendAs(
      'iphone',
      { 'user-agent': UA.iphone, 'x-forwarded-for': '81.2.69.142' },
      { geo_country: 'FR', device_type: 'desktop', is_bot: false },
    );
    await sendAs('ipad', { 'user-agent': UA.ipad, 'x-forwarded-for': '10.9.8.7, 24.48.0.1' });
    await sendAs('chrome', { 'user-agent': UA.chrome });
    await sendAs('bot', { 'user-agent': UA.googlebot });
    await sendAs('app', { 'user-agent': UA.iphone, 'x-requested-with': 'com.tapcart.app' });
    await sendAs(
      'explicit',
      { 'user-agent': UA.iphone, 'x-requested-with': 'com.tapcart.app' },
      { shopping_channel: 'web' },
    );
    await sendAs('future', {}, { timestamp: new Date(Date.now() + 3_600_000).toISOString() });
    await sendAs('past', {}, { timestamp: '2026-01-02T03:04:05+02:00' });
    const got = await eventsOf(Object.values(ids));
    const of = (name: string) => got.find((g) => g.value.event_id === ids[name])!.value;

    // client-sent enrichment fields are ignored
    expect(of('iphone')).toMatchObject({
      geo_country: 'GB',
      geo_region: 'ENG',
      device_type: 'mobile',
      os: 'iOS',
      browser: 'Mobile Safari',
      is_bot: false,
      shopping_channel: 'web',
    });
    expect(of('iphone').geo_city).toMatch(/^[a-z ]+$/);
    // the right-most untrusted hop is the client; the private address before it is client-controlled
    expect(of('ipad')).toMatchObject({
      geo_country: 'CA',
      geo_region: 'QC',
      geo_city: 'montreal',
      device_type: 'tablet',
      os: 'iOS',
    });
    expect(of('chrome')).toMatchObject({
      device_type: 'desktop',
      browser: 'Chrome',
      os: 'Windows',
      is_bot: false,
      geo_country: null,
    });
    expect(of('bot')).toMatchObject({ device_type: 'bot', is_bot: true });
    expect(of('app').shopping_channel).toBe('app');
    expect(of('explicit').shopping_channel).toBe('web');

    const future = of('future');
    expect(future.timestamp_clamped).toBe(true);
    expect(future.timestamp).toBe(future.received_at);
    expect(of('past')).toMatchObject({ timestamp: '2026-01-02T01:04:05.000Z', timestamp_clamped: false });
  });

  it('drops an event with an unparseable timestamp, with the reason', async () => {
    const bad = { ...common('autocomplete'), timestamp: 'yesterday-ish' };
    const r = await send({ events: [bad] });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      accepted: 0,
      rejected: 1,
      rejections: [{ index: 0, code: 'invalid_field', path: 'timestamp' }],
    });
  });

  it('deduplicates a retried batch by event_id: the second request produces nothing', async () => {
    const batch = {
      events: [0, 1, 2].map((i) => ({ ...common('product_impression'), product_id: 300 + i, position: i + 1 })),
    };
    const first = await send(batch);
    expect(first.body).toMatchObject({ accepted: 3, duplicates: 0 });
    const ids = batch.events.map((e) => e.event_id as string);
    await eventsOf(ids);
    const retry = await send(batch);
    expect(retry.status).toBe(201);
    expect(retry.body).toMatchObject({ accepted: 3, duplicates: 3, rejected: 0 });
    // one in-batch duplicate too
    const dupInBatch = { ...common('autocomplete') };
    const inBatch = await send({ events: [dupInBatch, dupInBatch] });
    expect(inBatch.body).toMatchObject({ accepted: 2, duplicates: 1 });

    // a marker sent after the retry: once it arrived, everything before it did too (same session → same partition)
    const marker = { ...common('autocomplete') };
    await send({ events: [marker] });
    await eventsOf([marker.event_id as string, dupInBatch.event_id as string]);
    for (const id of [...ids, dupInBatch.event_id as string]) {
      expect(
        events.items.filter((i) => i.value.event_id === id),
        id,
      ).toHaveLength(1);
    }
    const metrics = await (await fetch(`${stack().httpUrl}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`beacon_dedup_hits_total\\{store="${store.storeId}",scope="stored"\\} 3`));
  });

  it('answers CORS preflights for any origin, cached', async () => {
    const res = await fetch(`${stack().httpUrl}/beacon`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://shop.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, x-storefront-access-token',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toContain('POST');
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('x-storefront-access-token');
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('content-type');
    expect(Number(res.headers.get('access-control-max-age'))).toBeGreaterThan(0);
    // and the actual response carries the origin header too
    const r = await send(
      { events: [{ ...common('autocomplete') }] },
      { headers: { origin: 'https://shop.example.com' } },
    );
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
  });
});
