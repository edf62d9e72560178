// The request-event emitter: fire-and-forget into a bounded buffer, batches into Kafka, drops counted,
// never throws — whether Kafka is up, down, or the event cannot be encoded.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { requestEventAvro } from '../../schemas/avro/index.ts';
import { createValueCodec } from '../../services/common/kafka/codec.ts';
import { type RequestEvent, requestEvent } from '../../schemas/requests.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { createKafka, ensureTopics, topicConfig } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { registry } from '../../services/common/metrics.ts';
import { createRequestEventEmitter } from '../../services/storefront/request-events.ts';
import { eventId, memoryRegistry, readTopic, startTestBroker, type TestBroker } from './helpers.ts';

const logger = createLogger('request-events-test', process.env.LOG_LEVEL ?? 'silent');

async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = registry.getSingleMetric(name);
  if (!m) return 0;
  const { values } = await m.get();
  return values
    .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
    .reduce((n, v) => n + v.value, 0);
}

function sample(i: number): RequestEvent {
  return requestEvent({
    request_id: eventId(),
    store_id: 'store-req',
    kind: 'search',
    occurred_at: new Date().toISOString(),
    device_type: 'mobile',
    status_code: 200,
    latency_ms: 3.5,
    session_id: `s-${i % 3}`,
    query: `shoes ${i}`,
    result_product_ids: ['1', '2'],
  });
}

describe('request-event emitter', () => {
  let broker: TestBroker;
  const topic = `req-test-${process.pid}.${TOPICS.requests.name}`;
  const codec = createValueCodec({ registryUrl: '', registry: memoryRegistry() });

  beforeAll(async () => {
    broker = await startTestBroker();
    await codec.register(topic, requestEventAvro);
  });
  afterAll(async () => {
    await broker?.stop();
  });

  it('delivers emitted events in batches, keyed by store and session', async () => {
    const kafka = createKafka(broker.brokers, 'req-test', logger);
    await ensureTopics(kafka, [topicConfig('requests', topic)], logger);
    const emitter = createRequestEventEmitter<RequestEvent>({
      kafka,
      codec,
      topic,
      logger,
      maxBuffer: 1000,
      lingerMs: 5,
    });
    const before = await metric('request_events_emitted_total');
    // an event the codec rejects is dropped and counted, not thrown
    const encodeBefore = await metric('request_events_dropped_total', { reason: 'encode_error' });
    expect(() => emitter.emit({ nonsense: true } as unknown as RequestEvent)).not.toThrow();
    expect((await metric('request_events_dropped_total', { reason: 'encode_error' })) - encodeBefore).toBe(1);
    const sent = Array.from({ length: 25 }, (_, i) => sample(i));
    for (const e of sent) emitter.emit(e);
    await emitter.close();
    expect((await metric('request_events_emitted_total')) - before).toBe(25);

    const records = await readTopic(kafka, topic, { count: 25 });
    expect(records).toHaveLength(25);
    const got = await Promise.all(
      records.map(async (r) => ({ key: r.key, value: (await codec.decode<RequestEvent>(r.value, topic)).value })),
    );
    const byId = new Map(got.map((g) => [g.value.request_id, g]));
    for (const e of sent) {
      const g = byId.get(e.request_id);
      expect(g?.value).toEqual(e);
      expect(g?.key).toBe(`store-req:${e.session_id}`);
    }
  });

  it('sends the events of one time window to one partition and the next window to the next', async () => {
    const kafka = createKafka(broker.brokers, 'req-test-window', logger);
    const windowTopic = `req-window-${process.pid}.${TOPICS.requests.name}`;
    await codec.register(windowTopic, requestEventAvro);
    await ensureTopics(kafka, [topicConfig('requests', windowTopic)], logger);
    let clock = 5_000_000;
    const emitter = createRequestEventEmitter<RequestEvent>({
      kafka,
      codec,
      topic: windowTopic,
      logger,
      lingerMs: 5,
      partitionWindowMs: 1_000,
      now: () => clock,
    });
    const sessionsOf = (w: number) => Array.from({ length: 12 }, (_, i) => sample(w * 100 + i));
    const windows = [sessionsOf(0), sessionsOf(1), sessionsOf(2)];
    for (const events of windows) {
      for (const e of events) emitter.emit(e);
      await vi.waitFor(() => expect(emitter.buffered).toBe(0));
      clock += 1_000;
    }
    await emitter.close();
    const records = await readTopic(kafka, windowTopic, { count: 36 });
    const partitionOf = new Map<string, number>();
    for (const r of records)
      partitionOf.set((await codec.decode<RequestEvent>(r.value, windowTopic)).value.request_id, r.partition);
    const used = windows.map((events) => new Set(events.map((e) => partitionOf.get(e.request_id))));
    // each window's events (three sessions, keys that hash to different partitions) share one partition …
    for (const u of used) expect(u.size).toBe(1);
    // … and consecutive windows take consecutive partitions
    const [a, b, c] = used.map((u) => [...u][0] as number);
    const n = TOPICS.requests.partitions;
    expect(b).toBe((a + 1) % n);
    expect(c).toBe((a + 2) % n);
  });

  it('never throws or blocks when Kafka is unreachable: the buffer is bounded and drops are counted', async () => {
    const kafka = createKafka(['127.0.0.1:1'], 'req-test-down', logger, {
      retry: { retries: 1, initialRetryTime: 50, maxRetryTime: 100 },
    });
    const emitter = createRequestEventEmitter<RequestEvent>({
      kafka,
      codec,
      topic,
      logger,
      maxBuffer: 10,
      batchSize: 5,
      lingerMs: 1,
    });
    const droppedBefore = await metric('request_events_dropped_total', { reason: 'buffer_full' });
    const t0 = performance.now();
    for (let i = 0; i < 50; i++) expect(() => emitter.emit(sample(i))).not.toThrow();
    const elapsed = performance.now() - t0;
    expect(emitter.buffered).toBeLessThanOrEqual(10);
    expect(
      (await metric('request_events_dropped_total', { reason: 'buffer_full' })) - droppedBefore,
    ).toBeGreaterThanOrEqual(40);
    expect(elapsed).toBeLessThan(1_000); // emit is synchronous work only (not a performance figure)

    // the failed produce attempts are counted, and close gives up after its timeout, counting what it drops
    const shutdownBefore = await metric('request_events_dropped_total', { reason: 'shutdown' });
    await emitter.close(500);
    expect(await metric('request_events_failed_total')).toBeGreaterThan(0);
    expect((await metric('request_events_dropped_total', { reason: 'shutdown' })) - shutdownBefore).toBeGreaterThan(0);
    expect(emitter.buffered).toBe(0);
    expect(() => emitter.emit(sample(99))).not.toThrow();
  });
});
