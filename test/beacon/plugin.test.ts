// The beacon plugin in an app of its own (own broker, own Redis): body handling corner cases and the
// sharing of Kafka produce calls between concurrent requests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnrichedEvent } from '../../schemas/events.ts';
import { registry } from '../../services/common/metrics.ts';
import { type BeaconApp, eventId, readTopic, type RedisServer, startBeaconApp, startRedis, startTestBroker, type TestBroker } from './helpers.ts';

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
  return values.filter((v) => (v as { metricName?: string }).metricName === `${name}_count`).reduce((n, v) => n + v.value, 0);
}

describe('beacon plugin (standalone)', () => {
  let redis: RedisServer;
  let broker: TestBroker;
  let app: BeaconApp;
  beforeAll(async () => {
    redis = await startRedis();
    broker = await startTestBroker();
    app = await startBeaconApp({ brokers: broker.brokers, redisUrl: redis.url, stores: [{ storeId: 'store-p', token: TOKEN }], settings: { BEACON_WORKERS: 2 } });
  });
  afterAll(async () => {
    await app?.close();
    await broker?.stop();
    await redis?.stop();
  });

  it('reads a body sent without Content-Type as JSON', async () => {
    const res = await fetch(`${app.url}/beacon?token=${TOKEN}`, { method: 'POST', body: new Blob([JSON.stringify({ events: [ev()] })]) });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ accepted: 1 });
  });

  it('strips prototype-poisoning keys instead of failing or honouring them', async () => {
    const raw = `{"events":[{"event_id":"${eventId()}","event_type":"product_view","timestamp":"${new Date().toISOString()}","session_id":"s","product_id":1,"contextual_data":{"__proto__":{"polluted":true},"ok":1}}]}`;
    const res = await fetch(`${app.url}/beacon`, { method: 'POST', headers: { 'x-storefront-access-token': TOKEN, 'content-type': 'application/json' }, body: raw });
    expect(res.status).toBe(201);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('lets concurrent requests share Kafka produce calls, and answers each only once its records are acknowledged', async () => {
    const callsBefore = await histogramCount('beacon_produce_batch_records');
    const batches = Array.from({ length: 40 }, (_, i) => Array.from({ length: 50 }, () => ev({ session_id: `sess-${i}` })));
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
    for (const r of records) got.push((await app.beacon.codec.decode<EnrichedEvent>(r.value, app.beacon.topics.events)).value);
    const mine = got.filter((e) => want.has(e.event_id));
    expect(new Set(mine.map((e) => e.event_id)).size).toBe(want.size);
    for (const [i, events] of batches.entries()) {
      const order = mine.filter((e) => e.session_id === `sess-${i}`).map((e) => e.event_id);
      expect(order).toEqual(events.map((e) => e.event_id));
    }
  });
});
