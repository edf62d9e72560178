// A processor's consumer crashing several times in quick succession (as around a broker restart: the fetch
// loop fails, and a batch of the stopped consumer fails late, after its replacement started). kafkajs'
// own restart armed one timer per crash and each built a new runner on the same consumer: one process
// ended up with two members in the group, one of them holding partitions it never fetched, while
// stream_consumer_lag (set only after this member's commits) showed 0. The consumer client now replaces a
// crashed consumer itself, once; the lag gauge covers every partition from the broker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsumerClient, ConsumerClientFactory, SourceBatch } from '../../services/common/kafka/client.ts';
import { streamMetrics } from '../../streams/runtime/metrics.ts';
import { enrichedEvent, produce, type StreamsHarness, startStreamsHarness, waitCaughtUp } from './helpers.ts';

const STORE = 'store-consumer-crashes';
const GROUP = 'streams.events';

/** an error kafkajs treats like a lost broker connection: not retried in place, but the consumer restarts */
function connectionLost(): Error {
  const cause = Object.assign(new Error('Connection error: connect ECONNREFUSED (injected)'), { retriable: true });
  return Object.assign(new Error('Connection error: connect ECONNREFUSED (injected)'), { retriable: false, cause });
}

interface Faults {
  /** batches still to fail at once (each crashes the consumer) */
  crashes: number;
  /** a batch held until released, then failing: the late error of a consumer already replaced */
  holdOne: boolean;
  held: (() => void) | undefined;
  /** a partition whose batches wait (heartbeating) until `stall` is undefined */
  stall: number | undefined;
}

function faulty(real: ConsumerClientFactory, faults: Faults): ConsumerClientFactory {
  return (opts) => {
    // several partitions at once, so one batch can be in flight while another one crashes the consumer
    const client = real({ ...opts, partitionsConsumedConcurrently: 3 });
    const fault = async (batch: SourceBatch) => {
      if (faults.holdOne) {
        faults.holdOne = false;
        await new Promise<void>((r) => {
          faults.held = r;
        });
        throw connectionLost();
      }
      if (faults.crashes > 0) {
        faults.crashes--;
        throw connectionLost();
      }
      while (faults.stall === batch.partition && batch.isActive()) {
        await batch.heartbeat();
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    const wrapped: ConsumerClient = {
      start: (onBatch) =>
        client.start(async (batch: SourceBatch) => {
          await fault(batch);
          await onBatch(batch);
        }),
      // one batch at a time, three partitions at once (so one batch can be held while others crash the
      // consumer): each is handed to the runtime as a fetch of its own
      startFetches: (onFetch) =>
        client.start(async (batch: SourceBatch) => {
          await fault(batch);
          await onFetch([batch]);
        }),
      stop: () => client.stop(),
      pause: () => client.pause(),
      resume: () => client.resume(),
      committed: (topic) => client.committed(topic),
      highWatermarks: (topic) => client.highWatermarks(topic),
      watermarks: (topic) => client.watermarks(topic),
    };
    return wrapped;
  };
}

/** one event per session; sessions spread over the topic's partitions */
function events(round: number, n: number) {
  const ts = new Date(Date.now() - 60_000).toISOString();
  return Array.from({ length: n }, (_, i) => ({
    key: `${STORE}:s-${round}-${i}`,
    value: enrichedEvent({
      event_type: 'product_view',
      store_id: STORE,
      session_id: `s-${round}-${i}`,
      timestamp: ts,
      product_id: String(100 + (i % 7)),
    }),
  }));
}

describe('a processor consumer crashing repeatedly', () => {
  let h: StreamsHarness;
  beforeAll(async () => {
    h = await startStreamsHarness('consumer-crashes', {
      processors: 'events',
      env: { STREAMS_MAX_BATCH_MESSAGES: '20', STREAMS_LINGER_MS: '20' },
    });
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  const members = async () => {
    const admin = h.infra.kafka.admin();
    await admin.connect();
    try {
      const g = (await admin.describeGroups([GROUP])).groups[0];
      return { state: g?.state, members: g?.members.length ?? 0 };
    } finally {
      await admin.disconnect();
    }
  };
  const rows = async () =>
    Number(
      (
        await h.db.query<{ n: string }>('SELECT count() AS n FROM events_raw WHERE store_id = {s:String}', {
          s: STORE,
        })
      )[0]?.n ?? 0,
    );
  const lagOf = async (topic: string) => {
    const out = new Map<number, number>();
    for (const v of (await streamMetrics.lag.get()).values)
      if (v.labels.processor === 'events' && v.labels.topic === topic) out.set(Number(v.labels.partition), v.value);
    return out;
  };

  it('keeps one group member and consumes every partition to the end after crashes in quick succession', {
    timeout: 180_000,
  }, async () => {
    const topic = h.infra.topic('events');
    const faults: Faults = { crashes: 0, holdOne: true, held: undefined, stall: undefined };
    const real = h.streams.deps.createClient;
    h.streams.deps.createClient = faulty(real, faults);
    await h.streams.restart('events');

    // a first batch is held in flight; the next ones crash the consumer twice, one right after the other
    let sent = 0;
    await produce(h.infra, 'events', events(0, 60));
    sent += 60;
    await expect.poll(() => faults.held !== undefined, { timeout: 30_000 }).toBe(true);
    faults.crashes = 2;
    await produce(h.infra, 'events', events(1, 60));
    sent += 60;
    await expect.poll(() => faults.crashes, { timeout: 30_000 }).toBe(0);
    // the held batch of the crashed consumer fails now, after its replacement started
    faults.held?.();

    await produce(h.infra, 'events', events(2, 60));
    sent += 60;
    await waitCaughtUp(h.infra.kafka, [{ group: GROUP, topic }], 90_000);
    expect(await rows()).toBe(sent);
    await expect
      .poll(members, { timeout: 30_000, message: 'one consumer, one member of streams.events' })
      .toEqual({ state: 'Stable', members: 1 });

    // a partition not consumed shows its backlog in stream_consumer_lag
    faults.stall = 0;
    const batch = events(3, 120);
    await produce(h.infra, 'events', batch);
    sent += 120;
    const high = await h.streams.runners.get('events')?.highWatermarks();
    const committed = await h.streams.runners.get('events')?.committed();
    await expect
      .poll(async () => (await lagOf(topic)).get(0) ?? 0, { timeout: 30_000, message: 'lag of the stalled partition' })
      .toBeGreaterThan(0);
    expect((high?.get(0) ?? 0n) > (committed?.get(0) ?? 0n)).toBe(true);
    faults.stall = undefined;
    await waitCaughtUp(h.infra.kafka, [{ group: GROUP, topic }], 90_000);
    expect(await rows()).toBe(sent);
    await expect
      .poll(async () => [...(await lagOf(topic)).values()].every((v) => v === 0), { timeout: 30_000 })
      .toBe(true);
    expect((await lagOf(topic)).size).toBe(6);
    h.streams.deps.createClient = real;
  });
});
