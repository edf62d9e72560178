// Broker benchmark: `npm run bench -- broker` (env: BENCH_MESSAGES, default 200 000; BENCH_BROKER_RUNS, a
// comma list narrowing the four runs below).
// The embedded broker (services/kafka-broker/main.ts, a child process) and Apache Kafka 4.4 (one KRaft
// node started by deploy/kafka/cluster.ts, 256 MiB heap) side by side, each on a fresh temporary data dir,
// measured with the same clients in the same run: kafkajs produce and consume throughput for 100-byte and
// 1 KiB messages (1000 per batch, 8 batches in flight, 6 partitions), kafkajs produce latency with
// acks=all (one message per request, sequential), and kcat's produce rate; 20 000 warm-up messages first. Two durability settings:
//   fsync on every acknowledgement  embedded BROKER_FSYNC=always       Kafka log.flush.interval.messages=1
//   default flush policy            embedded BROKER_FSYNC=<interval>   Kafka's default (no fsync; the OS flushes)
// Printed with the ratio embedded ÷ Kafka (throughput: ≥ 1.0 is the goal; latency: ≤ 1.0), and written to
// bench/out/latest.json under "broker". Single node both; the machine is whatever runs the bench.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startKafkaCluster } from '../deploy/kafka/cluster.ts';
import { freePorts } from '../deploy/local/stack.ts';
import { createKafka, type Kafka } from '../services/common/kafka/index.ts';
import { createLogger } from '../services/common/logger.ts';

const REPO = path.resolve(import.meta.dirname, '..');
const NODE = path.join(REPO, 'node_modules/.bin/node');
const TOTAL = Number(process.env.BENCH_MESSAGES ?? 200_000);
const BATCH = 1000;
const IN_FLIGHT = 8;
const LATENCY_SENDS = 1000;
/** the embedded broker's group-commit interval in the "default flush policy" runs */
const EMBEDDED_INTERVAL_MS = 100;

interface RunningBroker {
  bootstrap: string;
  stop(): Promise<void>;
}

async function startEmbedded(dataDir: string, fsync: string): Promise<RunningBroker> {
  const c2 = spawn(NODE, [path.join(REPO, 'services/kafka-broker/main.ts')], {
    env: { ...process.env, BROKER_PORT: '0', BROKER_DATA_DIR: dataDir, BROKER_FSYNC: fsync, LOG_LEVEL: 'info' },
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
    bootstrap: `127.0.0.1:${port}`,
    stop: () =>
      new Promise((resolve) => {
        c2.once('exit', () => resolve());
        c2.kill('SIGTERM');
      }),
  };
}

async function startApacheKafka(dataDir: string, flushEveryMessage: boolean): Promise<RunningBroker> {
  const [port, controller] = await freePorts(2);
  const cluster = await startKafkaCluster({
    brokers: 1,
    ports: [port],
    controllerPorts: [controller],
    dataDir,
    properties: flushEveryMessage ? { 'log.flush.interval.messages': '1' } : {},
    output: (node, line) => {
      if (/ERROR|FATAL/.test(line)) process.stderr.write(`[${node}] ${line}\n`);
    },
  });
  return { bootstrap: cluster.bootstrap, stop: () => cluster.stop() };
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
  // warm-up: connections, metadata, JIT
  for (let i = 0; i < 50; i++) await producer.send({ topic, acks: -1, messages: [{ value }] });
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

async function kcatRun(bootstrap: string, dir: string, total: number): Promise<number | null> {
  if (spawnSync('kcat', ['-V']).status !== 0) return null;
  const file = path.join(dir, 'kcat-input.txt');
  const line = 'y'.repeat(99);
  await writeFile(file, `${Array.from({ length: total }, () => line).join('\n')}\n`);
  // create the topic first so the timing covers the produce only
  spawnSync('kcat', ['-P', '-b', bootstrap, '-t', 'bench-kcat'], { input: 'warmup\n' });
  const start = process.hrtime.bigint();
  const r = spawnSync('kcat', [
    '-P',
    '-b',
    bootstrap,
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

type Metrics = Record<string, number | null>;
const METRICS: { key: string; label: string; higherIsBetter: boolean }[] = [
  { key: 'produce100', label: 'kafkajs produce 100 B (msgs/s)', higherIsBetter: true },
  { key: 'consume100', label: 'kafkajs consume 100 B (msgs/s)', higherIsBetter: true },
  { key: 'produce1k', label: 'kafkajs produce 1 KiB (msgs/s)', higherIsBetter: true },
  { key: 'consume1k', label: 'kafkajs consume 1 KiB (msgs/s)', higherIsBetter: true },
  { key: 'latencyP50', label: 'produce acks=all p50 (ms)', higherIsBetter: false },
  { key: 'latencyP99', label: 'produce acks=all p99 (ms)', higherIsBetter: false },
  { key: 'kcat100', label: 'kcat -P 100 B (msgs/s)', higherIsBetter: true },
];

async function measure(start: (dataDir: string) => Promise<RunningBroker>): Promise<Metrics> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'broker-bench-'));
  const broker = await start(path.join(dir, 'data'));
  // the platform's kafkajs client (services/common/kafka): stock kafkajs polls every idle connection with a
  // negative timer (Node's TimeoutNegativeWarning) and would take CPU from the broker it measures
  const kafka = createKafka([broker.bootstrap], 'bench', createLogger('bench', 'silent'));
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: false,
    topics: [
      { topic: 'bench-100', numPartitions: 6 },
      { topic: 'bench-1k', numPartitions: 6 },
      { topic: 'bench-lat' },
      { topic: 'bench-warmup', numPartitions: 6 },
    ],
  });
  // every new partition has a leader before the clock starts
  for (;;) {
    try {
      const m = await admin.fetchTopicMetadata({ topics: ['bench-100', 'bench-1k', 'bench-lat', 'bench-warmup'] });
      if (m.topics.every((t) => t.partitions.every((p) => p.leader >= 0))) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  await admin.disconnect();
  const m: Metrics = {};
  try {
    // warm-up for both (the JVM's JIT, the broker's caches): 20 000 messages to a topic of their own
    await produceRun(kafka, 'bench-warmup', 100, Math.min(20_000, TOTAL));
    m.produce100 = await produceRun(kafka, 'bench-100', 100, TOTAL);
    m.consume100 = await consumeRun(kafka, 'bench-100', TOTAL);
    const big = Math.max(BATCH, Math.floor(TOTAL / 2));
    m.produce1k = await produceRun(kafka, 'bench-1k', 1024, big);
    m.consume1k = await consumeRun(kafka, 'bench-1k', big);
    const lat = await latencyRun(kafka, 'bench-lat', LATENCY_SENDS);
    m.latencyP50 = lat.p50;
    m.latencyP99 = lat.p99;
    m.kcat100 = await kcatRun(broker.bootstrap, dir, TOTAL);
  } finally {
    await broker.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return m;
}

const RUNS = [
  {
    id: 'embedded-fsync',
    label: 'embedded, BROKER_FSYNC=always',
    start: (d: string) => startEmbedded(d, 'always'),
  },
  {
    id: 'kafka-fsync',
    label: 'Kafka, log.flush.interval.messages=1',
    start: (d: string) => startApacheKafka(d, true),
  },
  {
    id: 'embedded-default',
    label: `embedded, BROKER_FSYNC=${EMBEDDED_INTERVAL_MS}`,
    start: (d: string) => startEmbedded(d, String(EMBEDDED_INTERVAL_MS)),
  },
  { id: 'kafka-default', label: 'Kafka, default flush policy', start: (d: string) => startApacheKafka(d, false) },
];

async function main(): Promise<void> {
  const only = process.env.BENCH_BROKER_RUNS?.split(',');
  const results: Record<string, Metrics> = {};
  for (const run of RUNS) {
    if (only && !only.includes(run.id)) continue;
    process.stdout.write(`measuring ${run.label}…\n`);
    results[run.id] = await measure(run.start);
  }

  const fmt = (key: string, v: number | null | undefined) =>
    v === null || v === undefined
      ? '–'
      : key.startsWith('latency')
        ? v.toFixed(2)
        : Math.round(v).toLocaleString('en-US');
  const ratio = (a: number | null | undefined, b: number | null | undefined) =>
    a == null || b == null || b === 0 ? '–' : `${(a / b).toFixed(2)}×`;
  const pairs = [
    { title: 'fsync on every acknowledgement', e: 'embedded-fsync', k: 'kafka-fsync' },
    { title: 'default flush policy', e: 'embedded-default', k: 'kafka-default' },
  ];
  const w = Math.max(...METRICS.map((m) => m.label.length));
  console.log(
    `\nbroker bench: ${TOTAL} messages (1 KiB: ${Math.max(BATCH, Math.floor(TOTAL / 2))}), single node, ${os.cpus().length} cores, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  for (const p of pairs) {
    if (!results[p.e] && !results[p.k]) continue;
    console.log(`\n${p.title}: ${RUNS.find((r) => r.id === p.e)!.label} vs ${RUNS.find((r) => r.id === p.k)!.label}`);
    console.log(`${'metric'.padEnd(w)} | ${'embedded'.padStart(12)} | ${'Kafka 4.4'.padStart(12)} | embedded÷Kafka`);
    console.log(`${'-'.repeat(w)}-|-${'-'.repeat(12)}-|-${'-'.repeat(12)}-|-${'-'.repeat(14)}`);
    for (const m of METRICS) {
      const e = results[p.e]?.[m.key];
      const k = results[p.k]?.[m.key];
      const goal = m.higherIsBetter ? '(goal ≥ 1)' : '(goal ≤ 1)';
      console.log(
        `${m.label.padEnd(w)} | ${fmt(m.key, e).padStart(12)} | ${fmt(m.key, k).padStart(12)} | ${ratio(e, k).padStart(6)} ${goal}`,
      );
    }
  }

  const outDir = path.join(REPO, 'bench/out');
  mkdirSync(outDir, { recursive: true });
  const latestPath = path.join(outDir, 'latest.json');
  let latest: Record<string, unknown> = {};
  try {
    latest = JSON.parse(readFileSync(latestPath, 'utf8'));
  } catch {}
  latest.broker = {
    at: new Date().toISOString(),
    cores: os.cpus().length,
    loadavg: os.loadavg(),
    messages: TOTAL,
    embeddedIntervalMs: EMBEDDED_INTERVAL_MS,
    runs: Object.fromEntries(
      Object.entries(results).map(([id, m]) => [id, { label: RUNS.find((r) => r.id === id)!.label, ...m }]),
    ),
  };
  writeFileSync(latestPath, `${JSON.stringify(latest, null, 2)}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
