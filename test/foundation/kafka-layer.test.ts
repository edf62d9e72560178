// The Kafka access layer's two interfaces over the kafkajs adapter, against the embedded broker: a
// ProducerClient resolves once the records are acknowledged and says where they landed; a ConsumerClient
// reads them back per partition in offset order, reports watermarks and commits only what it is told to.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunksByBytes, MAX_REQUEST_BYTES } from '../../services/common/kafka/kafkajs/client.ts';
import {
  createConsumerClient,
  createKafka,
  createProducerClient,
  ensureTopics,
  type Kafka,
  keyHash,
  type SourceMessage,
  topicConfig,
} from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { startTestBroker, type TestBroker } from '../broker/helpers/broker.ts';

const logger = createLogger('kafka-layer-test', 'silent');

describe('Kafka access layer (kafkajs adapter)', () => {
  let broker: TestBroker;
  let kafka: Kafka;
  beforeAll(async () => {
    broker = await startTestBroker();
    kafka = createKafka(broker.brokers, 'layer-test', logger);
  });
  afterAll(async () => {
    await broker?.stop();
  });

  it('sends records adding up to more than a batch may hold (1 MiB) in several requests, in order', async () => {
    const topic = `layer.${process.pid}.big.v1`;
    await ensureTopics(kafka, [{ ...topicConfig('events', topic), partitions: 1 }], logger);
    const producer = createProducerClient(kafka);
    // five 400 KB records for one partition: 2 MB, refused as one batch by a broker's max.message.bytes
    const records = Array.from({ length: 5 }, (_, i) => ({
      topic,
      key: `k${i}`,
      value: Buffer.alloc(400_000, 97 + i),
      partition: 0,
    }));
    expect(chunksByBytes(records, MAX_REQUEST_BYTES).map((c) => c.length)).toEqual([1, 1, 1, 1, 1]);
    const landed = await producer.sendLocated(records);
    expect(landed).toEqual([{ topic, partition: 0, baseOffset: '0' }]);
    await producer.close();
    const consumer = createConsumerClient(kafka, logger, {
      groupId: `layer-big-${process.pid}`,
      topics: [topic],
      fromBeginning: true,
      lingerMs: 50,
    });
    const keys: string[] = [];
    await consumer.start(async (batch) => {
      for (const m of batch.messages) keys.push(String(m.key));
      const last = batch.messages.at(-1);
      if (last) batch.resolve(last.offset);
    });
    try {
      await expect.poll(() => keys.length, { timeout: 20_000 }).toBe(5);
      expect(keys).toEqual(['k0', 'k1', 'k2', 'k3', 'k4']);
    } finally {
      await consumer.stop();
    }
  });

  it('produces with acknowledgement and consumes the same records back, committing only on request', async () => {
    const topic = `layer.${process.pid}.storefront.events.v1`;
    // the events topic's configuration (6 partitions) under a test name
    await ensureTopics(kafka, [topicConfig('events', topic)], logger);

    const producer = createProducerClient(kafka, { keyHashPartitioner: true });
    const records = Array.from({ length: 30 }, (_, i) => {
      const key = `store-1:session-${i % 5}`;
      return { topic, key, value: Buffer.from(`value-${i}`), keyHash: keyHash(Buffer.from(key)) };
    });
    const landed = await producer.sendLocated(records);
    // one batch per partition the five keys hash to, each at offset 0 of a fresh topic
    const partitions = [...new Set(records.map((r) => r.keyHash % 6))].sort();
    expect(landed.map((b) => b.partition).sort()).toEqual(partitions);
    for (const b of landed) expect(b).toMatchObject({ topic, baseOffset: '0' });
    await producer.send([{ topic, key: 'store-1:session-0', value: Buffer.from('value-30'), partition: 0 }]);
    await producer.close();

    const consumer = createConsumerClient(kafka, logger, {
      groupId: `layer-test-${process.pid}`,
      topics: [topic],
      fromBeginning: true,
      lingerMs: 50,
    });
    const seen = new Map<number, SourceMessage[]>();
    let total = 0;
    await consumer.start(async (batch) => {
      const list = seen.get(batch.partition) ?? [];
      list.push(...batch.messages);
      seen.set(batch.partition, list);
      total += batch.messages.length;
      const last = batch.messages.at(-1);
      if (last) {
        batch.resolve(last.offset);
        // commit partition 0 only
        if (batch.partition === 0) await batch.commit(String(BigInt(last.offset) + 1n));
      }
    });
    try {
      await expect.poll(() => total, { timeout: 20_000 }).toBe(31);
      // per partition in offset order, keys where their hash put them
      for (const [partition, messages] of seen) {
        expect(messages.map((m) => Number(m.offset))).toEqual(messages.map((_, i) => i));
        for (const m of messages) {
          if (partition !== 0 || m.value?.toString() !== 'value-30')
            expect(keyHash(m.key as Buffer) % 6, m.key?.toString()).toBe(partition);
        }
      }
      const marks = await consumer.watermarks(topic);
      const highs = await consumer.highWatermarks(topic);
      expect([...marks.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5]);
      for (const [partition, { low, high }] of marks) {
        expect(low).toBe(0n);
        expect(high).toBe(BigInt(seen.get(partition)?.length ?? 0));
        expect(highs.get(partition)).toBe(high);
      }
      await expect
        .poll(async () => (await consumer.committed(topic)).get(0), { timeout: 10_000 })
        .toBe(marks.get(0)?.high);
      const committed = await consumer.committed(topic);
      for (const p of [1, 2, 3, 4, 5]) expect(committed.get(p), `partition ${p}`).toBe(-1n);
    } finally {
      await consumer.stop();
    }
  });
});
