// librdkafka (Debian's kcat): produce with -P (keys with -K:), consume with -C -e and with a balanced
// consumer group (-G); payloads and keys round-trip, also against kafkajs. Against the embedded broker and
// Apache Kafka 4.4 (test/kafka/targets.ts).
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { brokerTargets, type RunningBroker } from '../kafka/targets.ts';

const KCAT = '/usr/bin/kcat';

function kcat(
  args: string[],
  input?: string,
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(KCAT, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`kcat ${args.join(' ')} timed out\n${stderr}`));
    }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr });
    });
    child.stdin.end(input ?? '');
  });
}

const N = 3000;
const lines = Array.from({ length: N }, (_, i) => `key-${i}:value ${i} ${'x'.repeat(i % 50)} ünïcødé`);
const expected = new Set(lines);

describe.each(brokerTargets())('$name', (target) => {
  let broker: RunningBroker;
  let bootstrap: string;
  beforeAll(async () => {
    broker = await target.start();
    bootstrap = broker.brokers[0];
  });
  afterAll(async () => {
    await broker?.stop();
  });

  test('kcat -P with keys, then -C -e round-trips keys and payloads', async () => {
    const admin = broker.kafka().admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'kcat-in', numPartitions: 4 }] });
    await admin.disconnect();

    const p = await kcat(
      ['-P', '-b', bootstrap, '-t', 'kcat-in', '-K:', '-X', 'acks=all', '-X', 'enable.idempotence=true'],
      `${lines.join('\n')}\n`,
    );
    expect(p.code, p.stderr).toBe(0);

    const c = await kcat(['-C', '-b', bootstrap, '-t', 'kcat-in', '-e', '-q', '-f', '%k:%s\n']);
    expect(c.code, c.stderr).toBe(0);
    const got = c.stdout.split('\n').filter(Boolean);
    expect(got.length).toBe(N);
    expect(new Set(got)).toEqual(expected);

    // per-partition order is the production order
    const perPartition = await kcat(['-C', '-b', bootstrap, '-t', 'kcat-in', '-e', '-q', '-f', '%p %o %k\n']);
    const byPart = new Map<string, number[]>();
    for (const l of perPartition.stdout.split('\n').filter(Boolean)) {
      const [p, o, k] = l.split(' ');
      const list = byPart.get(p) ?? [];
      list.push(Number(k.slice(4)));
      byPart.set(p, list);
      expect(Number(o)).toBe(list.length - 1);
    }
    for (const list of byPart.values()) expect(list).toEqual([...list].sort((a, b) => a - b));
  });

  test('kcat balanced consumer group (-G) with two members consumes everything', async () => {
    const [a, b] = await Promise.all([
      kcat(
        [
          '-b',
          bootstrap,
          '-G',
          'kcat-group',
          '-e',
          '-q',
          '-f',
          '%k:%s\n',
          '-X',
          'auto.offset.reset=earliest',
          'kcat-in',
        ],
        undefined,
        60_000,
      ),
      kcat(
        [
          '-b',
          bootstrap,
          '-G',
          'kcat-group',
          '-e',
          '-q',
          '-f',
          '%k:%s\n',
          '-X',
          'auto.offset.reset=earliest',
          'kcat-in',
        ],
        undefined,
        60_000,
      ),
    ]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const got = [...a.stdout.split('\n'), ...b.stdout.split('\n')].filter(Boolean);
    expect(new Set(got)).toEqual(expected);

    // the group committed its offsets: a member joining later has nothing left to read
    const again = await kcat(
      ['-b', bootstrap, '-G', 'kcat-group', '-e', '-q', '-f', '%k:%s\n', 'kcat-in'],
      undefined,
      60_000,
    );
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe('');
  });

  test('kafkajs-produced messages read by kcat and kcat-produced read by kafkajs', async () => {
    const kafka = broker.kafka();
    const producer = kafka.producer({ idempotent: true });
    await producer.connect();
    const msgs = Array.from({ length: 500 }, (_, i) => ({
      key: `kj${i}`,
      value: `from kafkajs ${i}`,
      headers: { h: `x${i}` },
    }));
    await producer.send({ topic: 'mixed', acks: -1, messages: msgs });
    await producer.disconnect();
    const c = await kcat(['-C', '-b', bootstrap, '-t', 'mixed', '-e', '-q', '-f', '%k|%s|%h\n']);
    expect(c.code, c.stderr).toBe(0);
    expect(new Set(c.stdout.split('\n').filter(Boolean))).toEqual(
      new Set(msgs.map((m) => `${m.key}|${m.value}|h=${m.headers.h}`)),
    );

    const p = await kcat(['-P', '-b', bootstrap, '-t', 'mixed2', '-K:'], 'a:1\nb:2\nc:3\n');
    expect(p.code, p.stderr).toBe(0);
    const consumer = kafka.consumer({ groupId: 'kj-reader' });
    await consumer.connect();
    await consumer.subscribe({ topic: 'mixed2', fromBeginning: true });
    const got: string[] = [];
    await consumer.run({ eachMessage: async ({ message }) => void got.push(`${message.key}:${message.value}`) });
    await expect.poll(() => got, { timeout: 15_000 }).toEqual(['a:1', 'b:2', 'c:3']);
    await consumer.disconnect();
  });
});
