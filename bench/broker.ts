// Broker benchmark: `node bench/broker.ts` (env: BENCH_MESSAGES, BROKER_FSYNC).
// Starts services/kafka-broker/main.ts as a child process on a temporary data dir and measures, in the
// same run: kafkajs produce and consume throughput for 100-byte and 1 KiB messages (1000 per batch,
// several batches in flight), kafkajs produce latency with acks=all, and kcat's produce rate.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createKafka, type Kafka } from '../services/common/kafka/index.ts';
import { createLogger } from '../services/common/logger.ts';

const REPO = path.resolve(import.meta.dirname, '..');
const NODE = path.join(REPO, 'node_modules/.bin/node');
const TOTAL = Number(process.env.BENCH_MESSAGES ?? 200_000);
const BATCH = 1000;
const IN_FLIGHT = 8;

async function startBroker(dataDir: string): Promise<{ port: number; stop(): Promise<void> }> {
  const c2 = spawn(NODE, [path.join(REPO, 'services/kafka-broker/main.ts')], {
    env: { ...process.env, BROKER_PORT: '0', BROKER_DATA_DIR: dataDir, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let buf = '';
    c2.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /"port":(\d+)[^\n]*"msg":"broker listening"/.exec(buf);
      if (m) resolve(Number(m[1]));
    });
    c2.on('exit', (code) => reject(new Error(`broker exited ${code}`)));
  });
  return {
    port,
    stop: () =>
      new Promise((resolve) => {
        c2.once('exit', () => resolve());
        c2.kill('SIGTERM');
      }),
  };
}

function payload(size: number): Buffer {
  return Buffer.alloc(size, 'x');
}

async function produceRun(kafka: Kafka, topic: string, size: number, total: number): Promise<number> {
  const producer = kafka.producer({ allowAutoTopicCreation: true });
  await producer.connect();
  const value = payload(size);
  const batches = Math.ceil(total / BATCH);
  let next = 0;
  const start = process.hrtime.bigint();
  const worker = async () => {
    while (next < batches) {
      const b = next++;
      const messages = Array.from({ length: BATCH }, (_, i) => ({ key: String((b * BATCH + i) % 64), value }));
      await producer.send({ topic, acks: -1, messages });
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  await producer.disconnect();
  return (batches * BATCH) / secs;
}

async function consumeRun(kafka: Kafka, topic: string, total: number): Promise<number> {
  const consumer = kafka.consumer({
    groupId: `bench-${topic}`,
    maxBytes: 16 * 1024 * 1024,
    maxBytesPerPartition: 4 * 1024 * 1024,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let n = 0;
  let start = 0n;
  const done = new Promise<void>((resolve) => {
    void consumer.run({
      autoCommitInterval: 1000,
      eachBatch: async ({ batch }) => {
        if (start === 0n) start = process.hrtime.bigint();
        n += batch.messages.length;
        if (n >= total) resolve();
      },
    });
  });
  await done;
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  await consumer.disconnect();
  return n / secs;
}

async function latencyRun(kafka: Kafka, topic: string, count: number): Promise<{ p50: number; p99: number }> {
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  const value = payload(100);
  const lat: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = process.hrtime.bigint();
    await producer.send({ topic, acks: -1, messages: [{ value }] });
    lat.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  await producer.disconnect();
  lat.sort((a, b) => a - b);
  return { p50: lat[Math.floor(lat.length * 0.5)], p99: lat[Math.floor(lat.length * 0.99)] };
}

async function kcatRun(port: number, dir: string, total: number): Promise<number | null> {
  if (spawnSync('kcat', ['-V']).status !== 0) return null;
  const file = path.join(dir, 'kcat-input.txt');
  const line = 'y'.repeat(99);
  await writeFile(file, `${Array.from({ length: total }, () => line).join('\n')}\n`);
  // create the topic first so the timing covers the produce only
  spawnSync('kcat', ['-P', '-b', `127.0.0.1:${port}`, '-t', 'bench-kcat'], { input: 'warmup\n' });
  const start = process.hrtime.bigint();
  const r = spawnSync('kcat', [
    '-P',
    '-b',
    `127.0.0.1:${port}`,
    '-t',
    'bench-kcat',
    '-X',
    'acks=all',
    '-X',
    'linger.ms=5',
    '-l',
    file,
  ]);
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  if (r.status !== 0) throw new Error(`kcat failed: ${r.stderr}`);
  return total / secs;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'broker-bench-'));
  const broker = await startBroker(path.join(dir, 'data'));
  // the platform's kafkajs client (services/common/kafka): stock kafkajs polls every idle connection with a
  // negative timer (Node's TimeoutNegativeWarning) and would take CPU from the broker it measures
  const kafka = createKafka([`127.0.0.1:${broker.port}`], 'bench', createLogger('bench', 'silent'));
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [{ topic: 'bench-100', numPartitions: 6 }, { topic: 'bench-1k', numPartitions: 6 }, { topic: 'bench-lat' }],
  });
  await admin.disconnect();
  const rows: [string, string][] = [];
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  try {
    rows.push(['kafkajs produce 100 B (msgs/s)', fmt(await produceRun(kafka, 'bench-100', 100, TOTAL))]);
    rows.push(['kafkajs consume 100 B (msgs/s)', fmt(await consumeRun(kafka, 'bench-100', TOTAL))]);
    const big = Math.max(BATCH, Math.floor(TOTAL / 2));
    rows.push(['kafkajs produce 1 KiB (msgs/s)', fmt(await produceRun(kafka, 'bench-1k', 1024, big))]);
    rows.push(['kafkajs consume 1 KiB (msgs/s)', fmt(await consumeRun(kafka, 'bench-1k', big))]);
    const lat = await latencyRun(kafka, 'bench-lat', 1000);
    rows.push(['produce latency acks=all p50 (ms)', lat.p50.toFixed(2)]);
    rows.push(['produce latency acks=all p99 (ms)', lat.p99.toFixed(2)]);
    const k = await kcatRun(broker.port, dir, TOTAL);
    rows.push(['kcat -P 100 B (msgs/s)', k === null ? 'kcat not installed' : fmt(k)]);
  } finally {
    await broker.stop();
    await rm(dir, { recursive: true, force: true });
  }
  const w = Math.max(...rows.map((r) => r[0].length));
  console.log(
    `\nembedded broker, fsync=${process.env.BROKER_FSYNC ?? 'always'}, ${TOTAL} messages, ${os.cpus().length} cores`,
  );
  console.log(`${'metric'.padEnd(w)} | value`);
  console.log(`${'-'.repeat(w)}-|-${'-'.repeat(14)}`);
  for (const [m, v] of rows) console.log(`${m.padEnd(w)} | ${v.padStart(14)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
