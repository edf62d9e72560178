// kafkajs 2.2.4 re-arms its request queue's pending check every 1 ms on every open connection, busy or not
// (services/common/kafka/kafkajs/swaps.ts, stopIdlePolling). With the adapter's scheduling, an idle connection arms
// nothing, a pending or throttled request is still checked, and traffic through a real connection works.
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createIdempotentProducer, createKafka, kafkajsIdlePollingStopped } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { startTestBroker, type TestBroker } from '../broker/helpers/broker.ts';

const require = createRequire(import.meta.url);
const queueId = require.resolve('kafkajs/src/network/requestQueue/index.js');

interface Queue {
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  pending: unknown[];
  checkPendingRequests(): void;
  destroy(): void;
}
type QueueClass = new (opts: Record<string, unknown>) => Queue;

const logger = { debug() {}, info() {}, warn() {}, error() {} };
const queue = (Class: QueueClass) =>
  new Class({
    maxInFlightRequests: 5,
    requestTimeout: 1_000,
    enforceRequestTimeout: false,
    clientId: 't',
    broker: 'b:1',
    logger,
  });

describe('kafkajs request-queue polling', () => {
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await startTestBroker();
  });
  afterAll(async () => {
    await broker?.stop();
  });

  it('arms no check while nothing is pending, and checks pending or throttled requests (kafkajs’ own arms one every time)', () => {
    createKafka(broker.brokers, 'idle-test', createLogger('test', 'silent'));
    expect(kafkajsIdlePollingStopped()).toBe(true);
    const Patched = require(queueId) as QueueClass;
    // kafkajs' own class, loaded fresh: the idle loop this replaces
    const cached = require.cache[queueId];
    delete require.cache[queueId];
    const Own = require(queueId) as QueueClass;
    if (cached) require.cache[queueId] = cached;
    expect(Own).not.toBe(Patched);

    // not throttled (the throttle ended this very millisecond), nothing pending: kafkajs arms a check anyway.
    // (Its default throttledUntil of -1 would arm it with a delay of -Date.now(): Node's
    // TimeoutNegativeWarning, which this suite must not print.)
    const now = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(now);
    const own = queue(Own);
    own.throttledUntil = now;
    try {
      own.checkPendingRequests();
    } finally {
      clock.mockRestore();
    }
    expect(own.throttleCheckTimeoutId).not.toBeNull();
    own.destroy();

    const idle = queue(Patched);
    idle.checkPendingRequests();
    expect(idle.throttleCheckTimeoutId).toBeNull();

    const throttled = queue(Patched);
    throttled.throttledUntil = Date.now() + 5_000;
    throttled.checkPendingRequests();
    expect(throttled.throttleCheckTimeoutId).not.toBeNull();
    throttled.destroy();

    const waiting = queue(Patched);
    waiting.throttledUntil = Date.now() + 5_000; // not sendable yet: stays pending
    waiting.pending.push({ correlationId: 1 });
    waiting.throttleCheckTimeoutId = null;
    waiting.checkPendingRequests();
    expect(waiting.pending).toHaveLength(1);
    expect(waiting.throttleCheckTimeoutId).not.toBeNull();
    waiting.destroy();
  });

  it('leaves an idle producer’s connections quiet after real traffic', async () => {
    const kafka = createKafka(broker.brokers, 'idle-test', createLogger('test', 'silent'));
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'idle', numPartitions: 2 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = createIdempotentProducer(kafka);
    await producer.connect();
    const Queue = require(queueId) as { prototype: Queue };
    const check = Queue.prototype.checkPendingRequests;
    let checks = 0;
    Queue.prototype.checkPendingRequests = function (this: Queue) {
      checks++;
      return check.call(this);
    };
    try {
      for (let i = 0; i < 5; i++)
        await producer.send({ topic: 'idle', messages: [{ key: String(i), value: `v${i}` }] });
      expect(checks).toBeGreaterThan(0); // completed requests check the queue
      checks = 0;
      await new Promise((r) => setTimeout(r, 200));
      // kafkajs' own scheduling: ≈ 200 checks per connection in these 200 ms
      expect(checks).toBe(0);
      await producer.send({ topic: 'idle', messages: [{ key: 'after', value: 'idle' }] });
    } finally {
      Queue.prototype.checkPendingRequests = check;
      await producer.disconnect();
    }
  });
});
