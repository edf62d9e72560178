// Memory benchmark (issue #21, `memory.rss_mib` ≤ 1 536 MiB): the resident memory of the single-node stack
// (`npm start`: the launcher, redis-server, the embedded broker, the app with the read API, the stream
// processors on its worker thread and chDB in process) holding a store of N products and M events.
//
//  1. `npm start` on a fresh data dir with the demo store at --products N (catalog through the catalog
//     path; 50 demo shopper sessions so the replay is short), bench/demo-app.ts
//  2. --events M engagement events (default 10 000 000) produced straight to the events topic with the
//     project's producer client and Avro codec (the beacon HTTP path is bench/beacon.ts's): time-ordered
//     shopper sessions over the last 30 days (search, autocomplete, product clicks and views, collection
//     views, add-to-carts, a purchase now and then), products picked with a popularity skew. The producer
//     stays at most BENCH_MAX_LAG events ahead of the events processor, so the pipeline (topic → processors
//     → ClickHouse aggregates, session state and dedup claims in Redis) runs as it would live
//  3. once the processors caught up and the read API's periodic refreshes ran over the whole store: browse,
//     search, autocomplete, block, similar-products and image-search requests; with --similar-minutes M up to M minutes
//     for the similar-products precompute to cover the store (its steady state); then the RSS of every
//     process of the stack, and with --heap-owners the app's main-thread heap by owner (bench/heap-owners.ts)
//
// RSS is VmRSS from /proc (the app's includes its worker thread and chDB); the peak is the highest sampled
// total during ingestion (and each process's VmHWM). `memory.rss_mib` is the end figure, stack total,
// written to bench/out/latest.json under "memory" with the breakdown; printed next to the goal, never
// asserted. With --max-minutes T the producer stops after T minutes of ingestion and the figures are those
// of the events actually ingested (`complete: false`); nothing is extrapolated.
// Run (the figure is memory, not time: nice it on a shared machine):
//   nice -n 19 node bench/memory.ts [--products 100000] [--events 10000000] [--max-minutes 30]
//                                   [--similar-minutes 60] [--heap-owners]
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { newUlid } from '../services/common/ids.ts';
import type { EnrichedEvent } from '../schemas/events.ts';
import { EMPTY_EVENT_FIELDS } from '../schemas/events.ts';
import { TOPICS } from '../schemas/topics.ts';
import { createValueCodec, registerPlatformSchemas } from '../services/common/kafka/codec.ts';
import { createKafka } from '../services/common/kafka/index.ts';
import { createLogger } from '../services/common/logger.ts';
import { createRedis } from '../services/common/redis.ts';
import { allImageNames, type ImageSpec, parseImageName, renderImage } from '../services/demo/generator/images.ts';
import { productIdOf, variantIdOf } from '../services/demo/generator/model.ts';
import { COLORS, PRODUCT_TYPES } from '../services/demo/generator/vocab.ts';
import { startDemoApp } from './demo-app.ts';
import { recordFigures } from './out.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const PRODUCTS = arg('products', 100_000);
const EVENTS = arg('events', 10_000_000);
const MAX_MINUTES = arg('max-minutes', Number.POSITIVE_INFINITY);
const MAX_LAG = Number(process.env.BENCH_MAX_LAG ?? 200_000);
/** wait up to this long after the reads for the similar-products precompute to cover the store (its steady
 *  state: a list per product; paced at a fifth of the read API's loop, ≈ 25 s per 1 000 products here) */
const SIMILAR_MINUTES = arg('similar-minutes', 0);
/** charge the app's main-thread heap to its owners at the end (bench/heap-owners.ts; a snapshot of the heap) */
const HEAP_OWNERS = process.argv.includes('--heap-owners');
/** keep the stack running this many seconds after the figures (to inspect it; BENCH_HOLD_RELEASE=<file>
 *  ends the hold when that file exists), printing its URLs */
const HOLD_SECONDS = Number(process.env.BENCH_HOLD_SECONDS ?? 0);
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const GOAL_MIB = 1536;
const DAY = 24 * 60 * 60 * 1000;
const SPAN_MS = 30 * DAY;

const log = (s: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${s}\n`);
const mib = (kb: number) => Math.round(kb / 1024);
const fmt = (n: number) => n.toLocaleString('en-US');

// ------------------------------------------------------------------------------------------------
// the stack's processes and their memory (/proc)

interface ProcMem {
  pid: number;
  /** VmRSS, VmHWM, RssAnon, RssFile in KiB */
  rss: number;
  hwm: number;
  anon: number;
  file: number;
  threads: number;
}

function procStatus(pid: number): ProcMem | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(s)?.[1] ?? 0);
    return {
      pid,
      rss: kb('VmRSS'),
      hwm: kb('VmHWM'),
      anon: kb('RssAnon'),
      file: kb('RssFile'),
      threads: kb('Threads'),
    };
  } catch {
    return undefined; // exited
  }
}

/** every process below `root` (pid → ppid from /proc/<pid>/stat) */
function descendants(root: number): number[] {
  const byParent = new Map<number, number[]>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = byParent.get(ppid) ?? [];
      list.push(Number(d));
      byParent.set(ppid, list);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of byParent.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(root);
  return out;
}

const cmdline = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
};

/** the stack's components by name: launcher, redis, broker, app (each with its own descendants, if any) */
function stackProcesses(): Record<string, number[]> {
  const mine = descendants(process.pid);
  const launcher = mine.find((p) => cmdline(p).includes('deploy/local/start.ts'));
  if (!launcher) throw new Error('the launcher (deploy/local/start.ts) is not a child of this process');
  const out: Record<string, number[]> = { launcher: [launcher] };
  const below = descendants(launcher);
  const name = (pid: number) => {
    const c = cmdline(pid);
    if (c.includes('redis-server')) return 'redis';
    if (c.includes('kafka-broker/main.ts')) return 'broker';
    if (c.includes('services/app/main.ts')) return 'app';
    return 'other';
  };
  for (const p of below) (out[name(p)] ??= []).push(p);
  return out;
}

interface Sample {
  totalKb: number;
  byComponent: Record<string, { rss: number; hwm: number; anon: number; file: number; threads: number }>;
}

function sample(procs: Record<string, number[]>): Sample {
  const byComponent: Sample['byComponent'] = {};
  let totalKb = 0;
  for (const [component, pids] of Object.entries(procs)) {
    const acc = { rss: 0, hwm: 0, anon: 0, file: 0, threads: 0 };
    for (const pid of pids) {
      const m = procStatus(pid);
      if (!m) continue;
      acc.rss += m.rss;
      acc.hwm += m.hwm;
      acc.anon += m.anon;
      acc.file += m.file;
      acc.threads += m.threads;
    }
    byComponent[component] = acc;
    totalKb += acc.rss;
  }
  return { totalKb, byComponent };
}

const ORDER = ['app', 'broker', 'redis', 'launcher', 'other'];
const perProcess = (s: Sample) =>
  ORDER.filter((c) => s.byComponent[c])
    .map((c) => `${c} ${mib(s.byComponent[c]!.rss)}`)
    .join(', ');

// ------------------------------------------------------------------------------------------------
// the events: time-ordered shopper sessions over the last SPAN_MS

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const QUERIES = COLORS.flatMap((c) =>
  PRODUCT_TYPES.flatMap((t) => [`${c.name} ${t.plural}`.toLowerCase(), `${c.name} ${t.name}`.toLowerCase()]),
).concat(PRODUCT_TYPES.map((t) => t.plural.toLowerCase()));
const COUNTRIES = ['US', 'US', 'US', 'GB', 'DE', 'FR', 'CA', 'AU', 'NL', 'ES'];
const DEVICES = ['desktop', 'mobile', 'mobile', 'tablet'] as const;

interface Session {
  id: string;
  left: number;
  country: string;
  device: (typeof DEVICES)[number];
  query: string | null;
  carted: string[];
  lastProduct: string | null;
}

/** An endless source of events: ACTIVE concurrent sessions, each event at the next tick of the clock. */
function eventSource(storeId: string, total: number, handles: string[]) {
  const r = rng(21);
  const ACTIVE = 2_000;
  const start = Date.now() - SPAN_MS;
  const step = SPAN_MS / total;
  const product = () => Math.floor(PRODUCTS * r() ** 3); // popularity skew: a few products get most views
  const newSession = (): Session => ({
    id: newUlid(),
    left: 2 + Math.floor(r() * 17), // 2-18 events, ≈ 10 on average
    country: COUNTRIES[Math.floor(r() * COUNTRIES.length)]!,
    device: DEVICES[Math.floor(r() * DEVICES.length)]!,
    query: null,
    carted: [],
    lastProduct: null,
  });
  const active: Session[] = Array.from({ length: ACTIVE }, newSession);
  let n = 0;
  return function next(): { key: string; value: EnrichedEvent } {
    const slot = Math.floor(r() * ACTIVE);
    const s = active[slot]!;
    const ts = new Date(start + n * step).toISOString();
    n++;
    const base = {
      ...EMPTY_EVENT_FIELDS,
      event_id: newUlid(),
      timestamp: ts,
      received_at: ts,
      timestamp_clamped: false,
      store_id: storeId,
      session_id: s.id,
      shopping_channel: 'web' as const,
      contextual_data: {},
      geo_country: s.country,
      geo_region: null,
      geo_city: null,
      device_type: s.device,
      browser: 'Chrome',
      os: 'Linux',
      is_bot: false,
    };
    let e: EnrichedEvent;
    const x = r();
    if (s.left === 1 && s.carted.length && r() < 0.3) {
      e = {
        ...base,
        event_type: 'purchase',
        order_id: String(6_500_000_000 + n),
        currency: 'USD',
        total_price: `${(s.carted.length * 39.99).toFixed(2)}`,
        line_items: s.carted.map((id) => ({
          product_id: productIdOf(Number(id)),
          variant_id: variantIdOf(Number(id), 0),
          quantity: 1,
          price: '39.99',
        })),
      };
    } else if (x < 0.1) {
      s.query = QUERIES[Math.floor(QUERIES.length * r() ** 2)]!;
      e = { ...base, event_type: 'autocomplete', query: s.query.slice(0, 2 + Math.floor(r() * 4)) };
    } else if (x < 0.22) {
      s.query = QUERIES[Math.floor(QUERIES.length * r() ** 2)]!;
      e = { ...base, event_type: 'search', query: s.query };
    } else if (x < 0.32) {
      const i = product();
      s.lastProduct = String(i);
      e = {
        ...base,
        event_type: 'product_click',
        product_id: productIdOf(i),
        position: 1 + Math.floor(r() * 24),
        query: s.query,
      };
    } else if (x < 0.75) {
      const i = s.lastProduct !== null && r() < 0.5 ? Number(s.lastProduct) : product();
      s.lastProduct = String(i);
      e = { ...base, event_type: 'product_view', product_id: productIdOf(i), variant_id: variantIdOf(i, 0) };
    } else if (x < 0.9) {
      e = { ...base, event_type: 'collection_view', collection_handle: handles[Math.floor(r() * handles.length)]! };
    } else {
      const i = s.lastProduct !== null ? Number(s.lastProduct) : product();
      s.carted.push(String(i));
      e = {
        ...base,
        event_type: 'add_to_cart',
        product_id: productIdOf(i),
        variant_id: variantIdOf(i, 0),
        quantity: 1,
        price: '39.99',
        currency: 'USD',
      };
    }
    if (--s.left <= 0) active[slot] = newSession();
    return { key: `${storeId}:${s.id}`, value: e };
  };
}

// ------------------------------------------------------------------------------------------------

process.stdout.write(
  `memory (single-node stack, ${fmt(PRODUCTS)} products, ${fmt(EVENTS)} events${Number.isFinite(MAX_MINUTES) ? `, ingestion capped at ${MAX_MINUTES} min` : ''})\n`,
);
const t0 = Date.now();
const app = await startDemoApp({
  products: PRODUCTS,
  sessions: 50,
  env: { STOREFRONT_RATE_LIMIT_PER_SEC: '0', STOREFRONT_RATE_LIMIT_PER_IP_PER_SEC: '0', LOG_LEVEL: 'info' },
});
const figures: Record<string, unknown> = { products: PRODUCTS, events_target: EVENTS, cores: os.cpus().length };
let exitCode = 0;
try {
  const kafkaUrl = (await app.waitFor(/Kafka \(embedded broker\)\s+(\S+)/, 300_000))[1]!;
  const registryUrl = (await app.waitFor(/Schema registry\s+(\S+)/, 60_000))[1]!;
  const procs = stackProcesses();
  log(`stack up in ${Math.round((Date.now() - t0) / 1000)} s: ${JSON.stringify(procs)}`);
  await app.waitFor(/demo: catalog loaded/, 3_600_000);
  log(`catalog loaded (${fmt(PRODUCTS)} products) after ${Math.round((Date.now() - t0) / 1000)} s`);
  await app.waitFor(/demo: shopper sessions replayed/, 3_600_000);
  const { store, storeId, token } = app.loaded();
  const handles = store.collections.map((c) => c.handle);
  const loadedSample = sample(procs);
  log(
    `demo store loaded after ${Math.round((Date.now() - t0) / 1000)} s; RSS ${mib(loadedSample.totalKb)} MiB (${perProcess(loadedSample)})`,
  );
  figures.after_catalog = summarize(loadedSample);

  // ---- ingestion
  const logger = createLogger('bench-memory', 'warn');
  const kafka = createKafka([kafkaUrl], 'bench-memory', logger);
  const codec = createValueCodec({ registryUrl });
  await registerPlatformSchemas(codec, { KAFKA_TOPIC_PREFIX: '' });
  const topic = TOPICS.events.name;
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 5, allowAutoTopicCreation: false });
  await producer.connect();
  const admin = kafka.admin();
  await admin.connect();
  const processedOf = async (group: string, t: string) => {
    const committed = await admin.fetchOffsets({ groupId: group, topics: [t] });
    let sum = 0;
    for (const p of committed[0]?.partitions ?? []) sum += Math.max(0, Number(p.offset));
    return sum;
  };
  const highOf = async (t: string) => (await admin.fetchTopicOffsets(t)).reduce((a, p) => a + Number(p.high), 0);
  const base = await highOf(topic); // the demo sessions' events
  const next = eventSource(storeId, EVENTS, handles);
  let produced = 0;
  let processed = Math.max(0, (await processedOf('streams.events', topic)) - base);
  let peak = sample(procs);
  const peakByComponent: Record<string, number> = {};
  const track = (s: Sample) => {
    if (s.totalKb > peak.totalKb) peak = s;
    for (const [c, m] of Object.entries(s.byComponent)) peakByComponent[c] = Math.max(peakByComponent[c] ?? 0, m.rss);
  };
  const ti = Date.now();
  let lastLog = 0;
  let lastProcessed = processed;
  let lastAt = ti;
  const progress = async (force = false) => {
    processed = Math.max(0, (await processedOf('streams.events', topic)) - base);
    const s = sample(procs);
    track(s);
    const now = Date.now();
    if (force || now - lastLog >= 5_000) {
      const rate = ((processed - lastProcessed) / (now - lastAt)) * 1000;
      log(
        `produced ${fmt(produced)}, processed ${fmt(processed)} (lag ${fmt(produced - processed)}, ${fmt(Math.round(rate))}/s now, ${fmt(Math.round((processed / (now - ti)) * 1000))}/s overall); RSS ${mib(s.totalKb)} MiB (${perProcess(s)})`,
      );
      lastLog = now;
      lastProcessed = processed;
      lastAt = now;
    }
  };
  const deadline = ti + MAX_MINUTES * 60_000;
  const BATCH = 2_000;
  let capped = false;
  let lastCheck = 0;
  while (produced < EVENTS) {
    if (Date.now() > deadline) {
      capped = true;
      log(`--max-minutes ${MAX_MINUTES} reached: producing stops at ${fmt(produced)} events`);
      break;
    }
    if (Date.now() - lastCheck >= 1_000) {
      await progress();
      lastCheck = Date.now();
    }
    if (produced - processed > MAX_LAG) {
      await new Promise((r) => setTimeout(r, 500));
      lastCheck = 0;
      continue;
    }
    // a few produce calls in flight (the idempotent producer keeps their order per partition)
    const sends: Promise<unknown>[] = [];
    for (let k = 0; k < 4 && produced < EVENTS; k++) {
      const n = Math.min(BATCH, EVENTS - produced);
      const messages = new Array(n);
      for (let i = 0; i < n; i++) {
        const e = next();
        messages[i] = { key: e.key, value: codec.encode(topic, e.value) };
      }
      produced += n;
      sends.push(producer.send({ topic, acks: -1, messages }));
    }
    await Promise.all(sends);
  }
  const producedAt = Date.now();
  log(`produced ${fmt(produced)} events in ${Math.round((producedAt - ti) / 1000)} s; waiting for the processors`);
  for (;;) {
    await progress();
    if (processed >= produced) break;
    await new Promise((r) => setTimeout(r, 1_000));
  }
  await progress(true);
  const ingestSeconds = (Date.now() - ti) / 1000;
  const rate = Math.round(produced / ingestSeconds);
  log(`${fmt(produced)} events processed in ${Math.round(ingestSeconds)} s (${fmt(rate)} events/s)`);
  await producer.disconnect();

  // ---- the read API over the whole store, after its periodic refreshes ran over it (60 s defaults)
  log('waiting 65 s for the read API refreshes (signals, trending) over the ingested events');
  const settleUntil = Date.now() + 65_000;
  while (Date.now() < settleUntil) {
    track(sample(procs));
    await new Promise((r) => setTimeout(r, 2_000));
  }
  const headers = { 'x-storefront-access-token': token, 'content-type': 'application/json' };
  const reads = { browse: 0, search: 0, autocomplete: 0, blocks: 0, similar: 0, image: 0, non2xx: 0 };
  // image search builds the store's feature matrix (services/storefront/images): a few demo images as queries
  const imageQueries = await Promise.all(
    allImageNames()
      .filter((_, i) => i % 97 === 0)
      .slice(0, 10)
      .map(async (name) => (await renderImage(parseImageName(name) as ImageSpec)).toString('base64')),
  );
  const call = async (kind: keyof typeof reads, url: string, body?: unknown) => {
    const r = await fetch(url, {
      method: body === undefined ? 'GET' : 'POST',
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await r.text();
    if (r.status === 200) reads[kind]++;
    else {
      // the first failure of each kind is printed: a read that never answers loads nothing it should
      if (!failedKinds.has(kind)) log(`${kind} answered ${r.status}: ${text.slice(0, 300)}`);
      failedKinds.add(kind);
      reads.non2xx++;
    }
  };
  const failedKinds = new Set<string>();
  const rr = rng(7);
  for (let i = 0; i < 300; i++) {
    const h = handles[i % handles.length]!;
    await call('browse', `${app.api}/browse/${encodeURIComponent(h)}`, {
      ...(i % 3 === 0
        ? { sort_order_code: 'price_asc', facets: ['vendor', 'options.*'], retrieveFacetCount: true }
        : {}),
      pagination: { limit: 24, page: 1 + (i % 4) },
    });
    const q = QUERIES[Math.floor(rr() * QUERIES.length)]!;
    await call('search', `${app.api}/search/${encodeURIComponent(q)}/execute`, { pagination: { limit: 24 } });
    await call('autocomplete', `${app.api}/search/complete?query=${encodeURIComponent(q.slice(0, 1 + (i % 5)))}`);
    // the demo's blocks (docs/demo.md): B01-B03 without an anchor, B04 (also viewed) and B05 (bought together)
    // on a product; similar products on a popular product (their precompute starts with a store's first one)
    const anchorId = productIdOf(Math.floor(PRODUCTS * rr() ** 3));
    const anchor = `gid://shopify/Product/${anchorId}`;
    const block = `01JDDEM0000000000000000B0${1 + (i % 5)}`;
    await call('blocks', `${app.api}/blocks/${block}/products`, i % 5 >= 3 ? { anchor_id: anchor } : {});
    await call('similar', `${app.api}/search/product/${anchorId}`, { pagination: { limit: 12 } });
    if (i % 30 === 0)
      await call('image', `${app.api}/search/image`, {
        image_data: imageQueries[(i / 30) % imageQueries.length],
        pagination: { limit: 12 },
      });
    if (i % 25 === 0) track(sample(procs));
  }
  log(`read API: ${JSON.stringify(reads)}`);
  const metricsUrl = app.output().match(/Metrics\s+(\S+)/)?.[1] ?? `http://127.0.0.1:${app.http}/metrics`;
  const metric = async (name: string) =>
    Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await (await fetch(metricsUrl)).text())?.[1] ?? Number.NaN);
  const similarUntil = Date.now() + SIMILAR_MINUTES * 60_000;
  let similarPrecomputed = await metric('storefront_similar_precomputed_products');
  while (Date.now() < similarUntil && !(similarPrecomputed >= PRODUCTS)) {
    log(`similar products precomputed: ${fmt(similarPrecomputed)} of ${fmt(PRODUCTS)}`);
    track(sample(procs));
    await new Promise((r) => setTimeout(r, 10_000));
    similarPrecomputed = await metric('storefront_similar_precomputed_products');
  }
  log(`similar products precomputed: ${fmt(similarPrecomputed)} of ${fmt(PRODUCTS)}`);
  await new Promise((r) => setTimeout(r, 5_000)); // the request events of those reads consumed
  const end = sample(procs);
  track(end);

  // ---- what the app and chDB say about their own memory
  const heap = await fetch(metricsUrl)
    .then((r) => r.text())
    .then((t) =>
      Object.fromEntries(
        t
          .split('\n')
          .filter((l) =>
            /^(nodejs_heap_size_(total|used)_bytes|nodejs_external_memory_bytes|process_resident_memory_bytes) /.test(
              l,
            ),
          )
          .map((l) => {
            const [k, v] = l.split(' ');
            return [k, Math.round(Number(v) / 1024 / 1024)];
          }),
      ),
    )
    .catch((err: Error) => ({ error: err.message }));
  const sql = async (query: string) => {
    const r = await fetch(
      `http://127.0.0.1:${app.clickhouse}/?query=${encodeURIComponent(`${query} FORMAT JSONCompact`)}`,
    );
    const text = await r.text();
    if (r.status !== 200) throw new Error(`${r.status} ${text.slice(0, 200)}`);
    return (JSON.parse(text) as { data: unknown[][] }).data;
  };
  const chdb: Record<string, unknown> = {};
  for (const [name, query] of [
    [
      'metrics_mib',
      "SELECT metric, value FROM system.metrics WHERE metric ILIKE '%memory%' OR metric ILIKE '%cache%bytes%' ORDER BY value DESC",
    ],
    [
      'parts_mib',
      'SELECT table, sum(primary_key_bytes_in_memory_allocated) AS pk, sum(rows) AS rows, count() AS parts FROM system.parts WHERE active GROUP BY table ORDER BY pk DESC LIMIT 12',
    ],
  ] as const) {
    try {
      const rows = await sql(query);
      chdb[name] =
        name === 'parts_mib'
          ? rows.map(([t, pk, n, parts]) => ({
              table: t,
              pk_mib: Math.round(Number(pk) / 1048576),
              rows: Number(n),
              parts: Number(parts),
            }))
          : Object.fromEntries(
              rows.map(([k, v]) => [
                k,
                /bytes|memory|jemalloc|Cache/i.test(String(k)) ? Math.round(Number(v) / 1048576) : Number(v),
              ]),
            );
    } catch (err) {
      chdb[name] = { error: (err as Error).message };
    }
  }
  // Redis: its memory, and what its keys are (a sample of SCAN, by the key's prefix up to the 3rd ':')
  const redisUrl = app.output().match(/Redis\s+(redis:\/\/\S+)/)?.[1];
  const redisFigures: Record<string, unknown> = {};
  if (redisUrl) {
    const redis = createRedis(redisUrl);
    try {
      const info = await redis.info('memory');
      for (const k of ['used_memory', 'used_memory_rss', 'used_memory_dataset', 'mem_fragmentation_ratio']) {
        const v = new RegExp(`^${k}:(\\S+)`, 'm').exec(info)?.[1];
        if (v !== undefined)
          redisFigures[k.endsWith('ratio') ? k : `${k}_mib`] = k.endsWith('ratio') ? Number(v) : mib(Number(v) / 1024);
      }
      redisFigures.keys = await redis.dbsize();
      const prefixes = new Map<string, number>();
      let cursor = '0';
      let seen = 0;
      do {
        const [c, keys] = await redis.scan(cursor, 'COUNT', 1000);
        cursor = c;
        for (const k of keys) {
          const p = k
            .split(':')
            .slice(0, 3)
            .join(':')
            .replace(/[0-9A-Z]{20,}.*/, '…');
          prefixes.set(p, (prefixes.get(p) ?? 0) + 1);
        }
        seen += keys.length;
      } while (cursor !== '0' && seen < 20_000);
      redisFigures.sampled_keys_by_prefix = Object.fromEntries([...prefixes].sort((a, b) => b[1] - a[1]).slice(0, 12));
      // the catalog writer's stale-write guard (services/catalog/version-guard.ts): per topic and store its
      // slot hashes, a field per record; summed per topic and store
      const guards: Record<string, { keys: number; fields: number; mib: number }> = {};
      let gc = '0';
      do {
        const [c, keys] = await redis.scan(gc, 'MATCH', 'sd:catalog:version:*', 'COUNT', 1000);
        gc = c;
        const pipe = redis.pipeline();
        for (const k of keys) pipe.call('MEMORY', 'USAGE', k, 'SAMPLES', '0').hlen(k);
        const replies = (await pipe.exec()) ?? [];
        keys.forEach((k, i) => {
          const g = (guards[k.replace(/:\d+$/, '')] ??= { keys: 0, fields: 0, mib: 0 });
          g.keys += 1;
          g.fields += Number(replies[2 * i + 1]?.[1] ?? 0);
          g.mib += Number(replies[2 * i]?.[1] ?? 0) / 1048576;
        });
      } while (gc !== '0');
      for (const g of Object.values(guards)) g.mib = Math.round(g.mib * 10) / 10;
      redisFigures.catalog_version_hashes = guards;
    } catch (err) {
      redisFigures.error = (err as Error).message;
    } finally {
      redis.disconnect();
    }
  }

  figures.events = produced;
  figures.complete = !capped;
  figures.ingest = { seconds: Math.round(ingestSeconds), events_per_second: rate, max_lag: MAX_LAG };
  figures.reads = reads;
  figures.similar_precomputed = similarPrecomputed;
  figures.rss_mib = mib(end.totalKb);
  figures.end = summarize(end);
  figures.peak_rss_mib = mib(peak.totalKb);
  figures.peak = summarize(peak);
  figures.peak_by_process_mib = Object.fromEntries(Object.entries(peakByComponent).map(([c, kb]) => [c, mib(kb)]));
  figures.app_heap_mib = heap;
  figures.chdb = chdb;
  figures.redis = redisFigures;
  figures.goal_rss_mib = GOAL_MIB;

  const mark = (v: number) => (v <= GOAL_MIB ? 'within' : 'over');
  const lines = [
    `stack RSS with ${fmt(PRODUCTS)} products and ${fmt(produced)} events${capped ? ` (capped: ${fmt(EVENTS)} asked)` : ''}, after ${reads.browse + reads.search + reads.autocomplete + reads.blocks + reads.similar + reads.image} read API requests:`,
    `  memory.rss_mib (end, stack total)      ${String(mib(end.totalKb)).padStart(6)} MiB   (${mark(mib(end.totalKb))} the goal ≤ ${GOAL_MIB} MiB)`,
    ...ORDER.filter((c) => end.byComponent[c]).map((c) => {
      const m = end.byComponent[c]!;
      return `    ${c.padEnd(34)}  ${String(mib(m.rss)).padStart(6)} MiB   (anon ${mib(m.anon)}, file ${mib(m.file)}; VmHWM ${mib(m.hwm)}; ${m.threads} threads)`;
    }),
    `  peak during ingestion (sampled total) ${String(mib(peak.totalKb)).padStart(6)} MiB   (${perProcess(peak)})`,
    `  after the catalog load               ${String(mib(loadedSample.totalKb)).padStart(6)} MiB   (${perProcess(loadedSample)})`,
    `  ingestion: ${fmt(produced)} events in ${Math.round(ingestSeconds)} s = ${fmt(rate)} events/s through the pipeline`,
    `  similar products precomputed: ${fmt(similarPrecomputed)} of ${fmt(PRODUCTS)} (--similar-minutes ${SIMILAR_MINUTES})`,
    `  app heap (main thread, /metrics): ${JSON.stringify(heap)}`,
    `  chDB (system tables, MiB): ${JSON.stringify(chdb)}`,
    `  Redis: ${JSON.stringify(redisFigures)}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (HEAP_OWNERS)
    for (const pid of procs.app ?? [])
      execFileSync(process.execPath, ['bench/heap-owners.ts', '--pid', String(pid), '--top', '25'], {
        stdio: 'inherit',
      });
  figures.wall_seconds = Math.round((Date.now() - t0) / 1000);
  recordFigures('memory', figures);
  await admin.disconnect();
  if (HOLD_SECONDS > 0) {
    log(
      `holding the stack for ${HOLD_SECONDS} s: ${JSON.stringify({ procs, api: app.api, sql: `http://127.0.0.1:${app.clickhouse}`, redisUrl, dataDir: app.dataDir })}`,
    );
    // ends early once BENCH_HOLD_RELEASE (a file path) exists
    const until = Date.now() + HOLD_SECONDS * 1000;
    const release = process.env.BENCH_HOLD_RELEASE;
    while (Date.now() < until && !(release && existsSync(release))) await new Promise((r) => setTimeout(r, 1000));
  }
} catch (err) {
  process.stderr.write(`${(err as Error).stack}\n`);
  exitCode = 1;
} finally {
  const file = await app.stop('sd-bench-memory.log');
  log(`stack output in ${file}`);
}
process.exit(exitCode);

function summarize(s: Sample) {
  return {
    total_mib: mib(s.totalKb),
    by_process_mib: Object.fromEntries(
      Object.entries(s.byComponent).map(([c, m]) => [
        c,
        { rss: mib(m.rss), anon: mib(m.anon), file: mib(m.file), hwm: mib(m.hwm), threads: m.threads },
      ]),
    ),
  };
}
