// An idle consumer long-polls (services/common/kafka/kafkajs/swaps.ts, `setIdleFetchWait`): after a fetch
// that found nothing, the next waits up to the idle wait for the first message instead of returning after
// the linger, so an idle topic costs a fetch per idle wait, not per linger; a message appended meanwhile
// is delivered at once, and a busy topic's fetches still linger to gather batches. Real kafkajs consumers
// against the embedded broker, counted by kafkajs' own FETCH instrumentation events.
import type { Consumer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setIdleFetchWait } from '../../services/common/kafka/index.ts';
import { startTestBroker, type TestBroker } from '../broker/helpers/broker.ts';

const LINGER_MS = 50;
const IDLE_WAIT_MS = 1_000;

describe('idle consumers long-poll', () => {
  let broker: TestBroker;
  const consumers: Consumer[] = [];
  beforeAll(async () => {
    broker = await startTestBroker();
    const admin = broker.kafka('idle-admin').admin();
    await admin.connect();
    await admin.createTopics({
      topics: [
        { topic: 'quiet', numPartitions: 1 },
        { topic: 'busy', numPartitions: 1 },
      ],
    });
    await admin.disconnect();
  });
  afterAll(async () => {
    for (const c of consumers) await c.disconnect().catch(() => {});
    await broker?.stop();
  });

  /** a consumer of `topic` lingering LINGER_MS for 64 KiB, with its fetches counted and its messages timed */
  async function consume(topic: string, groupId: string, idleWaitMs: number | undefined) {
    setIdleFetchWait(groupId, idleWaitMs);
    const consumer = broker
      .kafka(groupId)
      .consumer({ groupId, maxWaitTimeInMs: LINGER_MS, minBytes: 64 * 1024, heartbeatInterval: 500 });
    consumers.push(consumer);
    const seen = { fetches: 0, batches: [] as number[], arrivals: new Map<string, number>() };
    consumer.on(consumer.events.FETCH, () => {
      seen.fetches++;
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let ready!: () => void;
    const joined = new Promise<void>((r) => {
      ready = r;
    });
    consumer.on(consumer.events.GROUP_JOIN, () => ready());
    await consumer.run({
      eachBatch: async ({ batch }) => {
        if (batch.messages.length > 0) seen.batches.push(batch.messages.length);
        for (const m of batch.messages) seen.arrivals.set(String(m.value), performance.now());
      },
    });
    await joined;
    return seen;
  }

  it('costs one fetch per idle wait on a quiet topic and delivers the first message at once', async () => {
    const polling = await consume('quiet', 'quiet-polling', undefined);
    const longPolling = await consume('quiet', 'quiet-long', IDLE_WAIT_MS);
    await new Promise((r) => setTimeout(r, 500)); // both past their first (empty) fetch
    const before = { polling: polling.fetches, long: longPolling.fetches };
    await new Promise((r) => setTimeout(r, 3_000));
    const polled = polling.fetches - before.polling;
    const longPolled = longPolling.fetches - before.long;
    // 3 s at a 50 ms linger: tens of fetches; at a 1 s idle wait: three or four
    expect(polled).toBeGreaterThan(20);
    expect(longPolled).toBeGreaterThanOrEqual(2);
    expect(longPolled).toBeLessThanOrEqual(4);

    // a message appended while the long poll waits is delivered at once, not after the idle wait
    const producer = broker.kafka('quiet-producer').producer();
    await producer.connect();
    const sentAt = performance.now();
    await producer.send({ topic: 'quiet', acks: -1, messages: [{ value: 'first' }] });
    await expect.poll(() => longPolling.arrivals.get('first'), { timeout: 5_000, interval: 10 }).toBeDefined();
    const delay = (longPolling.arrivals.get('first') ?? 0) - sentAt;
    expect(delay).toBeLessThan(IDLE_WAIT_MS / 2);
    await producer.disconnect();
  });

  it('still lingers to gather batches while messages keep coming', async () => {
    const seen = await consume('busy', 'busy-long', IDLE_WAIT_MS);
    await new Promise((r) => setTimeout(r, 1_500)); // idle first: its fetches long-poll by now
    const producer = broker.kafka('busy-producer').producer();
    await producer.connect();
    const total = 150;
    for (let i = 0; i < total; i++) {
      await producer.send({ topic: 'busy', acks: -1, messages: [{ value: `m${i}` }] });
      await new Promise((r) => setTimeout(r, 5));
    }
    await expect.poll(() => seen.arrivals.size, { timeout: 10_000 }).toBe(total);
    await producer.disconnect();
    // one message per fetch would mean the fetches kept long-polling (minBytes 1) once data flowed; at a 50 ms
    // linger and a message every 5–10 ms most batches hold several (the first, which ends the long poll, one)
    expect(seen.batches.reduce((a, b) => a + b, 0)).toBe(total);
    expect(seen.batches.length).toBeLessThan(total / 3);
  });
});
