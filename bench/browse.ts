// Browse and facets benchmark (issue #16, "Measure"), on a synthetic store of N products served by the
// results engine from the in-process catalog index:
//
//  1. store build: N products (4 variants, Size/Color/Material options, 120 vendors, tags, metafields,
//     prices, stock) and 22 collections (all N, 12 % = 12 000 at N = 100 000, 2 % "mid", … 24) written
//     into a chDB directory of its own through the catalog processors (bench/browse-store.ts; no Kafka)
//  2. CatalogIndex load time for the store; catalog point reads of 50 ids p50/p99: through the index
//     and through clickhouse/queries/catalog.ts productsByIds (the query path)
//  3. HTTP (autocannon, 50 connections, BENCH_SECONDS each) against storefrontPlugin in a process of its
//     own (bench/browse-server.ts), next to a bare Fastify hello-world process (bench/hello-world.ts) in
//     the same run: browse of a mid collection (default sort), of the mid and the 12 000 collections
//     with price_asc + filter_group + facets (vendor, options.*, counts and ranges), of the all-products
//     collection; each cold at 1 connection (no results cache, ranked collection lists off: the time one
//     computed request takes), without the results cache (ranked lists on; 1 and 50 connections),
//     behind the Redis results cache with every request a MISS (a distinct context.custom per request),
//     and as HITs in steady state (plain, and gzipped as a browser asks); facets of the 12 000 and the all
//     collections
//  4. freshness: a changed product written through the products processor and its record key published
//     on agg:catalog → the changed browse response (cached endpoint); p50/p95 over BENCH_ROUNDS changes
//
// Printed next to the goals (never asserted), and written to bench/out/latest.json under "browse".
// Run: node bench/browse.ts [products=100000]   (BENCH_SECONDS=8, BENCH_ROUNDS=20 to change;
// BENCH_CACHE_TIMEOUT_MS sets the results cache's GET timeout, default the cache's own)
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePorts } from '../deploy/local/stack.ts';
import { startRedis } from '../test/helpers/redis.ts';
import { helloWorld } from './hello-world-process.ts';
import { autocannon, pct } from './cannon.ts';
import { recordFigures } from './out.ts';
import { RANKED_BUDGET_TILES } from '../services/storefront/results/ranked.ts';

// autocannon ships no type declarations; the part used here

const N = Number(process.argv[2] ?? 100_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const GOALS = { browseP99Ms: 15, facetsP99Ms: 25, lookup50P99Ms: 5, freshnessP95Ms: 1000 };

const fmt = (n: number, d = 2) => n.toFixed(d);

interface Figures {
  products: number;
  collections: number;
  buildProductsSeconds: number;
  buildCollectionsSeconds: number;
  productsPerSecond: number;
  indexLoadSeconds: number;
  indexHeapMb: number;
  lookup50Index: { p50Ms: number; p99Ms: number };
  lookup50Query: { p50Ms: number; p99Ms: number };
}
interface Ready {
  type: 'ready';
  port: number;
  token: string;
  storeId: string;
  figures: Figures;
}
interface Changed {
  type: 'changed';
  id: string;
  title: string;
  writtenAt: number;
}

function startServer(dir: string, redisUrl: string): Promise<{ child: ChildProcess; ready: Ready }> {
  const child = spawn(process.execPath, [path.join(import.meta.dirname, 'browse-server.ts')], {
    env: { ...process.env, BENCH_PRODUCTS: String(N), BENCH_DIR: dir, REDIS_URL: redisUrl },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`bench/browse-server.ts exited (${code})`));
    child.once('exit', onExit);
    child.on('message', (m: { type: string }) => {
      if (m.type === 'ready') {
        child.off('exit', onExit);
        resolve({ child, ready: m as Ready });
      }
    });
  });
}

interface Run {
  /** responses within the run */
  completed: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** responses other than 2xx, connection errors and timeouts (autocannon: 10 s) */
  non2xx: number;
  /** the server's GC pauses and CPU as shares of the run's wall time (drain included) */
  serverGcShare?: number;
  serverCpuShare?: number;
  /** catalog version changes during the run: each makes every results-cache entry unreachable */
  versionChanges?: number;
  /** results-cache lookups that hit, of all lookups in the run (cached endpoints only) */
  cacheHitShare?: number;
}
interface Stats {
  type: 'stats';
  at: number;
  gcMs: number;
  cpuMs: number;
  version: number;
  lookups: { hit: number; miss: number; error: number };
}
/** the server's stats (set once it runs) */
let serverStats: (() => Promise<Stats>) | null = null;
const results: Record<string, Run> = {};
/** each browse request's answer size in bytes */
const pageBytes: Record<string, number> = {};
let hello: Run | undefined;

async function cannon(
  key: string | null,
  title: string,
  url: string,
  opts: {
    body?: unknown;
    headers?: Record<string, string>;
    unique?: boolean;
    connections?: number;
    seconds?: number;
    /** false for the hello-world process */
    server?: boolean;
  },
): Promise<Run> {
  let i = 0;
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const before = opts.server === false ? undefined : await serverStats?.();
  const r = await autocannon({
    url,
    connections: opts.connections ?? 50,
    duration: opts.seconds ?? SECONDS,
    ...(body === undefined
      ? {}
      : {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...opts.headers },
          body,
        }),
    ...(opts.unique
      ? {
          // a distinct results-cache key per request (context.custom is part of the key, not of the work)
          requests: [
            {
              setupRequest: (req: Record<string, unknown>) => ({
                ...req,
                body: JSON.stringify({
                  ...(opts.body as object),
                  context: { custom: { bench_request: i++ } },
                }),
              }),
            },
          ],
        }
      : {}),
  });
  const run: Run = {
    completed: r.requests.total,
    rps: Math.round(r.requests.average),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx + r.errors, // errors include timeouts
  };
  const after = before ? await serverStats?.() : undefined;
  let notes = '';
  if (before && after) {
    const wall = after.at - before.at;
    run.serverGcShare = Math.round(((after.gcMs - before.gcMs) / wall) * 100) / 100;
    run.serverCpuShare = Math.round(((after.cpuMs - before.cpuMs) / wall) * 100) / 100;
    run.versionChanges = after.version - before.version;
    const hits = after.lookups.hit - before.lookups.hit;
    const lookups = hits + after.lookups.miss - before.lookups.miss + after.lookups.error - before.lookups.error;
    if (lookups > 0) run.cacheHitShare = Math.round((hits / lookups) * 1000) / 1000;
    notes = `  [server CPU ${Math.round(run.serverCpuShare * 100)}%, GC ${Math.round(run.serverGcShare * 100)}%${run.cacheHitShare === undefined ? '' : `, cache hits ${fmt(run.cacheHitShare * 100, 1)}%`}${run.versionChanges ? `, catalog version changed ${run.versionChanges}×: cache entries dropped` : ''}]`;
  }
  if (key) results[key] = run;
  const ratio = hello ? `  ${fmt(run.rps / hello.rps, 3)}× hello-world req/s` : '';
  console.log(
    `  ${title.padEnd(58)} ${String(run.rps).padStart(6)} req/s  p50 ${fmt(run.p50Ms, 1).padStart(6)} ms  p99 ${fmt(run.p99Ms, 1).padStart(6)} ms${ratio}${run.non2xx ? `  (${run.non2xx} non-2xx/errors/timeouts)` : ''}${notes}`,
  );
  return run;
}

const filtered = {
  sort_order_code: 'price_asc',
  filter_group: {
    conditional: 'AND',
    expressions: [
      { property: 'options.Color', operator: 'in', values: ['Black', 'Navy', 'White', 'Grey'] },
      { property: 'price', operator: 'between', values: [20, 150] },
    ],
  },
  facets: ['vendor', 'options.*'],
  retrieveFacetCount: true,
  includeFacetRanges: true,
};
const facetsBody = {
  facets: ['vendor', 'options.*'],
  retrieveFacetCount: true,
  includeFacetRanges: true,
  filter_group: filtered.filter_group,
};
const fullSize = (share: number) => Math.round(N * share).toLocaleString('en');
const BROWSE = [
  { key: 'mid_default', label: `mid (${fullSize(0.02)}), default sort`, handle: 'mid', body: {} },
  { key: 'mid_filtered', label: 'mid, price_asc + filter_group + facets', handle: 'mid', body: filtered },
  {
    key: 'large_filtered',
    label: `large (${fullSize(0.12)}), price_asc + filter + facets`,
    handle: 'large',
    body: filtered,
  },
  { key: 'all_default', label: `all (${N.toLocaleString('en')}), default sort`, handle: 'all', body: {} },
];
const FACETS = [
  { key: 'facets_large', label: `facets of large (${fullSize(0.12)})`, handle: 'large' },
  { key: 'facets_all', label: `facets of all (${N.toLocaleString('en')})`, handle: 'all' },
];

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sd-bench-browse-'));
  const redis = await startRedis();
  const children: ChildProcess[] = [];
  const out: Record<string, unknown> = { at: new Date().toISOString(), cores: os.cpus().length, products: N };
  try {
    const t0 = performance.now();
    const { child: server, ready } = await startServer(dir, redis.url);
    children.push(server);
    const f = ready.figures;
    serverStats = () =>
      new Promise<Stats>((resolve) => {
        const on = (m: { type: string }) => {
          if (m.type !== 'stats') return;
          server.off('message', on);
          resolve(m as Stats);
        };
        server.on('message', on);
        server.send({ cmd: 'stats' });
      });
    out.store = f;
    console.log(
      `store: ${f.products} products written through the catalog processors in ${f.buildProductsSeconds} s (${f.productsPerSecond} products/s), ${f.collections} collections in ${f.buildCollectionsSeconds} s`,
    );
    console.log(
      `CatalogIndex load (new CatalogIndex, await get(store)): ${f.indexLoadSeconds} s, heap ${f.indexHeapMb} MB`,
    );
    console.log(
      `catalog point reads, 50 ids: index p50 ${fmt(f.lookup50Index.p50Ms, 4)} ms, p99 ${fmt(f.lookup50Index.p99Ms, 4)} ms; productsByIds (query) p50 ${f.lookup50Query.p50Ms} ms, p99 ${f.lookup50Query.p99Ms} ms   (goal p99 ≤ ${GOALS.lookup50P99Ms} ms)`,
    );

    const [helloPort] = await freePorts(1);
    children.push(await helloWorld(helloPort));
    const base = `http://127.0.0.1:${ready.port}/api/storefront/v1`;
    const cached = `http://127.0.0.1:${ready.port}/cached/api/storefront/v1`;
    const headers = { 'x-storefront-access-token': ready.token, 'user-agent': 'Mozilla/5.0 (bench) Chrome/120.0' };

    // every request once: 200, and what it answers
    for (const s of BROWSE) {
      const r = await fetch(`${base}/browse/${s.handle}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(s.body),
      });
      const text = await r.text();
      pageBytes[s.key] = Buffer.byteLength(text);
      const b = JSON.parse(text) as { totalResults?: number; results?: unknown[]; facets?: unknown[] };
      if (r.status !== 200) throw new Error(`browse ${s.key}: ${r.status} ${JSON.stringify(b).slice(0, 500)}`);
      console.log(
        `  check ${s.key}: ${b.totalResults} results, ${b.results?.length} on the page, ${Array.isArray(b.facets) ? b.facets.length : Object.keys(b.facets ?? {}).length} facets, ${fmt(pageBytes[s.key] / 1024, 1)} KB`,
      );
    }

    console.log(`HTTP, 50 connections, ${SECONDS} s each (ratios: req/s against the hello-world in the same run):`);
    hello = await cannon('hello_world', 'fastify hello-world (own process)', `http://127.0.0.1:${helloPort}/`, {
      server: false,
    });
    // the floor of a HIT: the same bare route answering a prebuilt body as large as a default page (the
    // answer's bytes written to the socket and read by the load generator, on the same 2 cores)
    const floorBytes = pageBytes.mid_default;
    const [floorPort] = await freePorts(1);
    children.push(await helloWorld(floorPort, { BODY_BYTES: String(floorBytes) }));
    const floor = await cannon(
      'hello_world_page_body',
      `hello-world answering ${fmt(floorBytes / 1024, 1)} KB (a default page's size)`,
      `http://127.0.0.1:${floorPort}/`,
      { server: false },
    );
    out.floor = { bytes: floorBytes, ...floor };
    // A run ends with up to 50 requests still queued in the server: wait until it answers a cheap request
    // promptly again before the next run starts
    const settle = async () => {
      const deadline = performance.now() + 120_000;
      for (let fast = 0; fast < 3 && performance.now() < deadline; ) {
        const t = performance.now();
        await (await fetch(`${base}/sort-orders`, { headers })).arrayBuffer();
        fast = performance.now() - t < 20 ? fast + 1 : 0;
        await new Promise((res) => setTimeout(res, 20));
      }
    };
    const post = (url: string, body: unknown) =>
      fetch(url, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((r) => r.arrayBuffer());
    const one = Math.min(SECONDS, 3);
    // the ranked collection lists on or off (off: every request computes its list: the cost of a cold one)
    const ranked = (n: number) =>
      new Promise<void>((resolve) => {
        const on = (m: { type: string }) => {
          if (m.type !== 'ranked') return;
          server.off('message', on);
          resolve();
        };
        server.on('message', on);
        server.send({ cmd: 'ranked', n });
      });
    for (const s of BROWSE) {
      const url = `${base}/browse/${s.handle}`;
      const curl = `${cached}/browse/${s.handle}`;
      await cannon(null, `(warm-up) ${s.label}`, url, { body: s.body, headers, connections: 1, seconds: 1 });
      await ranked(0);
      await cannon(`browse_${s.key}_cold_1conn`, `browse ${s.label}, no cache, no ranked lists, 1 connection`, url, {
        body: s.body,
        headers,
        connections: 1,
        seconds: one,
      });
      await ranked(RANKED_BUDGET_TILES);
      await cannon(`browse_${s.key}_off_1conn`, '  no results cache (ranked lists on), 1 connection', url, {
        body: s.body,
        headers,
        connections: 1,
        seconds: one,
      });
      await cannon(`browse_${s.key}_off`, '  no results cache (ranked lists on)', url, { body: s.body, headers });
      await settle();
      await cannon(`browse_${s.key}_miss`, '  cache on, every request a MISS', curl, {
        body: s.body,
        headers,
        unique: true,
      });
      await settle();
      await post(curl, s.body); // the entry the HITs read
      await cannon(`browse_${s.key}_hit`, '  cache on, HIT (steady state)', curl, { body: s.body, headers });
      await settle();
      await cannon(`browse_${s.key}_hit_gzip`, '  cache on, HIT, gzip (as a browser asks)', curl, {
        body: s.body,
        headers: { ...headers, 'accept-encoding': 'gzip, deflate, br' },
      });
      await settle();
    }
    for (const s of FACETS) {
      const url = `${base}/${s.handle}/facets`;
      const curl = `${cached}/${s.handle}/facets`;
      await cannon(null, `(warm-up) ${s.label}`, url, { body: facetsBody, headers, connections: 1, seconds: 1 });
      await ranked(0);
      await cannon(`${s.key}_cold_1conn`, `${s.label}, no cache, no ranked lists, 1 connection`, url, {
        body: facetsBody,
        headers,
        connections: 1,
        seconds: one,
      });
      await ranked(RANKED_BUDGET_TILES);
      await cannon(`${s.key}_off_1conn`, '  no results cache (ranked lists on), 1 connection', url, {
        body: facetsBody,
        headers,
        connections: 1,
        seconds: one,
      });
      await cannon(`${s.key}_off`, '  no results cache (ranked lists on)', url, { body: facetsBody, headers });
      await settle();
      await post(curl, facetsBody);
      await cannon(`${s.key}_hit`, '  cache on, HIT (steady state)', curl, { body: facetsBody, headers });
      await settle();
    }
    out.http = { connections: 50, seconds: SECONDS, results };

    // ── freshness: write → agg:catalog → index → changed browse response (cached endpoint)
    const freshness: number[] = [];
    for (let n = 0; n < ROUNDS; n++) {
      const changed = new Promise<Changed>((resolve) => {
        const on = (m: { type: string }) => {
          if (m.type !== 'changed') return;
          server.off('message', on);
          resolve(m as Changed);
        };
        server.on('message', on);
      });
      server.send({ cmd: 'change', n });
      const c = await changed;
      const deadline = performance.now() + 10_000;
      for (;;) {
        const r = await fetch(`${cached}/browse/fresh`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: '{}',
        });
        const b = (await r.json()) as { results?: { title?: string }[] };
        if (b.results?.some((p) => p.title === c.title)) {
          freshness.push(performance.timeOrigin + performance.now() - c.writtenAt);
          break;
        }
        if (performance.now() > deadline) {
          freshness.push(Number.POSITIVE_INFINITY);
          break;
        }
        await new Promise((res) => setTimeout(res, 5));
      }
      await new Promise((res) => setTimeout(res, 100));
    }
    const fresh = {
      rounds: ROUNDS,
      p50Ms: Math.round(pct(freshness, 50)),
      p95Ms: Math.round(pct(freshness, 95)),
      maxMs: Math.round(Math.max(...freshness)),
    };
    out.freshness = fresh;
    console.log(
      `freshness (product written through the processor → agg:catalog → changed browse response), ${ROUNDS} changes: p50 ${fresh.p50Ms} ms, p95 ${fresh.p95Ms} ms, max ${fresh.maxMs} ms   (goal p95 ≤ ${GOALS.freshnessP95Ms} ms)`,
    );

    // ── the figures next to the goals
    const line = (label: string, key: string, goal: number, floorOf?: Run) => {
      const r = results[key];
      if (!r) return;
      if (r.completed === 0) {
        console.log(`  ${label.padEnd(62)} no response within the run (goal p99 ≤ ${goal} ms)`);
        return;
      }
      const mark = r.p99Ms <= goal ? 'within' : 'over';
      const floorRatio = floorOf ? ` = ${fmt(r.rps / floorOf.rps, 2)}× the same-size body` : '';
      console.log(
        `  ${label.padEnd(62)} p99 ${fmt(r.p99Ms, 1).padStart(6)} ms (${mark} ${goal} ms)  ${String(r.rps).padStart(6)} req/s = ${fmt(r.rps / (hello?.rps ?? 1), 3)}× hello-world${floorRatio}${r.completed < 100 ? ` (${r.completed} responses)` : ''}`,
      );
    };
    console.log(
      `summary against the goals (issue #16); 50 connections unless "1 conn"; hello-world ${hello.rps} req/s; the same route answering ${fmt(floorBytes / 1024, 1)} KB ${floor.rps} req/s, p99 ${fmt(floor.p99Ms, 1)} ms (the floor of a default page's HIT):`,
    );
    for (const s of BROWSE) {
      line(`browse ${s.label}, cold (no caches), 1 conn`, `browse_${s.key}_cold_1conn`, GOALS.browseP99Ms);
      line('  ranked lists, no results cache, 1 conn', `browse_${s.key}_off_1conn`, GOALS.browseP99Ms);
      line('  ranked lists, no results cache', `browse_${s.key}_off`, GOALS.browseP99Ms);
      line('  cache MISS', `browse_${s.key}_miss`, GOALS.browseP99Ms);
      line('  cache HIT', `browse_${s.key}_hit`, GOALS.browseP99Ms, s.key === 'mid_default' ? floor : undefined);
      line('  cache HIT, gzip', `browse_${s.key}_hit_gzip`, GOALS.browseP99Ms);
    }
    for (const s of FACETS) {
      line(`${s.label}, cold (no caches), 1 conn`, `${s.key}_cold_1conn`, GOALS.facetsP99Ms);
      line('  ranked lists, no results cache, 1 conn', `${s.key}_off_1conn`, GOALS.facetsP99Ms);
      line('  ranked lists, no results cache', `${s.key}_off`, GOALS.facetsP99Ms);
      line('  cache HIT', `${s.key}_hit`, GOALS.facetsP99Ms);
    }
    console.log(
      `  50-id lookup p99: index ${fmt(f.lookup50Index.p99Ms, 4)} ms, productsByIds ${f.lookup50Query.p99Ms} ms (goal ≤ ${GOALS.lookup50P99Ms} ms); freshness p95 ${fresh.p95Ms} ms (goal ≤ ${GOALS.freshnessP95Ms} ms)`,
    );
    out.goals = GOALS;
    out.wallSeconds = Math.round((performance.now() - t0) / 1000);
    console.log(`(wall time ${out.wallSeconds} s)`);

    const stopped = new Promise((res) => server.once('exit', res));
    server.send({ cmd: 'stop' });
    await Promise.race([stopped, new Promise((res) => setTimeout(res, 10_000))]);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  recordFigures('browse', out);
}

await main();
process.exit(0);
