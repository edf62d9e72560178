// Search benchmark (issue #17, "Measure"), on the demo store at 100 000 products served by the single-node
// app (`npm start` with the demo store: catalog through the catalog processors, shopper sessions replayed
// through POST /beacon, so the learned evidence is the stream's own):
//
//  1. relevance: nDCG@10 over the planted evaluation set (services/demo/generator plan.ts `searchEval`:
//     exact, plural, misspelled, synonym, multi-word and learned queries), overall and per kind
//  2. HTTP (autocannon, 50 connections, BENCH_SECONDS each) next to a bare Fastify hello-world process
//     (bench/hello-world.ts) in the same run: search execute over the evaluation queries and 200 more
//     planted-style queries, as results-cache HITs in steady state (plain, and gzipped as a browser asks
//     for them), and computed every time (a distinct context.custom per request makes every request a
//     MISS); also at 1 connection (one request's cost)
//  3. learned freshness: BENCH_ROUNDS bursts of 8 shopper sessions that search a new phrase and view and
//     cart one product (POST /beacon) → the time until that product is the first result for the phrase
//
// Printed next to the goals (never asserted), and written to bench/out/latest.json under "search".
// Run: node bench/search.ts [products=100000]   (BENCH_SECONDS=8, BENCH_ROUNDS=5, BENCH_SESSIONS=3000)
import type { ChildProcess } from 'node:child_process';

import { newUlid } from '../services/common/ids.ts';
import { freePorts } from '../deploy/local/stack.ts';
import { searchEvalQuality } from '../services/demo/generator/quality.ts';
import { COLORS, PRODUCT_TYPES } from '../services/demo/generator/vocab.ts';
import { PROCESSORS } from '../streams/registry.ts';
import { startDemoApp } from './demo-app.ts';
import { helloWorld } from './hello-world-process.ts';
import { autocannon, pct } from './cannon.ts';
import { recordFigures } from './out.ts';

const N = Number(process.argv[2] ?? 100_000);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 3_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const GOALS = { searchP99Ms: 20, ndcg: 0.9, learnedVisibleMs: 5_000 };
const BROWSER_UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15';

const fmt = (n: number, d = 2) => n.toFixed(d);
const line = (label: string, value: string) => process.stdout.write(`  ${label.padEnd(64)} ${value}\n`);

process.stdout.write(`search (demo store, ${N.toLocaleString('en-US')} products, ${SESSIONS} sessions)\n`);
const t0 = Date.now();
// the store's rate limits off: the bench measures the endpoint, not the limiter
const app = await startDemoApp({
  products: N,
  sessions: SESSIONS,
  env: {
    STOREFRONT_RATE_LIMIT_PER_SEC: '0',
    STOREFRONT_RATE_LIMIT_PER_IP_PER_SEC: '0',
    // every processor but the image features': search reads none, and describing 100 000 products'
    // images would hold the machine for most of an hour (the blocks and image-search benches run them)
    STREAMS_PROCESSORS: Object.keys(PROCESSORS)
      .filter((n) => !n.startsWith('images_'))
      .join(','),
  },
});
let hello: ChildProcess | undefined;
let floor: ChildProcess | undefined;
/** the size of every answer the bench's own client read */
const answerBytes: number[] = [];
const figures: Record<string, unknown> = { products: N, sessions: SESSIONS };
try {
  await app.waitFor(/demo: catalog loaded/, 3_600_000);
  line('catalog loaded', `${fmt((Date.now() - t0) / 1000, 1)} s`);
  await app.waitFor(/demo: shopper sessions replayed/, 3_600_000);
  line('sessions replayed', `${fmt((Date.now() - t0) / 1000, 1)} s`);
  // what the replayed sessions produced is written (the learned evidence, the engagement signals): the
  // figures below are search's, not a processor's backlog
  const settled = await app.caughtUp(45 * 60_000);
  line('stream processors caught up (consumer lag 0)', `${fmt(settled, 1)} s later`);
  const { store, token } = app.loaded();
  const headers = {
    'x-storefront-access-token': token,
    'content-type': 'application/json',
    accept: 'application/json',
  };
  const search = async (q: string, body: unknown = { pagination: { limit: 10 } }) => {
    const r = await fetch(`${app.api}/search/${encodeURIComponent(q)}/execute`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    const text = await r.text();
    answerBytes.push(Buffer.byteLength(text));
    return (JSON.parse(text) as { results: { id: number }[] }).results.map((x) => String(x.id));
  };
  // the learned evidence of the replayed sessions has reached the read API
  const gt = store.groundTruth;
  for (const l of gt.learnedQueries) {
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const top = await search(l.query);
      if (l.engaged.every((id) => top.slice(0, l.engaged.length).includes(id))) break;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  line('learned evidence of the replayed sessions served', `${fmt((Date.now() - t0) / 1000, 1)} s`);

  // ── 1. relevance
  const rel = await searchEvalQuality(gt, (q) => search(q));
  line(`nDCG@10 over ${rel.perQuery.length} planted queries (goal ≥ ${GOALS.ndcg})`, fmt(rel.ndcg, 3));
  for (const [kind, v] of Object.entries(rel.byKind)) line(`  ${kind} (${v.queries})`, fmt(v.ndcg, 3));
  figures.relevance = rel;

  // ── 2. HTTP
  const queries = [...gt.searchEval.map((e) => e.query)];
  for (let i = 0; queries.length < gt.searchEval.length + 200; i++) {
    const t = PRODUCT_TYPES[i % PRODUCT_TYPES.length];
    const c = COLORS[(i * 7) % COLORS.length];
    queries.push(`${c.name} ${i % 2 ? t.plural : t.name}`.toLowerCase());
  }
  const [helloPort] = await freePorts(1);
  hello = await helloWorld(helloPort);
  const runs: Record<string, { rps: number; p50: number; p99: number; errors: number }> = {};
  const run = async (label: string, url: string, opts: Record<string, unknown>) => {
    const r = await autocannon({ url, duration: SECONDS, connections: 50, ...opts });
    runs[label] = { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.non2xx + r.errors };
    line(
      label,
      `${Math.round(r.requests.average).toLocaleString('en-US')} req/s  p50 ${r.latency.p50} ms  p99 ${r.latency.p99} ms${r.non2xx + r.errors ? `  (${r.non2xx + r.errors} errors)` : ''}`,
    );
  };

  let n = 0;
  const rotating = (miss: boolean) => ({
    method: 'POST',
    headers,
    requests: [
      {
        setupRequest: (req: Record<string, unknown>) => {
          const q = queries[n++ % queries.length];
          return {
            ...req,
            path: `/api/storefront/v1/search/${encodeURIComponent(q)}/execute`,
            body: JSON.stringify({
              pagination: { limit: 24 },
              ...(miss ? { context: { custom: { bench: n } } } : {}),
            }),
          };
        },
      },
    ],
  });
  const base = `http://127.0.0.1:${app.http}`;
  // warm: every query once (text index built, cache filled)
  for (const q of queries) await search(q, { pagination: { limit: 24 } });
  // the floor of a HIT: the same bare route answering a prebuilt body of the answers' mean size (writing and
  // reading the bytes on the same 2 cores)
  const warmBytes = answerBytes.slice(-queries.length);
  const floorBytes = Math.round(warmBytes.reduce((a, b) => a + b, 0) / Math.max(1, warmBytes.length));
  const [floorPort] = await freePorts(1);
  floor = await helloWorld(floorPort, { BODY_BYTES: String(floorBytes) });
  await run('hello-world (baseline, same machine, same run)', `http://127.0.0.1:${helloPort}/`, {});
  await run(
    `hello-world answering ${fmt(floorBytes / 1024, 1)} KB (the search answers' mean size: a HIT's floor)`,
    `http://127.0.0.1:${floorPort}/`,
    {},
  );
  figures.floorBytes = floorBytes;
  await run(`search execute, cache HIT (${queries.length} queries)`, base, rotating(false));
  await run('search execute, cache HIT, gzip (as a browser asks)', base, {
    ...rotating(false),
    headers: { ...headers, 'accept-encoding': 'gzip, deflate, br' },
  });
  await run('search execute, computed (every request a MISS)', base, rotating(true));
  await run('search execute, computed, 1 connection', base, { ...rotating(true), connections: 1 });
  figures.http = runs;

  // ── 3. learned freshness
  const waits: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const phrase = `zephyrine ${newUlid().slice(-6).toLowerCase()} picnic`;
    const product = gt.queries[round % gt.queries.length].relevant[0];
    const now = Date.now();
    const events = [];
    for (let s = 0; s < 8; s++) {
      const session = `bench-${newUlid()}`;
      const at = (ms: number) => new Date(now + ms).toISOString();
      events.push(
        {
          event_id: newUlid(),
          event_type: 'search',
          session_id: session,
          timestamp: at(0),
          query: phrase,
          contextual_data: { search_source: 'typed' },
        },
        {
          event_id: newUlid(),
          event_type: 'product_view',
          session_id: session,
          timestamp: at(1),
          product_id: Number(product),
        },
        {
          event_id: newUlid(),
          event_type: 'add_to_cart',
          session_id: session,
          timestamp: at(2),
          product_id: Number(product),
        },
      );
    }
    const started = Date.now();
    const res = await fetch(`${base}/beacon`, {
      method: 'POST',
      headers: { ...headers, 'user-agent': BROWSER_UA },
      body: JSON.stringify({ events }),
    });
    if (res.status !== 201) throw new Error(`beacon answered ${res.status}`);
    for (;;) {
      if ((await search(phrase))[0] === product) break;
      if (Date.now() - started > 60_000) throw new Error('the learned product never came first');
      await new Promise((r) => setTimeout(r, 20));
    }
    waits.push(Date.now() - started);
  }
  line(
    `learned expansion visible after a burst (${ROUNDS} rounds; goal ≤ ${GOALS.learnedVisibleMs} ms)`,
    `p50 ${pct(waits, 50)} ms  max ${Math.max(...waits)} ms`,
  );
  figures.learnedVisibleMs = { p50: pct(waits, 50), max: Math.max(...waits), rounds: waits };
  figures.goals = GOALS;

  recordFigures('search', { ...figures });
} finally {
  hello?.kill();
  floor?.kill();
  line('stack output', await app.stop('sd-bench-search.log'));
}
