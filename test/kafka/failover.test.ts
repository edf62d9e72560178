// A 3-node Apache Kafka cluster (replication factor 3, min.insync.replicas=2) loses a node mid-stream: an
// idempotent acks=all producer keeps sending through the leader elections, and a consumer afterwards finds
// every acknowledged message exactly once (read to the end by kcat); the remaining two nodes carry the
// partitions (ISR of two).
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { testKafka } from '../broker/helpers/broker.ts';
import { startTestKafka, type TestKafka } from './helpers.ts';

const TOPIC = 'failover';
const BATCHES = 120;
const PER_BATCH = 100;

let kafka: TestKafka;
beforeAll(async () => {
  kafka = await startTestKafka(3);
}, 180_000);
afterAll(async () => {
  await kafka?.close();
}, 60_000);

test('SIGKILL of one of three nodes mid-stream: nothing acknowledged is lost or doubled', {
  timeout: 180_000,
}, async () => {
  const client = testKafka(kafka.brokers, 'failover', {
    retry: { retries: 12, initialRetryTime: 100, maxRetryTime: 2_000 },
    requestTimeout: 10_000,
  });
  const admin = client.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: false, topics: [{ topic: TOPIC, numPartitions: 3 }] });
  await expect
    .poll(async () => {
      const m = await admin.fetchTopicMetadata({ topics: [TOPIC] }).catch(() => undefined);
      return m?.topics[0].partitions.filter((p) => p.leader >= 0 && p.isr.length === 3).length;
    })
    .toBe(3);

  const producer = client.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const acked = new Set<string>();
  let failed = 0;
  let ackedAfterKill = 0;
  for (let b = 0; b < BATCHES; b++) {
    if (b === BATCHES / 3) kafka.children[1].kill('SIGKILL'); // node 2, leader of some partitions
    const messages = Array.from({ length: PER_BATCH }, (_, i) => ({ key: `m${b * PER_BATCH + i}`, value: `${b}` }));
    try {
      const acks = await producer.send({ topic: TOPIC, acks: -1, messages });
      // every partition the batch went to answered (kafkajs 2.2.4's own retry could drop one: send-messages.ts)
      expect(new Set(acks.map((a) => a.partition)).size).toBe(3);
      for (const m of messages) acked.add(m.key);
      if (b >= BATCHES / 3) ackedAfterKill++;
    } catch (err) {
      if ((err as Error).name === 'AssertionError') throw err;
      failed++;
    }
  }
  await producer.disconnect();
  // sends after the kill were acknowledged (two in-sync copies left, min.insync.replicas=2)
  expect(ackedAfterKill).toBeGreaterThan(BATCHES / 3);
  expect(acked.size).toBe((BATCHES - failed) * PER_BATCH);

  // the dead node leaves the cluster's metadata (fenced after broker.session.timeout.ms)
  await expect.poll(async () => (await admin.describeCluster()).brokers.length, { timeout: 30_000 }).toBe(2);
  // the two live nodes lead every partition, each with an ISR of two
  const meta = await admin.fetchTopicMetadata({ topics: [TOPIC] });
  for (const p of meta.topics[0].partitions) {
    expect(p.leader).not.toBe(2);
    expect([...p.isr].sort()).toEqual([1, 3]);
  }
  await admin.disconnect();

  // everything in the log, read to its end by librdkafka (kcat -e)
  const out = execFileSync('kcat', ['-C', '-b', kafka.brokers[0], '-t', TOPIC, '-e', '-q', '-f', '%k\n'], {
    maxBuffer: 64 * 1024 * 1024,
    timeout: 60_000,
  }).toString();
  const seen = new Map<string, number>();
  for (const k of out.split('\n').filter(Boolean)) seen.set(k, (seen.get(k) ?? 0) + 1);
  expect([...seen.values()].filter((n) => n > 1)).toEqual([]);
  expect([...acked].filter((k) => !seen.has(k))).toEqual([]);
});
