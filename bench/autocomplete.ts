// Autocomplete benchmark on a real single-node stack of its own (redis-server, embedded broker, app):
//
//  1. the in-process index alone: suggest() p50/p99 over a synthetic store of 20 000 trending queries
//  2. HTTP at concurrency 50 (autocannon): GET /api/storefront/v1/search/complete (auth, rate limit,
//     context, index, request event) next to two baselines in the same run: the app's own /healthz route
//     (same process, same global hooks) and a bare Fastify hello-world process
//  3. freshness: 25 sessions search a new query (request events acknowledged by the broker) → the
//     query is suggested for its prefix (pipeline: broker → requests processor → ClickHouse →
//     agg:trending → index); p50/p95 over several rounds
//
// Run: node bench/autocomplete.ts   (BENCH_SECONDS=8, BENCH_ROUNDS=10 to change)
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { ulid } from 'ulid';
import { freePorts, startStack, tcpOpen } from '../deploy/local/stack.ts';
import { VALUE_SCHEMAS } from '../schemas/avro/index.ts';
import { createValueCodec } from '../schemas/codec.ts';
import { type RequestEvent, requestEvent } from '../schemas/requests.ts';
import { TOPICS } from '../schemas/topics.ts';
import { loadConfig } from '../services/common/config.ts';
import { openConfigWriter } from '../services/store-config/writer.ts';
import { AutocompleteIndex } from '../services/storefront/autocomplete/index.ts';

// autocannon ships no type declarations; the part used here
interface CannonResult {
  requests: { average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
}
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: Record<string, unknown>) => Promise<CannonResult>;

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);

const COLORS = ['red', 'blue', 'black', 'white', 'green', 'navy', 'beige', 'pink', 'grey', 'olive', 'brown', 'yellow'];
const ITEMS = ['dress', 'shirt', 'jeans', 'sneakers', 'boots', 'jacket', 'parka', 'hoodie', 'skirt', 'sandals', 'scarf', 'hat', 'socks', 'blazer', 'coat', 'shorts', 'sweater', 'bag', 'belt', 'gloves'];
const STYLES = ['linen', 'wool', 'leather', 'denim', 'silk', 'cotton', 'summer', 'winter', 'vintage', 'slim', 'oversized', 'cropped', 'waterproof', 'kids', 'mens', 'womens'];

function syntheticQueries(n: number, seed = 1): { query: string; score: number }[] {
  // mulberry32: a small deterministic PRNG
  let s = seed >>> 0;
  const rnd = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(a: T[]) => a[Math.floor(rnd() * a.length)];
  const out = new Map<string, number>();
  while (out.size < n) {
    const parts = rnd() < 0.3 ? [pick(ITEMS)] : rnd() < 0.6 ? [pick(COLORS), pick(ITEMS)] : [pick(STYLES), pick(COLORS), pick(ITEMS)];
    let q = parts.join(' ');
    if (rnd() < 0.5) q += rnd() < 0.5 ? 's' : ` ${Math.floor(rnd() * 500)}`;
    out.set(q, Math.ceil(rnd() ** 3 * 200));
  }
  return [...out].map(([query, score]) => ({ query, score }));
}

const pct = (xs: number[], p: number) => {
  const a = [...xs].sort((x, y) => x - y);
  return a[Math.min(a.length - 1, Math.floor((p / 100) * a.length))];
};
const fmt = (n: number, d = 2) => n.toFixed(d);

function microBench() {
  const idx = new AutocompleteIndex({ rebuildDebounceMs: 0 });
  const rows = syntheticQueries(20_000);
  const t0 = performance.now();
  idx.load('bench', { storeWide: rows, byCountry: {} });
  const buildMs = performance.now() - t0;
  const prefixes = rows.slice(0, 2_000).map((r) => r.query.slice(0, 2 + (r.query.length % 6)));
  for (const p of prefixes.slice(0, 500)) idx.suggest('bench', { query: p, country: null, mode: 'global' });
  const times: number[] = [];
  for (let i = 0; i < 20_000; i++) {
    const q = prefixes[i % prefixes.length];
    const a = performance.now();
    idx.suggest('bench', { query: q, country: null, mode: 'global' });
    times.push((performance.now() - a) * 1000);
  }
  console.log(`index: 20 000 queries built in ${fmt(buildMs, 0)} ms; suggest() p50 ${fmt(pct(times, 50), 0)} µs, p99 ${fmt(pct(times, 99), 0)} µs, max ${fmt(Math.max(...times), 0)} µs`);
}

async function cannon(title: string, url: string, headers: Record<string, string>, paths?: string[]) {
  let i = 0;
  const result = await autocannon({
    url,
    connections: 50,
    duration: SECONDS,
    headers,
    requests: paths ? [{ method: 'GET', setupRequest: (req: { path: string }) => ({ ...req, path: paths[i++ % paths.length] }) }] : undefined,
  });
  const non2xx = result.non2xx;
  console.log(
    `${title.padEnd(34)} ${fmt(result.requests.average, 0).padStart(7)} req/s   p50 ${fmt(result.latency.p50).padStart(6)} ms   p99 ${fmt(result.latency.p99).padStart(6)} ms${non2xx ? `   (${non2xx} non-2xx)` : ''}`,
  );
  return result;
}

async function helloWorld(port: number): Promise<ChildProcess> {
  const code = `import Fastify from 'fastify'; const app = Fastify(); app.get('/', async () => ({ hello: 'world' })); await app.listen({ port: ${port}, host: '127.0.0.1' });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: path.resolve(import.meta.dirname, '..'), stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  while (!(await tcpOpen('127.0.0.1', port))) {
    if (Date.now() > deadline) throw new Error('hello-world server did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  return child;
}

async function main() {
  microBench();

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-bench-ac-'));
  const [http, kafkaPort, registry, clickhouse, redis, hello] = await freePorts(6);
  const env = {
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    HTTP_PORT: String(http),
    KAFKA_PORT: String(kafkaPort),
    SCHEMA_REGISTRY_PORT: String(registry),
    CLICKHOUSE_HTTP_PORT: String(clickhouse),
    REDIS_PORT: String(redis),
    LOG_LEVEL: 'warn',
    DEMO_STORE: 'false',
    SERVICE_BUILD: 'bench',
    // the limiter still runs (one Redis round trip per request) but never refuses here
    STOREFRONT_RATE_LIMIT_PER_SEC: '1000000',
    STOREFRONT_RATE_LIMIT_BURST: '1000000',
    STOREFRONT_RATE_LIMIT_PER_IP_PER_SEC: '1000000',
    STOREFRONT_RATE_LIMIT_PER_IP_BURST: '1000000',
  };
  const config = loadConfig({ ...process.env, ...env, KAFKA_BROKERS: '', REDIS_URL: '', CLICKHOUSE_URL: '', SCHEMA_REGISTRY_URL: '' });
  const log = createWriteStream(path.join(dataDir, 'stack.log'));
  const stack = await startStack(config, { output: (c, line) => log.write(`[${c}] ${line}\n`), appEnv: env });
  const base = stack.urls.http;
  const helloChild = await helloWorld(hello);
  const brokers = [`127.0.0.1:${kafkaPort}`];
  const registryUrl = `http://127.0.0.1:${registry}`;
  const kafka = new Kafka({ clientId: 'bench-autocomplete', brokers, logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ idempotent: true, allowAutoTopicCreation: false });
  const writer = openConfigWriter({ brokers, registryUrl, clientId: 'bench-autocomplete-writer' });
  try {
    await producer.connect();
    const codec = createValueCodec({ registryUrl });
    const topic = TOPICS.requests.name;
    await codec.register(topic, VALUE_SCHEMAS.requests);
    const store = await writer.createStore({ name: 'autocomplete bench' });
    for (;;) {
      const r = await fetch(`${base}/internal/store-config/caught-up?partition=${store.partition}&offset=${store.offset}&wait_ms=2000`);
      if (r.ok && ((await r.json()) as { caught_up: boolean }).caught_up) break;
    }
    const headers = { 'x-storefront-access-token': store.token, 'user-agent': 'Mozilla/5.0 (bench) Chrome/120.0' };

    const searches = (query: string, sessions: number) =>
      Array.from({ length: sessions }, (_, i) => {
        const e: RequestEvent = requestEvent({
          request_id: ulid(),
          store_id: store.storeId,
          kind: 'search',
          occurred_at: new Date().toISOString(),
          device_type: 'desktop',
          status_code: 200,
          latency_ms: 2,
          session_id: `bench-${query}-${i}`,
          query,
          normalized_query: query,
          geo_country: 'US',
          total_results: 10,
          result_count: 10,
        });
        return { key: `${store.storeId}:${i}`, value: codec.encode(topic, e) };
      });

    // seed 2 000 trending queries through the pipeline
    const seed = syntheticQueries(2_000, 7);
    let batch: { key: string; value: Buffer }[] = [];
    for (const r of seed) {
      batch.push(...searches(r.query, Math.min(5, Math.max(1, Math.round(r.score / 40)))));
      if (batch.length >= 1_000) {
        await producer.send({ topic, messages: batch, acks: -1 });
        batch = [];
      }
    }
    if (batch.length) await producer.send({ topic, messages: batch, acks: -1 });
    const probe = seed[seed.length - 1].query;
    const seededBy = Date.now() + 120_000;
    for (;;) {
      const r = await fetch(`${base}/api/storefront/v1/search/complete?query=${encodeURIComponent(probe)}`, { headers });
      const body = (await r.json()) as { matchedQueries?: string[] };
      if (body.matchedQueries?.includes(probe)) break;
      if (Date.now() > seededBy) throw new Error('seeded queries never became suggestible (is the streams module running?)');
      await new Promise((res) => setTimeout(res, 200));
    }

    // HTTP at concurrency 50
    const paths = seed.slice(0, 500).map((r) => `/api/storefront/v1/search/complete?query=${encodeURIComponent(r.query.slice(0, 2 + (r.query.length % 5)))}`);
    console.log(`HTTP, 50 connections, ${SECONDS} s each:`);
    const hw = await cannon('fastify hello-world (own process)', `http://127.0.0.1:${hello}/`, {});
    const hz = await cannon('app GET /healthz (same process)', `${base}/healthz`, {});
    const ac = await cannon('GET /search/complete', base, headers, paths);
    console.log(
      `ratio /search/complete vs hello-world: ${fmt(ac.requests.average / hw.requests.average)}× throughput, p99 ${fmt(ac.latency.p99 / Math.max(hw.latency.p99, 0.01))}×; vs /healthz: ${fmt(ac.requests.average / hz.requests.average)}× throughput, p99 ${fmt(ac.latency.p99 / Math.max(hz.latency.p99, 0.01))}×`,
    );

    // freshness
    const lat: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const word = `fr${round}${Date.now().toString(36)}`;
      const query = `${word} trench coat`;
      await producer.send({ topic, messages: searches(query, 25), acks: -1 });
      const acked = performance.now();
      const deadline = acked + 30_000;
      for (;;) {
        const r = await fetch(`${base}/api/storefront/v1/search/complete?query=${word.slice(0, 5)}`, { headers });
        const body = (await r.json()) as { matchedQueries?: string[] };
        if (body.matchedQueries?.includes(query)) {
          lat.push(performance.now() - acked);
          break;
        }
        if (performance.now() > deadline) {
          lat.push(Number.POSITIVE_INFINITY);
          break;
        }
        await new Promise((res) => setTimeout(res, 10));
      }
    }
    console.log(`freshness (25 sessions' searches acknowledged → suggested), ${ROUNDS} rounds: p50 ${fmt(pct(lat, 50), 0)} ms, p95 ${fmt(pct(lat, 95), 0)} ms, max ${fmt(Math.max(...lat), 0)} ms`);
  } finally {
    await producer.disconnect().catch(() => {});
    await writer.close().catch(() => {});
    helloChild.kill('SIGTERM');
    await stack.stop();
    log.end();
    if (!process.env.KEEP_BENCH_DATA) rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
