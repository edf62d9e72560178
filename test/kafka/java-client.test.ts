// Apache Kafka's own Java client (kafka-clients 4.4, from the same Maven fetch as the broker) against the
// embedded broker and Apache Kafka 4.4: admin, an idempotent acks=all producer, a group consumer with
// committed offsets (java/JavaClient.java), and records crossing between it and kafkajs both ways.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ensureKafka, javaBin, kafkaCacheDir } from '../../deploy/kafka/fetch.ts';
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
});
