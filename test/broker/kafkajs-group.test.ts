// kafkajs end to end: 50k messages over 6 partitions (idempotent producer, acks=-1), consumed by a
// 3-member group; one member leaves mid-way, the group rebalances, every message is consumed and the
// committed offsets let a new member resume exactly after them. Runs against the embedded broker and
// Apache Kafka 4.4 (test/kafka/targets.ts).
import type { Consumer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { brokerTargets, type RunningBroker } from '../kafka/targets.ts';

const TOTAL = 50_000;
const PARTITIONS = 6;
const TOPIC = 'orders';
const GROUP = 'billing';

describe.each(brokerTargets())('$name', (target) => {
  let broker: RunningBroker;
  beforeAll(async () => {
    broker = await target.start();
  });
  afterAll(async () => {
    await broker?.stop();
  });

  test('50k messages, 3-member group with a member leaving mid-way, offsets resume', { timeout: 90_000 }, async () => {
    const kafka = broker.kafka('group-test');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] });

    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const BATCH = 2000;
    for (let i = 0; i < TOTAL; i += BATCH) {
      const messages = [];
      for (let j = i; j < i + BATCH; j++) messages.push({ key: `k${j}`, value: `v${j}` });
      await producer.send({ topic: TOPIC, acks: -1, messages });
    }
    const produced = await admin.fetchTopicOffsets(TOPIC);
    expect(produced.reduce((a, p) => a + Number(p.high), 0)).toBe(TOTAL);

    const seen = new Map<string, string>();
    let deliveries = 0;
    const consumers: Consumer[] = [];
    for (let c = 0; c < 3; c++) {
      const consumer = kafka.consumer({
        groupId: GROUP,
        heartbeatInterval: 300,
        sessionTimeout: 10_000,
        rebalanceTimeout: 10_000,
      });
      await consumer.connect();
      await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
      await consumer.run({
        eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
          for (const m of batch.messages) {
            seen.set(m.key!.toString(), m.value!.toString());
            deliveries++;
            resolveOffset(m.offset);
          }
          await heartbeat();
        },
      });
      consumers.push(consumer);
    }
    await expect
      .poll(() => seen.size, { timeout: 30_000, message: 'a third of the messages' })
      .toBeGreaterThanOrEqual(TOTAL / 3);
    // one member leaves mid-way; the others take over its partitions after the rebalance
    await consumers.pop()!.disconnect();
    await expect.poll(() => seen.size, { timeout: 45_000, message: 'all messages' }).toBeGreaterThanOrEqual(TOTAL);
    for (const c of consumers) await c.disconnect();

    expect(seen.size).toBe(TOTAL);
    for (let j = 0; j < TOTAL; j++) expect(seen.get(`k${j}`)).toBe(`v${j}`);
    expect(deliveries).toBeGreaterThanOrEqual(TOTAL);

    // committed offsets = end of every partition
    const committed = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] });
    const ends = new Map(produced.map((p) => [p.partition, p.high]));
    for (const p of committed[0].partitions) expect(p.offset).toBe(ends.get(p.partition));

    // a new member of the group resumes at the committed offsets: once it has committed the end of every
    // partition, it has delivered exactly the new messages and nothing old
    const fresh = kafka.consumer({ groupId: GROUP, heartbeatInterval: 300 });
    await fresh.connect();
    await fresh.subscribe({ topic: TOPIC, fromBeginning: true });
    const late: string[] = [];
    await fresh.run({
      eachMessage: async ({ message }) => {
        late.push(message.value!.toString());
      },
    });
    await producer.send({
      topic: TOPIC,
      acks: -1,
      messages: Array.from({ length: 12 }, (_, i) => ({ key: `new${i}`, value: `new${i}` })),
    });
    const committedTotal = async () =>
      (await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] }))[0].partitions.reduce(
        (a, p) => a + Number(p.offset),
        0,
      );
    await expect.poll(committedTotal, { timeout: 15_000, interval: 100 }).toBe(TOTAL + 12);
    expect(late.sort()).toEqual(Array.from({ length: 12 }, (_, i) => `new${i}`).sort());
    await fresh.disconnect();
    await producer.disconnect();
    await admin.disconnect();
  });
});
