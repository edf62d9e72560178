// Crash safety: the broker runs as a child process (main.ts); an idempotent kafkajs producer (acks=-1)
// writes in a loop recording what was acknowledged; the broker is killed with SIGKILL mid-run and
// restarted on the same data dir. Every acknowledged message must be there exactly once, and the
// offsets of every partition contiguous.
import type { ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { afterAll, expect, test } from 'vitest';
import { spawnBroker, testKafka, tmpDir } from './helpers/broker.ts';

const children: ChildProcess[] = [];
let dataDir = '';
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

test('acknowledged messages survive kill -9', { timeout: 90_000 }, async () => {
  dataDir = await tmpDir('broker-crash-');
  const first = await spawnBroker({ BROKER_DATA_DIR: dataDir, BROKER_DEFAULT_PARTITIONS: '3' });
  children.push(first.child);
  const kafka = testKafka([`127.0.0.1:${first.port}`], 'crash', {
    retry: { retries: 2, initialRetryTime: 50, maxRetryTime: 200 },
  });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();

  const acked = new Set<string>();
  let seq = 0;
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      const messages = Array.from({ length: 50 }, () => ({ key: `k${seq % 97}`, value: `m${seq++}` }));
      try {
        await producer.send({ topic: 'crashy', acks: -1, messages });
        for (const m of messages) acked.add(m.value);
      } catch {
        return;
      }
    }
  })();
  await expect
    .poll(() => acked.size, { timeout: 30_000, message: 'some acknowledged messages' })
    .toBeGreaterThanOrEqual(5000);
  first.child.kill('SIGKILL');
  await loop;
  stop = true;
  await producer.disconnect().catch(() => {});
  expect(acked.size).toBeGreaterThan(0);

  const second = await spawnBroker({ BROKER_DATA_DIR: dataDir });
  children.push(second.child);
  const kafka2 = testKafka([`127.0.0.1:${second.port}`], 'crash-check');
  const admin = kafka2.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets('crashy');
  await admin.disconnect();
  const total = ends.reduce((a, p) => a + Number(p.high), 0);
  expect(total).toBeGreaterThanOrEqual(acked.size);

  const consumer = kafka2.consumer({ groupId: 'crash-check' });
  await consumer.connect();
  await consumer.subscribe({ topic: 'crashy', fromBeginning: true });
  const counts = new Map<string, number>();
  const offsetsByPartition = new Map<number, number[]>();
  let n = 0;
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      n++;
      const v = message.value!.toString();
      counts.set(v, (counts.get(v) ?? 0) + 1);
      const list = offsetsByPartition.get(partition) ?? [];
      list.push(Number(message.offset));
      offsetsByPartition.set(partition, list);
    },
  });
  await expect.poll(() => n, { timeout: 30_000, message: 'all stored messages' }).toBeGreaterThanOrEqual(total);
  await consumer.disconnect();

  for (const v of acked) expect(counts.get(v), v).toBe(1);
  for (const [v, c] of counts) expect(c, `duplicate ${v}`).toBe(1);
  for (const p of ends) {
    const list = offsetsByPartition.get(p.partition) ?? [];
    expect(list).toEqual(Array.from({ length: Number(p.high) }, (_, i) => i));
  }

  second.child.kill('SIGTERM');
  const code = await new Promise((r) => second.child.once('exit', r));
  expect(code).toBe(0);
  expect(second.logs.some((l) => l.includes('"msg":"broker stopped"'))).toBe(true);
});
