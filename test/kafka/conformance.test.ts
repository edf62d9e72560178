// The embedded broker and Apache Kafka 4.4 (one KRaft node each, test/kafka/targets.ts) in the same run:
// - Apache Kafka's own Java client (kafka-clients 4.4, from the same Maven fetch as the broker): admin, an
//   idempotent acks=all producer, a group consumer with committed offsets (java/JavaClient.java), and
//   records crossing between it and kafkajs both ways;
// - the behaviours where the two differ, pinned per broker as docs/broker.md lists them ("Differences").
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ensureKafka, javaBin, kafkaCacheDir } from '../../deploy/kafka/fetch.ts';
import { testKafka } from '../broker/helpers/broker.ts';
import { brokerTargets, type RunningBroker } from './targets.ts';

const SOURCE = path.join(import.meta.dirname, 'java/JavaClient.java');
const LOG4J = path.resolve(import.meta.dirname, '../../deploy/kafka/log4j2.properties');

/** javac once per source version, into the Kafka cache directory */
function compile(): string {
  const { classPath } = ensureKafka();
  const hash = createHash('sha256').update(readFileSync(SOURCE)).digest('hex').slice(0, 12);
  const out = path.join(kafkaCacheDir(), `java-client-${hash}`);
  if (!existsSync(path.join(out, 'JavaClient.class'))) {
    mkdirSync(out, { recursive: true });
    execFileSync(javaBin('javac'), ['-cp', classPath, '-d', out, SOURCE], { stdio: 'pipe' });
  }
  return `${classPath}:${out}`;
}

function java(
  cp: string,
  args: string[],
): Promise<{ code: number | null; lines: Record<string, unknown>[]; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      javaBin(),
      ['-Xmx128m', '-XX:TieredStopAtLevel=1', `-Dlog4j2.configurationFile=${LOG4J}`, '-cp', cp, 'JavaClient', ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`java ${args.join(' ')} timed out\n${stderr}\n${stdout}`));
    }, 90_000);
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => {
      clearTimeout(timer);
      const lines = stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({
        code,
        lines,
        stderr: `${stderr}\n${stdout
          .split('\n')
          .filter((l) => !l.startsWith('{'))
          .join('\n')}`,
      });
    });
  });
}

let cp: string;
beforeAll(() => {
  cp = compile();
}, 180_000);

describe.each(brokerTargets())('$name', (target) => {
  let broker: RunningBroker;
  beforeAll(async () => {
    broker = await target.start();
  });
  afterAll(async () => {
    await broker?.stop();
  });

  test('the Java client creates a topic, produces idempotently with acks=all and consumes in a group that resumes', {
    timeout: 120_000,
  }, async () => {
    const N = 5000;
    const r = await java(cp, ['roundtrip', broker.brokers.join(','), 'java-roundtrip', String(N)]);
    expect(r.code, r.stderr).toBe(0);
    const find = (k: string) => r.lines.find((l) => k in l)?.[k];
    expect(find('admin')).toMatchObject({ nodes: 1, partitions: 3 });
    expect(find('produced')).toBe(N);
    expect(find('consumed')).toBe(N);
    expect(r.lines.find((l) => 'consumed' in l)).toEqual({ consumed: N, bad: 0, partitions: 3 });
    expect(find('resumed')).toBe(0);

    // kafkajs reads what the Java producer wrote, headers included
    const consumer = broker.kafka().consumer({ groupId: 'kafkajs-reads-java' });
    await consumer.connect();
    await consumer.subscribe({ topic: 'java-roundtrip', fromBeginning: true });
    const got = new Map<string, string>();
    let badHeader = 0;
    await consumer.run({
      eachMessage: async ({ message }) => {
        const k = message.key!.toString();
        if (message.headers?.n?.toString() !== k.slice(1)) badHeader++;
        got.set(k, message.value!.toString());
      },
    });
    await expect.poll(() => got.size, { timeout: 30_000 }).toBe(N);
    await consumer.disconnect();
    expect(badHeader).toBe(0);
    for (let i = 0; i < N; i += 997) expect(got.get(`k${i}`)).toBe(`value-${i}`);
  });

  test('the Java client consumes what kafkajs produced', { timeout: 120_000 }, async () => {
    const producer = broker.kafka().producer({ idempotent: true });
    await producer.connect();
    const msgs = Array.from({ length: 300 }, (_, i) => ({
      key: `kj${i}`,
      value: `from kafkajs ${i}`,
      headers: { h: `x${i}` },
    }));
    await producer.send({ topic: 'kafkajs-to-java', acks: -1, messages: msgs });
    await producer.disconnect();
    const r = await java(cp, ['consume', broker.brokers.join(','), 'kafkajs-to-java', String(msgs.length)]);
    expect(r.code, r.stderr).toBe(0);
    expect(new Set(r.lines.map((l) => `${l.key}|${l.value}|${l.h}`))).toEqual(
      new Set(msgs.map((m) => `${m.key}|${m.value}|${m.headers.h}`)),
    );
  });

  test('a replication factor above the number of brokers is refused', async () => {
    const admin = broker.kafka().admin();
    await admin.connect();
    try {
      await expect(
        admin.createTopics({ topics: [{ topic: 'rf3-on-one-node', numPartitions: 1, replicationFactor: 3 }] }),
      ).rejects.toMatchObject({ errors: [expect.objectContaining({ type: 'INVALID_REPLICATION_FACTOR' })] });
    } finally {
      await admin.disconnect();
    }
  });

  test('acks=all to a topic whose min.insync.replicas exceeds its replication factor is accepted (Kafka 4.4 caps the effective minimum at the replication factor; the embedded broker has one replica)', async () => {
    const kafka = testKafka(broker.brokers, 'min-isr', { retry: { retries: 1, initialRetryTime: 50 } });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: false,
      topics: [{ topic: 'min-isr-2', numPartitions: 1, configEntries: [{ name: 'min.insync.replicas', value: '2' }] }],
    });
    await expect
      .poll(
        async () =>
          (await admin.fetchTopicMetadata({ topics: ['min-isr-2'] }).catch(() => undefined))?.topics[0]?.partitions[0]
            ?.leader,
      )
      .toBeGreaterThanOrEqual(0);
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, retry: { retries: 1, initialRetryTime: 50 } });
    await producer.connect();
    const acked = await producer.send({ topic: 'min-isr-2', acks: -1, messages: [{ value: 'x' }] });
    expect(acked).toMatchObject([{ topicName: 'min-isr-2', errorCode: 0, baseOffset: '0' }]);
    await producer.disconnect();
  });

  test('transactions: Apache Kafka commits a transactional producer, the embedded broker has no transaction coordinator', {
    timeout: 60_000,
  }, async () => {
    const kafka = testKafka(broker.brokers, 'txn', { retry: { retries: 2, initialRetryTime: 50, maxRetryTime: 200 } });
    const producer = kafka.producer({
      transactionalId: 'conformance-txn',
      idempotent: true,
      maxInFlightRequests: 1,
      retry: { retries: 2, initialRetryTime: 50, maxRetryTime: 200 },
    });
    if (target.id === 'embedded') {
      const attempt = async () => {
        await producer.connect();
        const tx = await producer.transaction();
        await tx.send({ topic: 'txn-topic', messages: [{ key: 'a', value: 'committed' }] });
        await tx.commit();
      };
      await expect(attempt()).rejects.toThrow();
      await producer.disconnect().catch(() => {});
      return;
    }
    await producer.connect();
    const tx = await producer.transaction();
    await tx.send({ topic: 'txn-topic', messages: [{ key: 'a', value: 'committed' }] });
    await tx.commit();
    await producer.disconnect();
    const consumer = kafka.consumer({ groupId: 'txn-reader', readUncommitted: false });
    await consumer.connect();
    await consumer.subscribe({ topic: 'txn-topic', fromBeginning: true });
    const got: string[] = [];
    await consumer.run({ eachMessage: async ({ message }) => void got.push(message.value!.toString()) });
    await expect.poll(() => got, { timeout: 20_000 }).toEqual(['committed']);
    await consumer.disconnect();
  });
});
