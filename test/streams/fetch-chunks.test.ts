// A fetch that brings a few messages from each of several partitions (a trickle of shopper events, spread
// over the partitions by session key) is written as one chunk: one insert per table instead of one per
// table and partition. Such a chunk is journaled in each of its partitions with its messages, so a re-read
// after it was half written rebuilds the very same chunk under the same tokens, whichever way the next
// fetch returns the partitions and whichever group members own them by then.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsProcessor } from '../../streams/events/processor.ts';
import { streamMetrics } from '../../streams/runtime/metrics.ts';
import { ProcessorRunner } from '../../streams/runtime/runtime.ts';
import { liveNamespace } from '../../streams/service.ts';
import { enrichedEvent, produce, type StreamsHarness, startStreamsHarness, waitCaughtUp } from './helpers.ts';

const STORE = 'store-fetch-chunks';
const SESSIONS = 12;

/** two product views in each of SESSIONS sessions (keyed by session: spread over the topic's partitions) */
function views(round: number) {
  const out: { key: string; value: ReturnType<typeof enrichedEvent> }[] = [];
  for (let s = 0; s < SESSIONS; s++)
    for (let k = 0; k < 2; k++)
      out.push({
        key: `${STORE}:s-${s}`,
        value: enrichedEvent({
          event_type: 'product_view',
          store_id: STORE,
          session_id: `s-${s}`,
          timestamp: new Date(Date.now() - 60_000 + round * 5_000 + k).toISOString(),
          product_id: String(100 + ((s + k + round) % 7)),
        }),
      });
  return out;
}

async function metricSum(labels: Record<string, string>): Promise<number> {
  const m = await streamMetrics.writeRetries.get();
  return m.values
    .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
    .reduce((n, v) => n + v.value, 0);
}

describe('a small fetch of several partitions', () => {
  let h: StreamsHarness;
  const group = 'streams.events';
  beforeAll(async () => {
    // a linger long enough for one send of a few dozen events to arrive in one fetch
    h = await startStreamsHarness('fetch-chunks', {
      processors: 'events',
      env: { STREAMS_LINGER_MS: '300', STREAMS_IDLE_FETCH_WAIT_MS: '0' },
    });
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  const num = async (sql: string) => Number((await h.db.query<{ n: string }>(sql, { s: STORE }))[0]?.n ?? 0);
  const counts = async () => ({
    rows: await num('SELECT count() AS n FROM events_raw WHERE store_id = {s:String}'),
    ids: await num('SELECT uniqExact(event_id) AS n FROM events_raw WHERE store_id = {s:String}'),
    // fed by events_raw's materialized view: a block written twice would count twice
    views: await num('SELECT sum(views) AS n FROM product_daily_engagement WHERE store_id = {s:String}'),
    sessionEvents: await num('SELECT sum(events) AS n FROM sessions WHERE store_id = {s:String}'),
  });
  const exactly = (n: number) => ({ rows: n, ids: n, views: n, sessionEvents: n });

  it('is written as one chunk: fewer chunks than partitions, every event once', { timeout: 60_000 }, async () => {
    const runner = h.streams.runners.get('events') as ProcessorRunner<unknown>;
    const chunksBefore = runner.stats.chunks;
    const sent = views(0);
    await produce(h.infra, 'events', sent);
    await waitCaughtUp(h.infra.kafka, [{ group, topic: h.infra.topic('events') }], 40_000);
    const partitions = await num('SELECT uniqExact(_partition) AS n FROM events_raw WHERE store_id = {s:String}');
    expect(partitions).toBeGreaterThanOrEqual(3);
    expect(runner.stats.chunks - chunksBefore).toBeLessThan(partitions);
    expect(await counts()).toEqual(exactly(sent.length));
  });

  it('half written when its consumer stopped, is rebuilt whole by the members that own its partitions next', {
    timeout: 120_000,
  }, async () => {
    const topic = h.infra.topic('events');
    let sent = (await counts()).rows;
    // the chunk's second table refuses inserts: events_raw (and its views) are written, then the write of
    // `sessions` is retried until the runner is stopped, which abandons the chunk uncommitted
    await h.db.command('ALTER TABLE sessions ADD CONSTRAINT fault_injected_refuse_inserts CHECK 0');
    const retries = await metricSum({ processor: 'events' });
    const round1 = views(1);
    await produce(h.infra, 'events', round1);
    sent += round1.length;
    await expect.poll(() => metricSum({ processor: 'events' }), { timeout: 30_000 }).toBeGreaterThan(retries);
    expect((await counts()).rows).toBe(sent);
    await h.streams.runners.get('events')?.stop();

    // more messages behind it in the same partitions: a re-read fetch holds more than the chunk did, and
    // two members now share the partitions (each owning some of the chunk's)
    const round2 = views(2);
    await produce(h.infra, 'events', round2);
    sent += round2.length;
    await h.db.command('ALTER TABLE sessions DROP CONSTRAINT fault_injected_refuse_inserts');
    const member = async () =>
      new ProcessorRunner(eventsProcessor, h.streams.deps, {
        ...h.streams.runOptions(),
        stateNamespace: await liveNamespace(h.redis, 'events'),
      });
    const members = [await member(), await member()];
    try {
      await Promise.all(members.map((m) => m.start()));
      await waitCaughtUp(h.infra.kafka, [{ group, topic }], 60_000);
      // both members committed partitions of their own
      for (const m of members) expect(m.positions.size).toBeGreaterThan(0);
      expect(await counts()).toEqual(exactly(sent));
    } finally {
      await Promise.all(members.map((m) => m.stop()));
    }
  });
});
