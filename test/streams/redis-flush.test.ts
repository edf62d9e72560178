// Redis flushed under a running stream (issue #23): a real FLUSHALL on the Redis the processors and the
// beacon share, while shoppers keep sending events through the beacon, and a client then retries every
// event already counted. The beacon's dedup marks are gone with the rest, so it accepts the retries as
// new and produces them again; the events processor's claims are gone too, and it has to notice (the
// epoch marker) and check its ledger (events_raw). Every aggregate equals the ground truth: each
// event_id counted once.
import { Redis } from 'ioredis';
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRegistryClient } from '../../services/common/kafka/registry-client.ts';
import { streamMetrics } from '../../streams/runtime/metrics.ts';
import { type BeaconApp, startBeaconApp } from '../beacon/helpers.ts';
import { type StreamsHarness, startStreamsHarness, waitCaughtUp } from './helpers.ts';

const STORE = 'store-flush';
const TOKEN = 'tok-redis-flush-0123456789';
const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

interface SentEvent {
  event_id: string;
  event_type: 'product_view' | 'product_click';
  timestamp: string;
  session_id: string;
  product_id: number;
  /** clicks: the product's rank in the list clicked */
  position?: number;
}

/** one visit: `n` views and clicks over products 1..8 in a session of its own */
function visit(n: number, seed: number): SentEvent[] {
  const session = `visit-${newUlid()}`;
  const t0 = Date.now() - 60_000;
  return Array.from({ length: n }, (_, i) => {
    const base = {
      event_id: newUlid(),
      timestamp: new Date(t0 + i * 100).toISOString(),
      session_id: session,
      product_id: 1 + ((seed * 7 + i * 3) % 8),
    };
    return (seed + i) % 3 === 0
      ? { ...base, event_type: 'product_click', position: 1 + (i % 5) }
      : { ...base, event_type: 'product_view' };
  });
}

async function duplicatesCounted(): Promise<number> {
  const { values } = await streamMetrics.messages.get();
  return values
    .filter((v) => v.labels.processor === 'events' && v.labels.outcome === 'duplicate')
    .reduce((n, v) => n + v.value, 0);
}

describe('Redis flushed under a running stream', () => {
  let h: StreamsHarness;
  let beacon: BeaconApp;
  beforeAll(async () => {
    h = await startStreamsHarness('redis-flush', {
      processors: 'events',
      env: { STREAMS_MAX_BATCH_MESSAGES: '20', STREAMS_LINGER_MS: '20' },
    });
    beacon = await startBeaconApp({
      brokers: h.infra.brokers,
      redisUrl: h.infra.redisUrl,
      stores: [{ storeId: STORE, token: TOKEN }],
      registry: createRegistryClient({ url: h.infra.registryUrl }),
      settings: { KAFKA_TOPIC_PREFIX: h.infra.prefix },
    });
  }, 120_000);
  afterAll(async () => {
    await beacon?.close();
    await h?.stop();
  }, 60_000);

  async function post(events: SentEvent[]) {
    const res = await fetch(`${beacon.url}/beacon`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-storefront-access-token': TOKEN, 'user-agent': UA },
      body: JSON.stringify({ events }),
    });
    const body = (await res.json()) as { accepted?: number; duplicates?: number; rejected?: number };
    expect(res.status, JSON.stringify(body)).toBe(201);
    expect(body.rejected, JSON.stringify(body)).toBe(0);
    return body;
  }

  const count = async (sql: string) => Number((await h.db.query<{ n: string }>(sql, { s: STORE }))[0]?.n ?? 0);

  it('counts every event_id once after a FLUSHALL while a client retries events already counted', {
    timeout: 180_000,
  }, async () => {
    // 1. visits counted before the flush
    const before = Array.from({ length: 8 }, (_, i) => visit(15, i));
    for (const v of before) await post(v);
    const beforeEvents = before.flat();
    await expect
      .poll(() => count('SELECT count() AS n FROM events_raw WHERE store_id = {s:String}'), { timeout: 60_000 })
      .toBe(beforeEvents.length);
    // the beacon itself drops a retry while it remembers the ids
    expect(await post(beforeEvents.slice(0, 10))).toMatchObject({ duplicates: 10 });
    const dupBefore = await duplicatesCounted();

    // 2. shoppers keep sending while Redis is flushed; then a client retries everything counted so far
    const during: SentEvent[][] = [];
    const sender = (async () => {
      for (let i = 0; i < 12; i++) {
        const v = visit(10, 100 + i);
        await post(v);
        during.push(v);
        await new Promise((r) => setTimeout(r, 60));
      }
    })();
    await vi.waitFor(() => expect(during.length).toBeGreaterThanOrEqual(4), { timeout: 30_000 });
    const admin = new Redis(h.infra.redisUrl);
    try {
      expect(await admin.flushall()).toBe('OK');
      expect(await admin.dbsize()).toBeLessThan(10);
    } finally {
      admin.disconnect();
    }
    // the beacon's marks are gone: it takes every retry of the events counted before for new, and
    // produces it again
    let beaconDuplicates = 0;
    for (let i = 0; i < beforeEvents.length; i += 25)
      beaconDuplicates += (await post(beforeEvents.slice(i, i + 25))).duplicates ?? 0;
    expect(beaconDuplicates).toBe(0);
    // and the visits sent around the flush are retried too
    for (const v of [...during]) await post(v);
    await sender;

    // 3. everything processed: each event_id counted once in every aggregate
    await waitCaughtUp(h.infra.kafka, [{ group: 'streams.events', topic: h.infra.topic('events') }], 120_000);
    const all = [...beforeEvents, ...during.flat()];
    const views = new Map<number, number>();
    const clicks = new Map<number, number>();
    for (const e of all) {
      const m = e.event_type === 'product_view' ? views : clicks;
      m.set(e.product_id, (m.get(e.product_id) ?? 0) + 1);
    }
    expect(await count('SELECT count() AS n FROM events_raw WHERE store_id = {s:String}')).toBe(all.length);
    expect(await count('SELECT uniqExact(event_id) AS n FROM events_raw WHERE store_id = {s:String}')).toBe(all.length);
    const engagement = await h.db.query<{ p: string; v: string; c: string }>(
      'SELECT toString(product_id) AS p, sum(views) AS v, sum(clicks) AS c FROM product_daily_engagement WHERE store_id = {s:String} GROUP BY p ORDER BY p',
      { s: STORE },
    );
    expect(Object.fromEntries(engagement.map((r) => [r.p, [Number(r.v), Number(r.c)]]))).toEqual(
      Object.fromEntries(
        [...new Set(all.map((e) => e.product_id))]
          .sort((a, b) => a - b)
          .map((p) => [String(p), [views.get(p) ?? 0, clicks.get(p) ?? 0]]),
      ),
    );
    // one session per visit, with each of its events once
    const sessions = await h.db.query<{ id: string; e: string }>(
      'SELECT session_id AS id, sum(events) AS e FROM sessions WHERE store_id = {s:String} GROUP BY id',
      { s: STORE },
    );
    expect(Object.fromEntries(sessions.map((r) => [r.id, Number(r.e)]))).toEqual(
      Object.fromEntries([...before, ...during].map((v) => [v[0].session_id, v.length])),
    );
    expect(
      await count(
        'SELECT count() AS n FROM (SELECT DISTINCT session_id, seq FROM sessions WHERE store_id = {s:String})',
      ),
    ).toBe(before.length + during.length);
    // the processor saw the retries and dropped them
    expect((await duplicatesCounted()) - dupBefore).toBeGreaterThanOrEqual(beforeEvents.length);
  });
});
