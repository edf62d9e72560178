// The beacon plugin in an app of its own (own broker, own Redis): body handling corner cases, batch
// size limits, token precedence, record keys and partitions, and the sharing of Kafka produce calls
// between concurrent requests.
import { Partitioners } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnrichedEvent } from '../../schemas/events.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { registry } from '../../services/common/metrics.ts';
import {
  type BeaconApp,
  eventId,
  readTopic,
  type RedisServer,
  startBeaconApp,
  startRedis,
  startTestBroker,
  type TestBroker,
} from './helpers.ts';

const TOKEN = 'tok-plugin-0123456789abcdef';

const ev = (extra: Record<string, unknown> = {}) => ({
  event_id: eventId(),
  event_type: 'product_view',
  timestamp: new Date().toISOString(),
  session_id: 'sess-p',
  product_id: 42,
  ...extra,
});

async function histogramCount(name: string): Promise<number> {
  const m = registry.getSingleMetric(name);
  if (!m) return 0;
  const { values } = await m.get();
  return values
    .filter((v) => (v as { metricName?: string }).metricName === `${name}_count`)
    .reduce((n, v) => n + v.value, 0);
}

describe('beacon plugin (standalone)', () => {
  let redis: RedisServer;
  let broker: TestBroker;
  let app: BeaconApp;
  beforeAll(async () => {
    redis = await startRedis();
    broker = await startTestBroker();
    app = await startBeaconApp({
      brokers: broker.brokers,
      redisUrl: redis.url,
      stores: [{ storeId: 'store-p', token: TOKEN }],
      settings: { BEACON_WORKERS: 2 },
    });
  });
  afterAll(async () => {
    await app?.close();
    await broker?.stop();
    await redis?.stop();
  });

  it('reads a body sent without Content-Type as JSON', async () => {
    const res = await fetch(`${app.url}/beacon?token=${TOKEN}`, {
      method: 'POST',
      body: new Blob([JSON.stringify({ events: [ev()] })]),
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ accepted: 1 });
  });

  it('strips prototype-poisoning keys instead of failing or honouring them', async () => {
    const raw = `{"events":[{"event_id":"${eventId()}","event_type":"product_view","timestamp":"${new Date().toISOString()}","session_id":"s","product_id":1,"contextual_data":{"__proto__":{"polluted":true},"ok":1}}]}`;
    const res = await fetch(`${app.url}/beacon`, {
      method: 'POST',
      headers: { 'x-storefront-access-token': TOKEN, 'content-type': 'application/json' },
      body: raw,
    });
    expect(res.status).toBe(201);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('accepts a batch of exactly 100 events and refuses 101 with 422 naming `events`', async () => {
    const hundred = Array.from({ length: 100 }, (_, i) => ev({ session_id: `sess-100-${i % 7}` }));
    const ok = await fetch(`${app.url}/beacon`, {
      method: 'POST',
      headers: { 'x-storefront-access-token': TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ events: hundred }),
    });
    expect(ok.status).toBe(201);
    expect(await ok.json()).toEqual({ accepted: 100, duplicates: 0, rejected: 0, rejections: [] });

    const tooMany = await fetch(`${app.url}/beacon`, {
      method: 'POST',
      headers: { 'x-storefront-access-token': TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ events: Array.from({ length: 101 }, () => ev()) }),
    });
    expect(tooMany.status).toBe(422);
    const body = (await tooMany.json()) as { errors: { path: string; message: string }[]; error: { code: string } };
    expect(body.errors).toEqual([{ path: 'events', message: expect.any(String) }]);
    expect(body.error.code).toBe('invalid_batch');

    // all 100 of the accepted batch are in the log
    const want = new Set(hundred.map((e) => e.event_id));
    const records = await readTopic(app.kafka, app.beacon.topics.events, { timeoutMs: 15_000 });
    const ids: string[] = [];
    for (const r of records)
      ids.push((await app.beacon.codec.decode<EnrichedEvent>(r.value, app.beacon.topics.events)).value.event_id);
    expect(ids.filter((id) => want.has(id))).toHaveLength(100);
  });

  it('prefers the header token over ?token= when both are sent', async () => {
    const send = (query: string, header: string) =>
      fetch(`${app.url}/beacon${query}`, {
        method: 'POST',
        headers: { 'x-storefront-access-token': header, 'content-type': 'text/plain;charset=UTF-8' },
        body: JSON.stringify({ events: [ev()] }),
      });
    const goodHeader = await send('?token=not-a-valid-token', TOKEN);
    expect(goodHeader.status).toBe(201);
    expect(await goodHeader.json()).toMatchObject({ accepted: 1 });
    // and the other way round: a bad header is not rescued by a good query token
    const badHeader = await send(`?token=${TOKEN}`, 'not-a-valid-token');
    expect(badHeader.status).toBe(401);
    expect(await badHeader.json()).toMatchObject({ error: { code: 'invalid_token' } });
  });

  it('keys events by store and session, on the DefaultPartitioner partition of that key', async () => {
    const sessions = ['sess-key-a', 'sess-key-b', 'sess-key-c', 'sess-key-d'];
    const events = sessions.flatMap((s) => [ev({ session_id: s }), ev({ session_id: s })]);
    const res = await fetch(`${app.url}/beacon`, {
      method: 'POST',
      headers: { 'x-storefront-access-token': TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
    });
    expect(res.status).toBe(201);
    const want = new Map(events.map((e) => [e.event_id, e.session_id]));
    const records = await readTopic(app.kafka, app.beacon.topics.events, { timeoutMs: 15_000 });
    const partitionMetadata = Array.from({ length: TOPICS.events.partitions }, (_, i) => ({
      partitionId: i,
      leader: 1,
      partitionErrorCode: 0,
      replicas: [1],
      isr: [1],
    }));
    const partitionOf = Partitioners.DefaultPartitioner();
    let seen = 0;
    for (const r of records) {
      const value = (await app.beacon.codec.decode<EnrichedEvent>(r.value, app.beacon.topics.events)).value;
      const session = want.get(value.event_id);
      if (session === undefined) continue;
      seen++;
      expect(r.key).toBe(`store-p:${session}`);
      expect(r.partition).toBe(
        partitionOf({ topic: app.beacon.topics.events, partitionMetadata, message: { key: r.key, value: null } }),
      );
    }
    expect(seen).toBe(events.length);
  });

  it('lets concurrent requests share Kafka produce calls, and answers each only once its records are acknowledged', async () => {
    const callsBefore = await histogramCount('beacon_produce_batch_records');
    const batches = Array.from({ length: 40 }, (_, i) =>
      Array.from({ length: 50 }, () => ev({ session_id: `sess-${i}` })),
    );
    const responses = await Promise.all(
      batches.map((events) =>
        fetch(`${app.url}/beacon`, {
          method: 'POST',
          headers: { 'x-storefront-access-token': TOKEN, 'content-type': 'application/json' },
          body: JSON.stringify({ events }),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as { accepted: number } })),
      ),
    );
    for (const r of responses) expect(r).toMatchObject({ status: 201, body: { accepted: 50 } });
    const calls = (await histogramCount('beacon_produce_batch_records')) - callsBefore;
    expect(calls).toBeGreaterThan(0);
    expect(calls).toBeLessThan(batches.length);

    // every acknowledged event is in the log, in order per session
    const want = new Set(batches.flat().map((e) => e.event_id));
    const records = await readTopic(app.kafka, app.beacon.topics.events, { timeoutMs: 15_000 });
    const got: EnrichedEvent[] = [];
    for (const r of records)
      got.push((await app.beacon.codec.decode<EnrichedEvent>(r.value, app.beacon.topics.events)).value);
    const mine = got.filter((e) => want.has(e.event_id));
    expect(new Set(mine.map((e) => e.event_id)).size).toBe(want.size);
    for (const [i, events] of batches.entries()) {
      const order = mine.filter((e) => e.session_id === `sess-${i}`).map((e) => e.event_id);
      expect(order).toEqual(events.map((e) => e.event_id));
    }
  });
});
