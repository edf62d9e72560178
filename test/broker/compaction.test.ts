// Compaction through the wire: a cleanup.policy=compact topic with tiny segments; updates and
// tombstones are produced, maintenance runs, and a consumer reading from the beginning sees exactly
// the latest value of every live key and nothing of the tombstoned keys.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestBroker, type TestBroker } from './helpers/broker.ts';

let broker: TestBroker;
beforeAll(async () => {
  broker = await startTestBroker({ maintenanceIntervalMs: 200 });
});
afterAll(async () => {
  await broker?.stop();
});

test('latest value per key survives, tombstoned keys disappear', { timeout: 60_000 }, async () => {
  const kafka = broker.kafka('compaction');
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      {
        topic: 'profiles',
        numPartitions: 1,
        configEntries: [
          { name: 'cleanup.policy', value: 'compact' },
          { name: 'segment.bytes', value: '2048' },
          { name: 'delete.retention.ms', value: '0' },
          { name: 'min.compaction.lag.ms', value: '0' },
        ],
      },
    ],
  });
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  const KEYS = 40;
  const ROUNDS = 8;
  const latest = new Map<string, string>();
  let produced = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < KEYS; k += 10) {
      const messages = Array.from({ length: 10 }, (_, i) => ({
        key: `user-${k + i}`,
        value: `r${round}-${'p'.repeat(20)}`,
      }));
      await producer.send({ topic: 'profiles', acks: -1, messages });
      for (const m of messages) latest.set(m.key, m.value);
      produced += messages.length;
    }
  }
  const tombstoned = Array.from({ length: 10 }, (_, i) => `user-${i * 4}`);
  await producer.send({ topic: 'profiles', acks: -1, messages: tombstoned.map((key) => ({ key, value: null })) });
  for (const k of tombstoned) latest.delete(k);
  produced += tombstoned.length;
  // fillers roll the segment so everything above sits in closed (compactable) segments
  for (let i = 0; i < 6; i++) {
    await producer.send({ topic: 'profiles', acks: -1, messages: [{ key: `filler-${i}`, value: 'f'.repeat(900) }] });
    latest.set(`filler-${i}`, 'f'.repeat(900));
    produced++;
  }
  await producer.disconnect();

  // the timer runs every 200 ms; also run it explicitly (twice: tombstones go in a later pass)
  await broker.runMaintenance();
  await broker.runMaintenance();

  const consumer = kafka.consumer({ groupId: 'compaction-reader' });
  await consumer.connect();
  await consumer.subscribe({ topic: 'profiles', fromBeginning: true });
  const records: { key: string; value: string | null }[] = [];
  const hw = Number((await admin.fetchTopicOffsets('profiles'))[0].high);
  let lastOffset = -1;
  await consumer.run({
    eachMessage: async ({ message }) => {
      records.push({ key: message.key!.toString(), value: message.value ? message.value.toString() : null });
      lastOffset = Number(message.offset);
    },
  });
  await expect
    .poll(() => lastOffset, { timeout: 20_000, message: 'end of the compacted topic' })
    .toBeGreaterThanOrEqual(hw - 1);
  await consumer.disconnect();
  await admin.disconnect();

  expect(hw).toBe(produced); // offsets are never reused
  expect(records.length).toBeLessThan(produced); // compaction removed something
  const view = new Map<string, string | null>();
  for (const r of records) view.set(r.key, r.value);
  for (const k of tombstoned)
    expect(
      records.some((r) => r.key === k),
      `tombstoned ${k}`,
    ).toBe(false);
  expect(new Map([...view].filter(([, v]) => v !== null))).toEqual(latest);
  // every non-filler key appears once: only its latest record is left
  const perKey = new Map<string, number>();
  for (const r of records) perKey.set(r.key, (perKey.get(r.key) ?? 0) + 1);
  for (const [k, c] of perKey) if (!k.startsWith('filler')) expect(c, k).toBe(1);
});
