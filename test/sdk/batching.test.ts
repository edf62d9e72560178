// The tracker's batches against the real beacon (its plugin in an app of its own, with a broker and Redis
// of this suite): more than 100 queued events go out as several POST /beacon batches of at most 100 —
// the beacon refuses a larger one with 422, which the tracker would drop as undeliverable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTracker } from '../../services/sdk/index.ts';
import {
  type BeaconApp,
  type RedisServer,
  startBeaconApp,
  startRedis,
  startTestBroker,
  type TestBroker,
} from '../beacon/helpers.ts';

const TOKEN = 'tok-sdk-batching-0123456789';
const SLOW = { timeout: 30_000, interval: 100 };

let redis: RedisServer;
let broker: TestBroker;
let app: BeaconApp;

beforeAll(async () => {
  redis = await startRedis();
  broker = await startTestBroker();
  app = await startBeaconApp({
    brokers: broker.brokers,
    redisUrl: redis.url,
    stores: [{ storeId: 'store-sdk-batching', token: TOKEN }],
  });
});
afterAll(async () => {
  await app?.close();
  await broker?.stop();
  await redis?.stop();
});

describe('tracker batches', () => {
  it('sends 250 queued events as batches of at most 100, each stored (201), none twice', async () => {
    const sent: { ids: string[]; status: number; accepted: number; duplicates: number }[] = [];
    const tracker = createTracker({
      token: TOKEN,
      baseUrl: app.url,
      flushDelayMs: 50,
      // the real fetch, recording each batch and the beacon's answer
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        const body = JSON.parse(String(init?.body)) as { events: { event_id: string }[] };
        const answer = (await res.clone().json()) as { accepted?: number; duplicates?: number };
        sent.push({
          ids: body.events.map((e) => e.event_id),
          status: res.status,
          accepted: answer.accepted ?? 0,
          duplicates: answer.duplicates ?? 0,
        });
        return res;
      },
    });
    const tracked = Array.from(
      { length: 250 },
      (_, i) => tracker.track('collection_view', { collection_handle: `c-${i % 5}` }).event_id,
    );
    await expect.poll(() => tracker.pending(), SLOW).toBe(0);

    expect(sent.length).toBeGreaterThanOrEqual(3);
    for (const b of sent) {
      expect(b.ids.length).toBeGreaterThan(0);
      expect(b.ids.length).toBeLessThanOrEqual(100);
      expect(b.status).toBe(201);
    }
    // every event in exactly one batch (two batches may be in flight at once: compared sorted, ULIDs sort
    // in the order tracked), all accepted the first time
    expect(sent.flatMap((b) => b.ids).sort()).toEqual(tracked);
    expect(sent.reduce((n, b) => n + b.accepted, 0)).toBe(250);
    expect(sent.reduce((n, b) => n + b.duplicates, 0)).toBe(0);
  });
});
