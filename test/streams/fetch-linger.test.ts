// A `batched` processor's fetch waits out STREAMS_BATCHED_LINGER_MS, a fresh one only STREAMS_LINGER_MS:
// the same trickle of messages (one every 10 ms into one partition) reaches ClickHouse in a chunk or two
// for the request events (one insert per table each, whatever its size) and in many for the engagement
// events, and both arrive whole. Each processor's dedup claims live for its own horizon.
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../../services/common/metrics.ts';
import { bucketClaims, bucketKey, scopeBuckets } from '../../streams/runtime/claims.ts';
import {
  enrichedEvent,
  produce,
  searchRequest,
  type StreamsHarness,
  startStreamsHarness,
  waitCaughtUp,
} from './helpers.ts';

async function chunks(processor: string): Promise<number> {
  const m = await registry.getSingleMetric('stream_batch_messages')?.get();
  const count = m?.values.find(
    (v) =>
      (v as { metricName?: string }).metricName === 'stream_batch_messages_count' &&
      v.labels.processor === processor &&
      v.labels.mode === 'live',
  );
  return count?.value ?? 0;
}

describe('fetch linger per processor', () => {
  let h: StreamsHarness;
  beforeAll(async () => {
    h = await startStreamsHarness('fetch-linger', {
      processors: 'events,requests',
      env: { STREAMS_LINGER_MS: '20', STREAMS_BATCHED_LINGER_MS: '1500' },
    });
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
  });

  it('gathers a trickle of request events into one or two chunks, engagement events into many; each keeps its claims for its horizon', async () => {
    const store = `linger-${newUlid().toLowerCase()}`;
    const session = 'one-session'; // one key: one partition each
    const at = new Date().toISOString();
    const before = { requests: await chunks('requests'), events: await chunks('events') };
    for (let i = 0; i < 40; i++) {
      await produce(h.infra, 'requests', [
        {
          key: `${store}:${session}`,
          value: searchRequest({ store_id: store, query: `q${i}`, session_id: session, country: 'US', at }),
        },
      ]);
      await produce(h.infra, 'events', [
        {
          key: `${store}:${session}`,
          value: enrichedEvent({
            event_type: 'product_view',
            store_id: store,
            session_id: session,
            timestamp: at,
            product_id: String(i + 1),
          }),
        },
      ]);
      await new Promise((r) => setTimeout(r, 10));
    }
    const groups = ['requests', 'events'].map((p) => ({ group: `streams.${p}`, topic: h.infra.topic(p as 'events') }));
    await waitCaughtUp(h.infra.kafka, groups, 30_000);
    const rows = await h.db.query<{ r: number; e: number }>(
      `SELECT (SELECT count() FROM requests_raw WHERE store_id = {s:String}) AS r,
              (SELECT count() FROM events_raw WHERE store_id = {s:String}) AS e`,
      { s: store },
    );
    expect(rows[0]).toEqual({ r: 40, e: 40 });
    const requestChunks = (await chunks('requests')) - before.requests;
    const eventChunks = (await chunks('events')) - before.events;
    expect(requestChunks).toBeGreaterThanOrEqual(1);
    expect(requestChunks).toBeLessThanOrEqual(2);
    expect(eventChunks).toBeGreaterThanOrEqual(4);

    // the request ids' claims are held for the requests processor's own horizon (1 h: its ids are the
    // read API's), the event ids' for STREAMS_DEDUP_HORIZON_HOURS (72 h)
    const ttlHours = async (topic: string) => {
      const [n] = await scopeBuckets(h.redis, topic, store);
      expect(Object.keys((await bucketClaims(h.redis, topic, store, n)).claims)).toHaveLength(40);
      return (await h.redis.pttl(bucketKey(topic, store, n))) / 3_600_000;
    };
    const requestsTtl = await ttlHours(h.infra.topic('requests'));
    expect(requestsTtl).toBeGreaterThan(0);
    expect(requestsTtl).toBeLessThanOrEqual(1.5);
    expect(await ttlHours(h.infra.topic('events'))).toBeGreaterThan(71.9);
  });
});
