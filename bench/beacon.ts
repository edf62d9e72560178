// Intake benchmark: `node bench/beacon.ts` (env: BENCH_SECONDS, BENCH_CONNECTIONS, BENCH_BATCH,
// BENCH_ONLY=full|intake, BENCH_PROF=<dir> for a CPU profile of the intake-only process; BEACON_WORKERS
// applies to both configurations).
//
// Drives POST /beacon with autocannon: 100-event batches, every event with a fresh event_id (so nothing
// is a dedup hit), acknowledged by Kafka with acks=all before each 201. Two configurations:
//   full    the real single-node stack (redis-server, the embedded broker, the app with every module:
//           the stream processors consume the events into chDB while the intake runs);
//   intake  the embedded broker and redis-server as child processes, and a process hosting only the
//           beacon plugin (what an intake-only process of the distributed mode does).
// Prints acknowledged events/s (201s × events per batch, cross-checked against the app's
// beacon_events_accepted_total) and latency; in the same run a Fastify hello-world route in a process
// of its own as the baseline, and the ratio. Finally the in-process CPU cost per event of each intake
// stage (JSON parse, validation, enrichment, Avro encoding), which bounds the single-thread ceiling.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { newUlid } from '../services/common/ids.ts';
import { freePorts, startStack } from '../deploy/local/stack.ts';
import { VALUE_SCHEMAS } from '../schemas/avro/index.ts';
import { createValueCodec } from '../services/common/kafka/codec.ts';
import { enrichEvent, parseEvent, type ServerFields } from '../schemas/events.ts';
import { ByteWriter, requestBlock, writeFastEvent } from '../services/beacon/fast-event.ts';
import { loadConfig } from '../services/common/config.ts';
import { openConfigWriter } from '../services/store-config/writer.ts';
import { memoryRegistry } from '../test/beacon/helpers.ts';
import { recordFigures } from './out.ts';

const REPO = path.resolve(import.meta.dirname, '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const BATCH = Number(process.env.BENCH_BATCH ?? 100);

// autocannon ships no type declarations; the part used here
interface CannonResult {
  requests: { total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  duration: number;
}
interface CannonRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (req: CannonRequest) => CannonRequest;
}
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: {
  url: string;
  connections: number;
  duration: number;
  requests?: CannonRequest[];
}) => Promise<CannonResult>;

interface Run {
  requests: number;
  non2xx: number;
  rps: number;
  p50: number;
  p99: number;
  seconds: number;
  errors: number;
}

function summarize(r: CannonResult): Run {
  return {
    requests: r.requests.total,
    non2xx: r.non2xx,
    rps: r.requests.total / (r.duration || SECONDS),
    p50: r.latency.p50,
    p99: r.latency.p99,
    seconds: r.duration,
    errors: r.errors + r.timeouts,
  };
}

async function helloWorldBaseline(): Promise<Run> {
  const [port] = await freePorts(1);
  const code = `
    import Fastify from 'fastify';
    const app = Fastify();
    app.get('/', async () => ({ hello: 'world' }));
    await app.listen({ host: '127.0.0.1', port: ${port} });
    process.send?.('ready');
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    cwd: REPO,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (c) => reject(new Error(`hello-world server exited ${c}`)));
  });
  try {
    const r = await autocannon({ url: `http://127.0.0.1:${port}/`, connections: CONNECTIONS, duration: SECONDS });
    return summarize(r);
  } finally {
    child.kill('SIGTERM');
  }
}

/** A 100-event body template: a fresh id prefix per request, so every event_id is new. */
function bodyFactory(): () => string {
  const now = new Date().toISOString();
  const types = [
    'product_impression',
    'product_view',
    'product_click',
    'add_to_cart',
    'search',
    'collection_view',
  ] as const;
  const parts: string[] = [];
  for (let i = 0; i < BATCH; i++) {
    const t = types[i % types.length];
    const extra =
      t === 'search'
        ? `"query":"red shoes","contextual_data":{"search_source":"typed"}`
        : t === 'collection_view'
          ? `"collection_handle":"summer-sale"`
          : `"product_id":${1000 + i},"position":${(i % 24) + 1},"attribution_token":"01JD0000000000000000000ATT"`;
    // event_id = 22-char per-request prefix + 4-char per-event suffix
    parts.push(
      `{"event_id":"`,
      `${String(i).padStart(4, '0')}","event_type":"${t}","timestamp":"${now}","session_id":"s-${i % 7}",${extra}}`,
    );
  }
  return () => {
    const prefix = newUlid().slice(0, 22);
    let s = '{"events":[';
    for (let i = 0; i < parts.length; i += 2) s += (i ? ',' : '') + parts[i] + prefix + parts[i + 1];
    return `${s}]}`;
  };
}

async function acceptedTotal(httpUrl: string): Promise<number> {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^beacon_events_accepted_total\{[^}]*\} (\d+(?:\.\d+)?)/gm)) n += Number(m[1]);
  return n;
}

/** CPU seconds (user + system) a process used so far, from /proc (Linux); undefined elsewhere */
function cpuSeconds(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return undefined;
  }
}

function childPids(pid: number | undefined): number[] {
  if (!pid) return [];
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

type CpuSnapshot = Record<string, number | undefined>;
const snapshot = (pids: Record<string, number | undefined>): CpuSnapshot =>
  Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));

/**
 * CPU used per acknowledged event by each process during the run: a figure that holds on a shared,
 * loaded machine, where wall-clock throughput mostly measures the neighbours.
 */
function reportCpu(before: CpuSnapshot, after: CpuSnapshot, events: number): Record<string, number> | undefined {
  if (events <= 0) return;
  let total = 0;
  const figures: Record<string, number> = {};
  const parts: string[] = [];
  for (const [k, b] of Object.entries(before)) {
    const a = after[k];
    if (a === undefined || b === undefined) continue;
    const us = ((a - b) * 1e6) / events;
    total += us;
    figures[`${k}_cpu_us_per_event`] = us;
    parts.push(`${k} ${us.toFixed(1)}`);
  }
  if (parts.length === 0) return;
  figures.cpu_us_per_event = total;
  console.log(`  CPU per event (µs)          ${parts.join(', ')}; total ${total.toFixed(1)}`);
  console.log(
    `  → events/s with 2 cores to itself ≈ ${Math.round(2e6 / total).toLocaleString('en-US')} (1 core: ${Math.round(1e6 / total).toLocaleString('en-US')})`,
  );
  return figures;
}

function report(label: string, beacon: Run, accepted: number, hello: Run) {
  const ok = beacon.requests - beacon.non2xx;
  const eventsPerSec = (ok * BATCH) / beacon.seconds;
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  console.log(`${label}: ${CONNECTIONS} connections, ${beacon.seconds} s, ${BATCH}-event batches`);
  console.log(
    `  requests/s (201)            ${fmt(ok / beacon.seconds)}   (non-2xx: ${beacon.non2xx}, errors/timeouts: ${beacon.errors})`,
  );
  console.log(`  events/s acknowledged       ${fmt(eventsPerSec)}`);
  console.log(`  events counted by the app   ${fmt(accepted)} (${fmt(accepted / beacon.seconds)}/s)`);
  console.log(`  latency p50 / p99           ${beacon.p50} ms / ${beacon.p99} ms`);
  console.log(
    `  ratio to hello-world req/s  ${(ok / beacon.seconds / hello.rps).toFixed(3)} requests, ${(eventsPerSec / hello.rps).toFixed(2)} events per hello-world request`,
  );
}

/** warm up until the token is known, call `ready`, then load for BENCH_SECONDS */
async function drive(url: string, token: string, nextBody: () => string, ready: () => Promise<void>): Promise<Run> {
  // warm-up until the token is known and the path is hot
  for (let i = 0; ; i++) {
    const r = await fetch(url, { method: 'POST', headers: { 'x-storefront-access-token': token }, body: nextBody() });
    if (r.status === 201) break;
    if (i > 200) throw new Error(`beacon never accepted the bench token (last status ${r.status})`);
    await new Promise((r) => setTimeout(r, 50));
  }
  await ready();
  return summarize(
    await autocannon({
      url,
      connections: CONNECTIONS,
      duration: SECONDS,
      requests: [
        {
          method: 'POST',
          headers: {
            'content-type': 'text/plain;charset=UTF-8',
            'x-storefront-access-token': token,
            'user-agent':
              'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
            'x-forwarded-for': '81.2.69.142',
          },
          setupRequest: (req) => ({ ...req, body: nextBody() }),
        },
      ],
    }),
  );
}

function waitMessage<T>(child: ChildProcess, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    child.once('message', (m) => resolve(m as T));
    child.once('exit', (c) => reject(new Error(`${what} exited ${c}`)));
  });
}

async function stop(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** broker + redis + a process with only the beacon plugin */
async function intakeOnly(hello: Run) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-bench-intake-'));
  const [kafkaPort] = await freePorts(1);
  const broker = spawn(process.execPath, [path.join(REPO, 'services/kafka-broker/main.ts')], {
    cwd: REPO,
    env: {
      ...process.env,
      BROKER_PORT: String(kafkaPort),
      BROKER_DATA_DIR: path.join(dataDir, 'kafka'),
      LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
  });
  const token = 'bench-intake-token-0123456789';
  const code = `
    import { startRedis, startBeaconApp } from '${path.join(REPO, 'test/beacon/helpers.ts')}';
    const redis = await startRedis();
    const app = await startBeaconApp({ brokers: ['127.0.0.1:${kafkaPort}'], redisUrl: redis.url, stores: [{ storeId: 'bench', token: '${token}' }], settings: { BEACON_WORKERS: ${Number(process.env.BEACON_WORKERS ?? -1)} } });
    process.send({ url: app.url });
    process.on('SIGTERM', async () => {
      await app.close();
      await redis.stop();
      process.exit(0);
    });
    process.on('message', async (m) => {
      if (m === 'accepted') {
        const { registry } = await import('${path.join(REPO, 'services/common/metrics.ts')}');
        const v = (await registry.getSingleMetric('beacon_events_accepted_total').get()).values.reduce((n, x) => n + x.value, 0);
        process.send({ accepted: v });
      }
    });
  `;
  await new Promise((r) => setTimeout(r, 1000));
  // BENCH_PROF=<dir>: write a V8 CPU profile of the intake process there
  const prof = process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`] : [];
  const server = spawn(process.execPath, [...prof, '--input-type=module', '-e', code], {
    cwd: REPO,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const { url } = await waitMessage<{ url: string }>(server, 'intake server');
    const ask = async () => {
      const p = waitMessage<{ accepted: number }>(server, 'intake server');
      server.send('accepted');
      return (await p).accepted;
    };
    const pids = { beacon: server.pid, broker: broker.pid, redis: childPids(server.pid)[0] };
    let before = 0;
    let cpuBefore: CpuSnapshot = {};
    const run = await drive(`${url}/beacon`, token, bodyFactory(), async () => {
      before = await ask();
      cpuBefore = snapshot(pids);
    });
    const cpuAfter = snapshot(pids);
    const accepted = (await ask()) - before;
    report('intake only (broker + redis + beacon process)', run, accepted, hello);
    const cpu = reportCpu(cpuBefore, cpuAfter, accepted);
    // issue #21's goal: beacon.cpu_us_per_event ≤ 12 (beacon + broker + Redis, intake alone)
    if (cpu) recordFigures('beacon', { ...cpu, intake_events_per_second: accepted / run.seconds });
  } finally {
    await stop(server);
    await stop(broker);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** the real single-node stack */
async function fullStack(hello: Run) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-bench-beacon-'));
  const [http, kafka, registry, clickhouse, redis] = await freePorts(5);
  const env = {
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    HTTP_PORT: String(http),
    KAFKA_PORT: String(kafka),
    SCHEMA_REGISTRY_PORT: String(registry),
    CLICKHOUSE_HTTP_PORT: String(clickhouse),
    REDIS_PORT: String(redis),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    DEMO_STORE: 'false',
    SERVICE_BUILD: 'bench',
  };
  const config = loadConfig({
    ...process.env,
    ...env,
    KAFKA_BROKERS: '',
    REDIS_URL: '',
    CLICKHOUSE_URL: '',
    SCHEMA_REGISTRY_URL: '',
  });
  const stack = await startStack(config, {
    output: (c, line) => {
      if (process.env.BENCH_VERBOSE) process.stderr.write(`[${c}] ${line}\n`);
    },
    appEnv: env,
  });
  try {
    const httpUrl = stack.urls.http;
    const writer = openConfigWriter({
      brokers: [`127.0.0.1:${kafka}`],
      registryUrl: stack.urls.schemaRegistry ?? `http://127.0.0.1:${registry}`,
      clientId: 'bench-beacon',
    });
    const store = await writer.createStore({ name: 'bench store' });
    await writer.close();
    const pids = { app: stack.children.app?.pid, broker: stack.children.broker?.pid, redis: stack.children.redis?.pid };
    let before = 0;
    let cpuBefore: CpuSnapshot = {};
    const run = await drive(`${httpUrl}/beacon`, store.token, bodyFactory(), async () => {
      before = await acceptedTotal(httpUrl);
      cpuBefore = snapshot(pids);
    });
    const cpuAfter = snapshot(pids);
    const accepted = (await acceptedTotal(httpUrl)) - before;
    report(`full single-node stack (fsync=${config.BROKER_FSYNC})`, run, accepted, hello);
    reportCpu(cpuBefore, cpuAfter, accepted);
  } finally {
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** CPU per event of each in-process stage, single thread, no I/O */
async function stages() {
  const codec = createValueCodec({ registryUrl: '', registry: memoryRegistry() });
  await codec.register('bench-events', VALUE_SCHEMAS.events);
  const nextBody = bodyFactory();
  const now = new Date().toISOString();
  const server: ServerFields = {
    store_id: 'bench',
    received_at: now,
    geo_country: 'GB',
    geo_region: 'ENG',
    geo_city: 'london',
    device_type: 'mobile',
    browser: 'Mobile Safari',
    os: 'iOS',
    is_bot: false,
    inferred_channel: 'web',
  };
  const rounds = 2_000;
  const t = { 'JSON.parse': 0, parseEvent: 0, enrichEvent: 0, 'Avro encode': 0 };
  const block = requestBlock(codec.schemaId('bench-events') ?? 0, server);
  const w = new ByteWriter();
  let fastMs = 0;
  let fastHits = 0;
  for (let r = 0; r < rounds; r++) {
    const body = nextBody();
    let t0 = performance.now();
    const raw = (JSON.parse(body) as { events: unknown[] }).events;
    let t1 = performance.now();
    t['JSON.parse'] += t1 - t0;
    t0 = t1;
    const parsed = raw.map((e) => parseEvent(e));
    t1 = performance.now();
    t.parseEvent += t1 - t0;
    t0 = t1;
    const enriched = parsed.map((p) => (p.ok ? enrichEvent(p.event, server) : null));
    t1 = performance.now();
    t.enrichEvent += t1 - t0;
    t0 = t1;
    for (const e of enriched) if (e) codec.encode('bench-events', e);
    t['Avro encode'] += performance.now() - t0;
    // the intake's fast path does validation, enrichment and encoding in one pass (services/beacon/fast-event.ts)
    t0 = performance.now();
    w.pos = 0;
    for (const e of raw)
      if (writeFastEvent(e as Record<string, unknown>, block, Number.MAX_SAFE_INTEGER, w)) fastHits++;
    fastMs += performance.now() - t0;
  }
  const total = Object.values(t).reduce((a, b) => a + b, 0);
  console.log(`in-process CPU per event (${rounds} × ${BATCH} events, one thread):`);
  for (const [k, v] of Object.entries(t))
    console.log(`  ${k.padEnd(14)} ${((v * 1000) / (rounds * BATCH)).toFixed(2)} µs`);
  console.log(
    `  total          ${((total * 1000) / (rounds * BATCH)).toFixed(2)} µs (the reference path: zod + enrichEvent + avsc)`,
  );
  const fastUs = (fastMs * 1000) / (rounds * BATCH);
  console.log(
    `  fast path      ${fastUs.toFixed(2)} µs validation + enrichment + Avro in one pass (${fastHits} of ${rounds * BATCH} events taken); with JSON.parse ${(fastUs + (t['JSON.parse'] * 1000) / (rounds * BATCH)).toFixed(2)} µs`,
  );
}

const only = process.env.BENCH_ONLY;
const hello = await helloWorldBaseline();
console.log(
  `hello-world Fastify baseline: ${Math.round(hello.rps).toLocaleString('en-US')} requests/s (p50 ${hello.p50} ms, p99 ${hello.p99} ms)`,
);
if (!only || only === 'intake') await intakeOnly(hello);
if (!only || only === 'full') await fullStack(hello);
await stages();
