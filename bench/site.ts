// Site benchmark: the cached searches-served counter and the static discovery files, each driven by
// autocannon (50 connections, saturated) against a real single-node stack of its own (no demo store),
// next to two baselines measured in the same run:
//   hello-world   a bare Fastify process with one route (bench/hello-world.ts): the goal's reference
//   /healthz      the app's own cheapest route (same process, same global hooks)
// Goal: the cached counter ≥ 0.8 × hello-world req/s. Printed (never asserted) and written to
// bench/out/latest.json under "site".
//
// Run: npm run bench -- site   (BENCH_SECONDS=8 to change the duration of each run)
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePorts, startStack } from '../deploy/local/stack.ts';
import { loadConfig } from '../services/common/config.ts';
import { autocannon, type CannonResult } from './cannon.ts';
import { helloWorld } from './hello-world-process.ts';
import { recordFigures } from './out.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const GOAL_RATIO = 0.8;
const fmt = (n: number, d = 2) => n.toFixed(d);

async function cannon(title: string, url: string): Promise<CannonResult> {
  const r = await autocannon({ url, connections: 50, duration: SECONDS });
  console.log(
    `${title.padEnd(40)} ${fmt(r.requests.average, 0).padStart(7)} req/s   p50 ${fmt(r.latency.p50).padStart(6)} ms   p99 ${fmt(r.latency.p99).padStart(6)} ms${r.non2xx ? `   (${r.non2xx} non-2xx)` : ''}${r.errors ? `   (${r.errors} errors)` : ''}`,
  );
  return r;
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-bench-site-'));
const [http, kafka, registry, clickhouse, redis, hello] = await freePorts(6);
const env = {
  DATA_DIR: dataDir,
  HOST: '127.0.0.1',
  HTTP_PORT: String(http),
  KAFKA_PORT: String(kafka),
  SCHEMA_REGISTRY_PORT: String(registry),
  CLICKHOUSE_HTTP_PORT: String(clickhouse),
  REDIS_PORT: String(redis),
  LOG_LEVEL: 'warn',
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
const log = createWriteStream(path.join(dataDir, 'stack.log'));
const stack = await startStack(config, { output: (c, line) => log.write(`[${c}] ${line}\n`), appEnv: env });
const helloChild = await helloWorld(hello);
const base = stack.urls.http;

try {
  // warm: the discovery documents are built on first request (per origin), the counter is read at start
  const targets: [string, string][] = [
    ['/api/searches-served (cached counter)', '/api/searches-served'],
    ['/llms.txt', '/llms.txt'],
    ['/openapi.json', '/openapi.json'],
    ['/sitemap.xml', '/sitemap.xml'],
    ['/.well-known/api-catalog', '/.well-known/api-catalog'],
    ['/.well-known/agent-skills/index.json', '/.well-known/agent-skills/index.json'],
    ['/.well-known/mcp (server card)', '/.well-known/mcp'],
  ];
  for (const [, p] of targets) {
    for (let i = 0; i < 50; i++) {
      const r = await fetch(`${base}${p}`);
      if (r.status !== 200) throw new Error(`${p} answered ${r.status}`);
      await r.arrayBuffer();
    }
  }
  console.log(`site bench: ${SECONDS} s per run, 50 connections, saturated; ${os.availableParallelism()} cores`);
  const baseline = await cannon('hello-world (bare Fastify process)', `http://127.0.0.1:${hello}/`);
  const healthz = await cannon('/healthz (the app, same process)', `${base}/healthz`);
  const results: Record<string, { reqPerSec: number; p50Ms: number; p99Ms: number; vsHelloWorld: number }> = {};
  for (const [title, p] of targets) {
    const r = await cannon(title, `${base}${p}`);
    results[p] = {
      reqPerSec: Math.round(r.requests.average),
      p50Ms: r.latency.p50,
      p99Ms: r.latency.p99,
      vsHelloWorld: Number((r.requests.average / baseline.requests.average).toFixed(3)),
    };
  }
  // the baseline again: the machine is shared, so the ratio is stated against the mean of both runs
  const baseline2 = await cannon('hello-world (again)', `http://127.0.0.1:${hello}/`);
  const helloMean = (baseline.requests.average + baseline2.requests.average) / 2;
  for (const r of Object.values(results)) r.vsHelloWorld = Number((r.reqPerSec / helloMean).toFixed(3));
  const counterRatio = results['/api/searches-served'].vsHelloWorld;
  console.log(
    `\ncached counter: ${fmt(counterRatio, 2)} × hello-world req/s (goal ≥ ${GOAL_RATIO}) — ${counterRatio >= GOAL_RATIO ? 'met' : 'NOT met'}`,
  );
  for (const [p, r] of Object.entries(results))
    console.log(`  ${p.padEnd(38)} ${fmt(r.vsHelloWorld, 2)} × hello-world, p99 ${fmt(r.p99Ms)} ms`);

  recordFigures('site', {
    seconds: SECONDS,
    connections: 50,
    cores: os.availableParallelism(),
    helloWorld: {
      reqPerSec: Math.round(helloMean),
      runs: [baseline, baseline2].map((b) => ({ reqPerSec: Math.round(b.requests.average), p99Ms: b.latency.p99 })),
    },
    healthz: { reqPerSec: Math.round(healthz.requests.average), p99Ms: healthz.latency.p99 },
    endpoints: results,
    goal: { counterVsHelloWorld: GOAL_RATIO, met: counterRatio >= GOAL_RATIO },
  });
} finally {
  helloChild.kill('SIGTERM');
  await stack.stop();
  log.end();
  if (!process.env.KEEP_BENCH_DATA) rmSync(dataDir, { recursive: true, force: true });
}
