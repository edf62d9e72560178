// Intake settings end to end (own broker, own Redis, the plugin in apps of its own): TRUSTED_PROXIES
// decides whether X-Forwarded-For is believed, BEACON_MAX_CLOCK_SKEW_MS where future timestamps are
// clamped — asserted on the events stored in Kafka and on the metrics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnrichedEvent } from '../../schemas/events.ts';
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

const UNTRUSTING = { storeId: 'store-settings-untrusting', token: 'tok-settings-untrusting-0123456789' };
const SKEW = { storeId: 'store-settings-skew', token: 'tok-settings-skew-0123456789' };
/** geoip-lite: 81.2.69.142 is in GB/ENG (used by the stack suite too) */
const GB_IP = '81.2.69.142';

/** the value of a counter for exactly these labels (0 when never incremented) */
async function counterValue(name: string, labels: Record<string, string>): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  const hit = values.find((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want));
  return hit?.value ?? 0;
}

async function post(
  app: BeaconApp,
  token: string,
  events: Record<string, unknown>[],
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${app.url}/beacon`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-storefront-access-token': token, ...headers },
    body: JSON.stringify({ events }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function stored(app: BeaconApp, ids: string[]): Promise<Map<string, EnrichedEvent>> {
  const out = new Map<string, EnrichedEvent>();
  for (let attempt = 0; attempt < 3 && out.size < ids.length; attempt++) {
    for (const r of await readTopic(app.kafka, app.beacon.topics.events, { timeoutMs: 10_000 })) {
      const { value } = await app.beacon.codec.decode<EnrichedEvent>(r.value, app.beacon.topics.events);
      if (ids.includes(value.event_id)) out.set(value.event_id, value);
    }
  }
  return out;
}

const view = (extra: Record<string, unknown> = {}) => ({
  event_id: eventId(),
  event_type: 'product_view',
  timestamp: new Date().toISOString(),
  session_id: 'sess-settings',
  product_id: 7,
  ...extra,
});

describe('intake settings (standalone)', () => {
  let redis: RedisServer;
  let broker: TestBroker;
  /** TRUSTED_PROXIES without loopback: the test client (127.0.0.1) is the peer and is not believed */
  let untrusting: BeaconApp;
  /** default TRUSTED_PROXIES (loopback trusted), BEACON_MAX_CLOCK_SKEW_MS = 1000, one producing worker */
  let skew: BeaconApp;
  beforeAll(async () => {
    redis = await startRedis();
    broker = await startTestBroker();
    untrusting = await startBeaconApp({
      brokers: broker.brokers,
      redisUrl: redis.url,
      stores: [UNTRUSTING],
      settings: { TRUSTED_PROXIES: '10.0.0.0/8,192.168.0.0/16', BEACON_WORKERS: 0 },
    });
    skew = await startBeaconApp({
      brokers: broker.brokers,
      redisUrl: redis.url,
      stores: [SKEW],
      settings: { BEACON_MAX_CLOCK_SKEW_MS: 1_000, BEACON_WORKERS: 1 },
    });
  });
  afterAll(async () => {
    await untrusting?.close();
    await skew?.close();
    await broker?.stop();
    await redis?.stop();
  });

  it('ignores X-Forwarded-For from a peer outside TRUSTED_PROXIES, and believes it from a trusted one', async () => {
    const spoofed = view();
    const forwarded = view();
    expect((await post(untrusting, UNTRUSTING.token, [spoofed], { 'x-forwarded-for': GB_IP })).status).toBe(201);
    expect((await post(skew, SKEW.token, [forwarded], { 'x-forwarded-for': GB_IP })).status).toBe(201);
    const got = await stored(untrusting, [spoofed.event_id, forwarded.event_id]);
    // the client IP is the loopback peer: no geo
    expect(got.get(spoofed.event_id)).toMatchObject({
      store_id: UNTRUSTING.storeId,
      geo_country: null,
      geo_region: null,
      geo_city: null,
    });
    // loopback is trusted: the forwarded address is the client
    expect(got.get(forwarded.event_id)).toMatchObject({ store_id: SKEW.storeId, geo_country: 'GB', geo_region: 'ENG' });
    expect(got.get(forwarded.event_id)?.geo_city).toMatch(/^[a-z ]+$/);
  });

  it('clamps and flags timestamps beyond BEACON_MAX_CLOCK_SKEW_MS, leaves those within it, and counts the clamps', async () => {
    const before = await counterValue('beacon_timestamps_clamped_total', { store: SKEW.storeId });
    const now = Date.now();
    const ahead5s = view({ timestamp: new Date(now + 5_000).toISOString() });
    const ahead500ms = view({ timestamp: new Date(now + 500).toISOString() });
    const r = await post(skew, SKEW.token, [ahead5s, ahead500ms]);
    expect(r).toMatchObject({ status: 201, body: { accepted: 2, rejected: 0 } });
    expect((await counterValue('beacon_timestamps_clamped_total', { store: SKEW.storeId })) - before).toBe(1);

    const got = await stored(skew, [ahead5s.event_id, ahead500ms.event_id]);
    const clamped = got.get(ahead5s.event_id);
    expect(clamped?.timestamp_clamped).toBe(true);
    expect(clamped?.timestamp).toBe(clamped?.received_at);
    expect(Date.parse(clamped?.timestamp ?? '')).toBeLessThan(now + 5_000);
    expect(got.get(ahead500ms.event_id)).toMatchObject({ timestamp: ahead500ms.timestamp, timestamp_clamped: false });

    // the same 5 s is within the default skew (5 min) of the other app: untouched, not counted
    const otherBefore = await counterValue('beacon_timestamps_clamped_total', { store: UNTRUSTING.storeId });
    const withinDefault = view({ timestamp: new Date(Date.now() + 5_000).toISOString() });
    expect((await post(untrusting, UNTRUSTING.token, [withinDefault])).status).toBe(201);
    expect(await counterValue('beacon_timestamps_clamped_total', { store: UNTRUSTING.storeId })).toBe(otherBefore);
    const kept = await stored(untrusting, [withinDefault.event_id]);
    expect(kept.get(withinDefault.event_id)).toMatchObject({
      timestamp: withinDefault.timestamp,
      timestamp_clamped: false,
    });
  });
});
