// Autocomplete benchmark on real single-node stacks of its own (redis-server, embedded broker, app):
//
//  1. the in-process index alone: suggest() p50/p99 over a synthetic store of 20 000 trending queries,
//     computed (answer cache off) and as served (answer cache on, a repeating mix of prefixes)
//  2. HTTP (autocannon) against GET /api/storefront/v1/search/complete (auth, rate limit, context, index,
//     request event) next to baselines in the same run: a bare Fastify hello-world process
//     (bench/hello-world.ts), the app's own /healthz route (same process, same global hooks), and two
//     variants of the hello-world route that locate the goals on this machine: with n µs of CPU spun per
//     request (BENCH_BURN_US, default 10,20), and with one request event per request through the read
//     API's emitter into the real broker (the work every storefront request must do):
//       - saturated: 50 connections as fast as they go (throughput; latency there is queueing: with 50
//         requests always outstanding, mean latency = 50 / throughput)
//       - fixed rate: 50 connections offering BENCH_RATE req/s in total (latency under a given load)
//     three times: the default app (stream processors on their own thread, consuming the request events
//     each autocomplete request emits), the same app with STREAMS_THREAD=false (processors on the read
//     API's event loop, the structure before issue #21) and with STREAMS_ENABLED=false (seeded through
//     agg:trending instead), so the share of the single-node design shows separately. The goal ratios of
//     issue #21 go to bench/out/latest.json (autocomplete.default_app.throughput_ratio, .p99_ratio_at_2000)
//  3. freshness (default app): 25 sessions search a new query (request events acknowledged by the broker)
//     → the query is suggested for its prefix (pipeline: broker → requests processor → ClickHouse →
//     agg:trending → index); p50/p95 over several rounds, split at the agg:trending message
//
// Run: node bench/autocomplete.ts   (BENCH_SECONDS=8, BENCH_ROUNDS=10, BENCH_RATE=2000 to change;
// BENCH_CPU_PROF=<dir> writes V8 CPU profiles of the app processes)
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { newUlid } from '../services/common/ids.ts';
import { freePorts, startStack } from '../deploy/local/stack.ts';
import { VALUE_SCHEMAS } from '../schemas/avro/index.ts';
import { createValueCodec } from '../services/common/kafka/codec.ts';
import { Redis } from 'ioredis';
import { type RequestEvent, requestEvent } from '../schemas/requests.ts';
import { TOPICS } from '../schemas/topics.ts';
import { loadConfig } from '../services/common/config.ts';
import { createKafka } from '../services/common/kafka/index.ts';
import { createLogger } from '../services/common/logger.ts';
import { openConfigWriter } from '../services/store-config/writer.ts';
import { AutocompleteIndex } from '../services/storefront/autocomplete/index.ts';
import { TRENDING_CHANNEL } from '../schemas/channels.ts';
import { publishTrending } from '../streams/trending/notify.ts';
import { helloWorld } from './hello-world-process.ts';
import { autocannon, type CannonResult, pct } from './cannon.ts';
import { recordFigures } from './out.ts';

// autocannon ships no type declarations; the part used here

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const RATE = Number(process.env.BENCH_RATE ?? 2000);
const BURNS = (process.env.BENCH_BURN_US ?? '10,20').split(',').filter(Boolean).map(Number);

const COLORS = ['red', 'blue', 'black', 'white', 'green', 'navy', 'beige', 'pink', 'grey', 'olive', 'brown', 'yellow'];
const ITEMS = [
  'dress',
  'shirt',
  'jeans',
  'sneakers',
  'boots',
  'jacket',
  'parka',
  'hoodie',
  'skirt',
  'sandals',
  'scarf',
  'hat',
  'socks',
  'blazer',
  'coat',
  'shorts',
  'sweater',
  'bag',
  'belt',
  'gloves',
];
const STYLES = [
  'linen',
  'wool',
  'leather',
  'denim',
  'silk',
  'cotton',
  'summer',
  'winter',
  'vintage',
  'slim',
  'oversized',
  'cropped',
  'waterproof',
  'kids',
  'mens',
  'womens',
];

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
    const parts =
      rnd() < 0.3
        ? [pick(ITEMS)]
        : rnd() < 0.6
          ? [pick(COLORS), pick(ITEMS)]
          : [pick(STYLES), pick(COLORS), pick(ITEMS)];
    let q = parts.join(' ');
    if (rnd() < 0.5) q += rnd() < 0.5 ? 's' : ` ${Math.floor(rnd() * 500)}`;
    out.set(q, Math.ceil(rnd() ** 3 * 200));
  }
  return [...out].map(([query, score]) => ({ query, score }));
}

const fmt = (n: number, d = 2) => n.toFixed(d);

function microBench() {
  const rows = syntheticQueries(20_000);
  const prefixes = rows.slice(0, 2_000).map((r) => r.query.slice(0, 2 + (r.query.length % 6)));
  for (const cache of [false, true]) {
    const idx = new AutocompleteIndex({ rebuildDebounceMs: 0, answerCacheSize: cache ? 4096 : 0 });
    const t0 = performance.now();
    idx.load('bench', { storeWide: rows, byCountry: {} });
    const buildMs = performance.now() - t0;
    for (const p of prefixes.slice(0, 500)) idx.suggest('bench', { query: p, country: null, mode: 'global' });
    const times: number[] = [];
    for (let i = 0; i < 20_000; i++) {
      const q = prefixes[i % prefixes.length];
      const a = performance.now();
      idx.suggest('bench', { query: q, country: null, mode: 'global' });
      times.push((performance.now() - a) * 1000);
    }
    console.log(
      `index: 20 000 queries built in ${fmt(buildMs, 0)} ms; suggest() ${cache ? 'as served (answer cache, 2 000 prefixes)' : 'computed (no answer cache)     '} p50 ${fmt(pct(times, 50), 1)} µs, p99 ${fmt(pct(times, 99), 1)} µs, max ${fmt(Math.max(...times), 0)} µs`,
    );
  }
}

async function cannon(title: string, url: string, headers: Record<string, string>, paths?: string[], rate?: number) {
  let i = 0;
  const result = await autocannon({
    url,
    connections: 50,
    duration: SECONDS,
    headers,
    ...(rate ? { overallRate: rate } : {}),
    requests: paths
      ? [{ method: 'GET', setupRequest: (req: { path: string }) => ({ ...req, path: paths[i++ % paths.length] }) }]
      : undefined,
  });
  const non2xx = result.non2xx;
  console.log(
    `${title.padEnd(44)} ${fmt(result.requests.average, 0).padStart(7)} req/s   p50 ${fmt(result.latency.p50).padStart(6)} ms   p99 ${fmt(result.latency.p99).padStart(6)} ms${non2xx ? `   (${non2xx} non-2xx)` : ''}`,
  );
  return result;
}

/** saturated req/s of the hello-world route with extra work per request, in a process of its own */
async function variant(title: string, env: Record<string, string>): Promise<CannonResult> {
  const [port] = await freePorts(1);
  const child = await helloWorld(port, env);
  try {
    return await cannon(title, `http://127.0.0.1:${port}/`, {});
  } finally {
    child.kill('SIGTERM');
  }
}

interface Running {
  base: string;
  brokers: string[];
  registryUrl: string;
  redisUrl: string;
  stop(): Promise<void>;
}

async function startBenchStack(label: string, extra: Record<string, string>): Promise<Running> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `sd-bench-ac-${label}-`));
  const [http, kafkaPort, registry, clickhouse, redis] = await freePorts(5);
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
    // the limiter still runs (local buckets, synced with Redis in the background) but never refuses here
    STOREFRONT_RATE_LIMIT_PER_SEC: '1000000',
    STOREFRONT_RATE_LIMIT_BURST: '1000000',
    STOREFRONT_RATE_LIMIT_PER_IP_PER_SEC: '1000000',
    STOREFRONT_RATE_LIMIT_PER_IP_BURST: '1000000',
    ...(process.env.BENCH_CPU_PROF
      ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF, label)}` }
      : {}),
    ...extra,
  };
  const config = loadConfig({
    ...process.env,
    ...env,
    KAFKA_BROKERS: '',
    REDIS_URL: '',
    CLICKHOUSE_URL: '',
    SCHEMA_REGISTRY_URL: '',
  });
  const log = createWriteStream(path.join(dataDir, 'stack.log'));
  const stack = await startStack(config, { output: (c, line) => log.write(`[${c}] ${line}\n`), appEnv: env });
  return {
    base: stack.urls.http,
    brokers: [`127.0.0.1:${kafkaPort}`],
    registryUrl: `http://127.0.0.1:${registry}`,
    redisUrl: `redis://127.0.0.1:${redis}`,
    async stop() {
      await stack.stop();
      log.end();
      if (!process.env.KEEP_BENCH_DATA) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function createStore(s: Running) {
  const writer = openConfigWriter({
    brokers: s.brokers,
    registryUrl: s.registryUrl,
    clientId: 'bench-autocomplete-writer',
  });
  try {
    const store = await writer.createStore({ name: 'autocomplete bench' });
    for (;;) {
      const r = await fetch(
        `${s.base}/internal/store-config/caught-up?partition=${store.partition}&offset=${store.offset}&wait_ms=2000`,
      );
      if (r.ok && ((await r.json()) as { caught_up: boolean }).caught_up) break;
    }
    return store;
  } finally {
    await writer.close().catch(() => {});
  }
}

async function waitSuggested(base: string, headers: Record<string, string>, probe: string) {
  const seededBy = Date.now() + 120_000;
  for (;;) {
    const r = await fetch(`${base}/api/storefront/v1/search/complete?query=${encodeURIComponent(probe)}`, { headers });
    const body = (await r.json()) as { matchedQueries?: string[] };
    if (body.matchedQueries?.includes(probe)) return;
    if (Date.now() > seededBy) throw new Error(`seeded query "${probe}" never became suggestible`);
    await new Promise((res) => setTimeout(res, 200));
  }
}

const seed = syntheticQueries(2_000, 7);
const votesOf = (score: number) => Math.min(5, Math.max(1, Math.round(score / 40)));
const paths = seed
  .slice(0, 500)
  .map(
    (r) => `/api/storefront/v1/search/complete?query=${encodeURIComponent(r.query.slice(0, 2 + (r.query.length % 5)))}`,
  );

interface HttpFigures {
  healthz: CannonResult;
  ac: CannonResult;
  acRate: CannonResult;
}

async function httpPhase(label: string, base: string, headers: Record<string, string>): Promise<HttpFigures> {
  const healthz = await cannon(`${label}: GET /healthz, saturated`, `${base}/healthz`, {});
  const ac = await cannon(`${label}: GET /search/complete, saturated`, base, headers, paths);
  const acRate = await cannon(`${label}: GET /search/complete @ ${RATE}/s`, base, headers, paths, RATE);
  return { healthz, ac, acRate };
}

/** the requests processor's chunk counters from the app's /metrics */
async function processorMetrics(base: string) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const value = (re: RegExp) => {
    let sum = 0;
    for (const m of text.matchAll(re)) sum += Number(m[1]);
    return sum;
  };
  return {
    at: performance.now(),
    chunks: value(/^stream_batch_seconds_count\{[^}]*processor="requests"[^}]*mode="live"[^}]*\} (\S+)$/gm),
    chunkSeconds: value(/^stream_batch_seconds_sum\{[^}]*processor="requests"[^}]*mode="live"[^}]*\} (\S+)$/gm),
    messages: value(/^stream_batch_messages_sum\{[^}]*processor="requests"[^}]*mode="live"[^}]*\} (\S+)$/gm),
  };
}

function diffMetrics(a: Awaited<ReturnType<typeof processorMetrics>>, b: Awaited<ReturnType<typeof processorMetrics>>) {
  return {
    chunks: a.chunks - b.chunks,
    chunkSeconds: a.chunkSeconds - b.chunkSeconds,
    messages: a.messages - b.messages,
    wallSeconds: (a.at - b.at) / 1000,
  };
}

async function main() {
  microBench();
  const [hello] = await freePorts(1);
  const helloChild = await helloWorld(hello);
  const results: Record<string, HttpFigures> = {};
  let hw: CannonResult;
  let hwRate: CannonResult;
  const frontier: [number, CannonResult][] = [];
  let helloEvent: CannonResult | undefined;
  let freshnessP95: number | undefined;
  try {
    console.log(`HTTP, 50 connections, ${SECONDS} s each:`);
    hw = await cannon('fastify hello-world (own process), saturated', `http://127.0.0.1:${hello}/`, {});
    hwRate = await cannon(`fastify hello-world @ ${RATE}/s`, `http://127.0.0.1:${hello}/`, {}, undefined, RATE);
    // the frontier: how much CPU per request a route may spend and still reach the goals here
    for (const us of BURNS)
      frontier.push([us, await variant(`hello-world + ${us} µs of CPU per request`, { BURN_US: String(us) })]);

    // ── the default app (processors on their own thread), and before it the same app with the processors
    //    on the read API's event loop (STREAMS_THREAD=false): the structure issue #21 replaced ──
    for (const [key, env] of [
      ['sameLoop', { STREAMS_THREAD: 'false' }],
      ['full', {}],
    ] as const) {
      const full = await startBenchStack(key, env);
      const kafka = createKafka(full.brokers, 'bench-autocomplete', createLogger('bench-autocomplete', 'error'));
      const producer = kafka.producer({ idempotent: true, allowAutoTopicCreation: false });
      const sub = new Redis(full.redisUrl);
      try {
        await producer.connect();
        const codec = createValueCodec({ registryUrl: full.registryUrl });
        const topic = TOPICS.requests.name;
        await codec.register(topic, VALUE_SCHEMAS.requests);
        const store = await createStore(full);
        const headers = { 'x-storefront-access-token': store.token, 'user-agent': 'Mozilla/5.0 (bench) Chrome/120.0' };
        const searches = (query: string, sessions: number) =>
          Array.from({ length: sessions }, (_, i) => {
            const e: RequestEvent = requestEvent({
              request_id: newUlid(),
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
        let batch: { key: string; value: Buffer }[] = [];
        for (const r of seed) {
          batch.push(...searches(r.query, votesOf(r.score)));
          if (batch.length >= 1_000) {
            await producer.send({ topic, messages: batch, acks: -1 });
            batch = [];
          }
        }
        if (batch.length) await producer.send({ topic, messages: batch, acks: -1 });
        await waitSuggested(full.base, headers, seed[seed.length - 1].query);
        results[key] = await httpPhase(key === 'full' ? 'default app' : 'STREAMS_THREAD=false', full.base, headers);
        if (key !== 'full') continue;

        // freshness, split at the agg:trending message that carries the query
        const published = new Map<string, number>();
        sub.on('message', (_ch: string, text: string) => {
          const at = performance.now();
          for (const d of JSON.parse(text) as { query: string }[])
            if (!published.has(d.query)) published.set(d.query, at);
        });
        await sub.subscribe(TRENDING_CHANNEL);
        const metricsBefore = await processorMetrics(full.base);
        const total: number[] = [];
        const toPublish: number[] = [];
        const toIndex: number[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          const word = `fr${round}${Date.now().toString(36)}`;
          const query = `${word} trench coat`;
          await producer.send({ topic, messages: searches(query, 25), acks: -1 });
          const acked = performance.now();
          const deadline = acked + 30_000;
          for (;;) {
            const r = await fetch(`${full.base}/api/storefront/v1/search/complete?query=${word.slice(0, 5)}`, {
              headers,
            });
            const body = (await r.json()) as { matchedQueries?: string[] };
            if (body.matchedQueries?.includes(query)) {
              const now = performance.now();
              total.push(now - acked);
              const pub = published.get(query);
              if (pub !== undefined) {
                toPublish.push(pub - acked);
                toIndex.push(now - pub);
              }
              break;
            }
            if (performance.now() > deadline) {
              total.push(Number.POSITIVE_INFINITY);
              break;
            }
            await new Promise((res) => setTimeout(res, 5));
          }
          await new Promise((res) => setTimeout(res, 200));
        }
        freshnessP95 = pct(total, 95);
        console.log(
          `freshness (25 sessions' searches acknowledged → suggested), ${ROUNDS} rounds: p50 ${fmt(pct(total, 50), 0)} ms, p95 ${fmt(pct(total, 95), 0)} ms, max ${fmt(Math.max(...total), 0)} ms`,
        );
        const m = diffMetrics(await processorMetrics(full.base), metricsBefore);
        if (m.chunks > 0) {
          console.log(
            `  requests processor meanwhile: ${fmt(m.chunks, 0)} chunks (${fmt(m.messages / m.chunks, 1)} messages each, most of them the polls' own autocomplete request events), ${fmt((m.chunkSeconds / m.chunks) * 1000, 0)} ms per chunk (journal, decode, claims, insert, read-back, commit), ${fmt((m.chunkSeconds / m.wallSeconds) * 100, 0)}% of the wall time busy writing`,
          );
        }
        if (toPublish.length) {
          console.log(
            `  of which acknowledged → agg:trending message (processor: fetch linger, journal, claims, insert, votes read-back): p50 ${fmt(pct(toPublish, 50), 0)} ms, p95 ${fmt(pct(toPublish, 95), 0)} ms; message → suggested (feed, index rebuild, poll): p50 ${fmt(pct(toIndex, 50), 0)} ms, p95 ${fmt(pct(toIndex, 95), 0)} ms`,
          );
        }
      } finally {
        sub.disconnect();
        await producer.disconnect().catch(() => {});
        await full.stop();
      }
    }

    // ── the same app without the stream processors: seeded through agg:trending ──
    const lean = await startBenchStack('streams-off', { STREAMS_ENABLED: 'false' });
    const pub = new Redis(lean.redisUrl);
    try {
      const store = await createStore(lean);
      const headers = { 'x-storefront-access-token': store.token, 'user-agent': 'Mozilla/5.0 (bench) Chrome/120.0' };
      const bucket = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString();
      await publishTrending(
        pub,
        seed.map((r) => ({ store_id: store.storeId, country: 'US', query: r.query, bucket, votes: votesOf(r.score) })),
      );
      await waitSuggested(lean.base, headers, seed[seed.length - 1].query);
      results.lean = await httpPhase('STREAMS_ENABLED=false', lean.base, headers);
      // the one piece of work every storefront request must do, alone on the bare route
      helloEvent = await variant('hello-world + one request event (emitter → broker)', {
        BROKERS: lean.brokers.join(','),
        REGISTRY_URL: lean.registryUrl,
      });
    } finally {
      pub.disconnect();
      await lean.stop();
    }

    const ratio = (a: CannonResult, b: CannonResult) => fmt(a.requests.average / b.requests.average);
    console.log('summary (saturated throughput vs hello-world; fixed-rate p99):');
    for (const [us, r] of frontier) {
      console.log(
        `  ${`hello-world + ${us} µs CPU per request`.padEnd(44)} ${ratio(r, hw)}× hello-world req/s, p99 saturated ${fmt(r.latency.p99)} ms`,
      );
    }
    if (helloEvent) {
      console.log(
        `  ${'hello-world + one request event'.padEnd(44)} ${ratio(helloEvent, hw)}× hello-world req/s, p99 saturated ${fmt(helloEvent.latency.p99)} ms`,
      );
    }
    for (const [k, label] of [
      ['sameLoop', 'STREAMS_THREAD=false (processors on the loop)'],
      ['full', 'default app (processors on their thread)'],
      ['lean', 'STREAMS_ENABLED=false (read API alone)'],
    ] as const) {
      const r = results[k];
      if (!r) continue;
      console.log(
        `  ${label.padEnd(44)} /search/complete ${ratio(r.ac, hw)}× hello-world req/s (/healthz ${ratio(r.healthz, hw)}×); p99 @ ${RATE}/s ${fmt(r.acRate.latency.p99)} ms (hello-world ${fmt(hwRate.latency.p99)} ms)`,
      );
    }
    if (results.full) {
      const figures = {
        throughput_ratio: results.full.ac.requests.average / hw.requests.average,
        p99_ratio_at_2000: results.full.acRate.latency.p99 / hwRate.latency.p99,
        p99_at_2000_ms: results.full.acRate.latency.p99,
        hello_world_p99_at_2000_ms: hwRate.latency.p99,
      };
      const before = results.sameLoop && {
        throughput_ratio: results.sameLoop.ac.requests.average / hw.requests.average,
        p99_ratio_at_2000: results.sameLoop.acRate.latency.p99 / hwRate.latency.p99,
        p99_at_2000_ms: results.sameLoop.acRate.latency.p99,
      };
      recordFigures('autocomplete', {
        rate: RATE,
        default_app: figures,
        processors_on_the_loop: before,
        freshness_p95_ms: freshnessP95,
      });
      console.log(
        `  goals (issue #21): default app throughput ${fmt(figures.throughput_ratio)}× (≥ 0.5), p99 @ ${RATE}/s ${fmt(figures.p99_ratio_at_2000)}× hello-world's (≤ 2)`,
      );
    }
    if (results.full && results.lean) {
      console.log(
        `  share of the single-node design: /search/complete ${ratio(results.full.ac, results.lean.ac)}× the req/s it reaches without the processors`,
      );
    }
  } finally {
    helloChild.kill('SIGTERM');
  }
}

await main();
