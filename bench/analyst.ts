// Analyst benchmark: `node bench/analyst.ts` — what a long analyst query on the SQL endpoint (port 8123)
// does to the rest of a real single-node stack (redis-server, embedded broker, app with the processors
// and chDB in process).
//
// For each value of the analysts' max_threads (BENCH_ANALYST_THREADS, default "1,2"; one stack each, with
// CLICKHOUSE_HTTP_MAX_EXECUTION_TIME=BENCH_ANALYST_SECONDS, default 10) two phases of the same load:
//   - beacon events: BENCH_BEACON_RPS POST /beacon requests/s (default 50) of 10 events each;
//   - the read API: BENCH_READ_RPS GET /search/complete requests/s (default 100), each emitting a request
//     event (the requests processor's input);
// "before" and "after": the load alone; "during": the load while one analyst query runs until the engine stops it at
// max_execution_time (`SELECT sum(sipHash64(number)) FROM numbers(1e13)`, an unbounded CPU-bound scan).
// Figures per phase: event freshness (broker append → committed into ClickHouse, per processor, from the
// app's stream_event_freshness_seconds histogram: mean and bucket bounds of p50/p99), read-API latency
// p50/p99, beacon latency p99. Printed, and written to bench/out/latest.json under "analyst".
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { newUlid } from '../services/common/ids.ts';
import { freePorts, startStack } from '../deploy/local/stack.ts';
import { loadConfig } from '../services/common/config.ts';
import { openConfigWriter } from '../services/store-config/writer.ts';
import { recordFigures } from './out.ts';

const THREADS = (process.env.BENCH_ANALYST_THREADS ?? '1,2').split(',').map(Number);
const ANALYST_SECONDS = Number(process.env.BENCH_ANALYST_SECONDS ?? 10);
const BEACON_RPS = Number(process.env.BENCH_BEACON_RPS ?? 50);
const READ_RPS = Number(process.env.BENCH_READ_RPS ?? 100);
const ANALYST_QUERY = 'SELECT sum(sipHash64(number)) FROM numbers(1e13)';

const pct = (xs: number[], p: number) => {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x: number) => Math.round(x * 10) / 10;

interface Freshness {
  count: number;
  meanSeconds: number;
  p50AtMostSeconds: number;
  p99AtMostSeconds: number;
}
interface Phase {
  seconds: number;
  beaconRequests: number;
  beaconP99Ms: number;
  readRequests: number;
  readP50Ms: number;
  readP99Ms: number;
  readMaxMs: number;
  freshness: Record<string, Freshness>;
  /** CPU seconds per second of the app process (JS, processors, chDB's threads, the analyst query) */
  appCpuPerSecond: number;
  /** the machine's 1-minute load average at the end of the phase (other processes compete for the cores) */
  loadAverage: number;
  analyst?: { seconds: number; status: number; exceptionCode: string | null };
}

/** cumulative bucket counts of stream_event_freshness_seconds per processor (live mode) */
async function freshnessHistogram(base: string) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const out = new Map<string, { buckets: Map<number, number>; sum: number; count: number }>();
  const get = (p: string) => {
    let h = out.get(p);
    if (!h) {
      h = { buckets: new Map(), sum: 0, count: 0 };
      out.set(p, h);
    }
    return h;
  };
  for (const m of text.matchAll(/^stream_event_freshness_seconds_(bucket|sum|count)\{([^}]*)\} (\S+)$/gm)) {
    const labels = m[2];
    if (!labels.includes('mode="live"')) continue;
    const p = /processor="([^"]+)"/.exec(labels)?.[1] ?? '?';
    const h = get(p);
    if (m[1] === 'sum') h.sum += Number(m[3]);
    else if (m[1] === 'count') h.count += Number(m[3]);
    else {
      const le = /le="([^"]+)"/.exec(labels)?.[1] ?? '+Inf';
      const k = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le);
      h.buckets.set(k, (h.buckets.get(k) ?? 0) + Number(m[3]));
    }
  }
  return out;
}

function freshnessBetween(
  a: Awaited<ReturnType<typeof freshnessHistogram>>,
  b: Awaited<ReturnType<typeof freshnessHistogram>>,
): Record<string, Freshness> {
  const res: Record<string, Freshness> = {};
  for (const [p, hb] of b) {
    const ha = a.get(p);
    const count = hb.count - (ha?.count ?? 0);
    if (count <= 0) continue;
    const les = [...hb.buckets.keys()].sort((x, y) => x - y);
    const bound = (q: number) => {
      for (const le of les) if ((hb.buckets.get(le) ?? 0) - (ha?.buckets.get(le) ?? 0) >= q * count) return le;
      return Number.POSITIVE_INFINITY;
    };
    res[p] = {
      count,
      meanSeconds: Math.round(((hb.sum - (ha?.sum ?? 0)) / count) * 1000) / 1000,
      p50AtMostSeconds: bound(0.5),
      p99AtMostSeconds: bound(0.99),
    };
  }
  return res;
}

/** CPU seconds (user + system) a process used so far, from /proc (Linux); NaN elsewhere */
function cpuSecondsOf(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

function beaconBody(): string {
  const now = new Date().toISOString();
  const prefix = newUlid().slice(0, 22);
  const events = Array.from({ length: 10 }, (_, i) => ({
    event_id: `${prefix}${String(i).padStart(4, '0')}`,
    event_type: i % 2 ? 'product_view' : 'product_impression',
    timestamp: now,
    session_id: `s-${i % 5}`,
    product_id: 1000 + i,
    position: i + 1,
  }));
  return JSON.stringify({ events });
}

/** fixed-rate requests until `until()` resolves; latencies in ms */
async function paced(rps: number, send: () => Promise<Response>, until: Promise<unknown>) {
  const latencies: number[] = [];
  const inflight = new Set<Promise<void>>();
  let stop = false;
  until.then(() => {
    stop = true;
  });
  const t0 = performance.now();
  let sent = 0;
  while (!stop) {
    const due = t0 + (sent * 1000) / rps;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (stop) break;
    sent++;
    const started = performance.now();
    const p = send()
      .then(async (r) => {
        await r.arrayBuffer();
        if (r.status >= 400) throw new Error(`status ${r.status}`);
        latencies.push(performance.now() - started);
      })
      .catch(() => {})
      .finally(() => inflight.delete(p));
    inflight.add(p);
  }
  await Promise.all(inflight);
  return latencies;
}

async function runStack(threads: number) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `sd-bench-analyst-${threads}-`));
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
    STOREFRONT_RATE_LIMIT_PER_SEC: '1000000',
    STOREFRONT_RATE_LIMIT_BURST: '1000000',
    STOREFRONT_RATE_LIMIT_PER_IP_PER_SEC: '1000000',
    STOREFRONT_RATE_LIMIT_PER_IP_BURST: '1000000',
    CLICKHOUSE_HTTP_MAX_EXECUTION_TIME: String(ANALYST_SECONDS),
    CLICKHOUSE_HTTP_MAX_THREADS: String(threads),
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
    const base = stack.urls.http;
    const sqlUrl = stack.urls.clickhouse ?? `http://127.0.0.1:${clickhouse}`;
    const writer = openConfigWriter({
      brokers: [`127.0.0.1:${kafka}`],
      registryUrl: `http://127.0.0.1:${registry}`,
      clientId: 'bench-analyst',
    });
    const store = await writer.createStore({ name: 'analyst bench' });
    await writer.close();
    for (;;) {
      const r = await fetch(
        `${base}/internal/store-config/caught-up?partition=${store.partition}&offset=${store.offset}&wait_ms=2000`,
      );
      if (r.ok && ((await r.json()) as { caught_up: boolean }).caught_up) break;
    }
    const headers = { 'x-storefront-access-token': store.token, 'user-agent': 'Mozilla/5.0 (bench) Chrome/120.0' };
    let n = 0;
    const read = () =>
      fetch(`${base}/api/storefront/v1/search/complete?query=${encodeURIComponent(`analyst bench ${n++ % 500}`)}`, {
        headers,
      });
    const beacon = () => fetch(`${base}/beacon`, { method: 'POST', headers, body: beaconBody() });

    const phase = async (until: Promise<unknown>): Promise<Phase> => {
      const h0 = await freshnessHistogram(base);
      const cpu0 = cpuSecondsOf(stack.children.app?.pid);
      const t0 = performance.now();
      const [b, r] = await Promise.all([paced(BEACON_RPS, beacon, until), paced(READ_RPS, read, until)]);
      const seconds = (performance.now() - t0) / 1000;
      const cpu = cpuSecondsOf(stack.children.app?.pid) - cpu0;
      // events appended in the phase commit up to a few hundred ms later
      await new Promise((res) => setTimeout(res, 2000));
      const h1 = await freshnessHistogram(base);
      return {
        seconds: Math.round(seconds * 10) / 10,
        beaconRequests: b.length,
        beaconP99Ms: ms(pct(b, 99)),
        readRequests: r.length,
        readP50Ms: ms(pct(r, 50)),
        readP99Ms: ms(pct(r, 99)),
        readMaxMs: ms(Math.max(...r)),
        freshness: freshnessBetween(h0, h1),
        appCpuPerSecond: Math.round((cpu / seconds) * 100) / 100,
        loadAverage: Math.round(os.loadavg()[0] * 10) / 10,
      };
    };

    // warm-up: processors joined, first inserts done
    await phase(new Promise((r) => setTimeout(r, 5000)));
    const before = await phase(new Promise((r) => setTimeout(r, ANALYST_SECONDS * 1000)));
    const a0 = performance.now();
    const analystDone = fetch(`${sqlUrl}/`, { method: 'POST', body: ANALYST_QUERY }).then(async (r) => {
      await r.text();
      return {
        seconds: Math.round((performance.now() - a0) / 100) / 10,
        status: r.status,
        exceptionCode: r.headers.get('x-clickhouse-exception-code'),
      };
    });
    const during = await phase(analystDone);
    during.analyst = await analystDone;
    const after = await phase(new Promise((r) => setTimeout(r, ANALYST_SECONDS * 1000)));
    return { threads, before, during, after };
  } finally {
    await stack.stop();
    if (!process.env.KEEP_BENCH_DATA) rmSync(dataDir, { recursive: true, force: true });
  }
}

const results = [];
for (const t of THREADS) results.push(await runStack(t));

const line = (label: string, p: Phase) => {
  const f = Object.entries(p.freshness)
    .map(
      ([proc, x]) =>
        `${proc} mean ${x.meanSeconds} s, p50 ≤ ${x.p50AtMostSeconds} s, p99 ≤ ${x.p99AtMostSeconds} s (n=${x.count} chunks)`,
    )
    .join('; ');
  return [
    `  ${label.padEnd(7)} app CPU ${p.appCpuPerSecond} s/s (load average ${p.loadAverage}); read API p50 ${p.readP50Ms} ms, p99 ${p.readP99Ms} ms, max ${p.readMaxMs} ms (${p.readRequests} requests); beacon p99 ${p.beaconP99Ms} ms (${p.beaconRequests} requests)`,
    `          freshness, broker append → committed into ClickHouse (newest message of each committed chunk): ${f}`,
  ];
};
const out = [
  `analyst benchmark: one ${ANALYST_SECONDS} s analyst query (${ANALYST_QUERY}, stopped by max_execution_time) against`,
  `  ${BEACON_RPS} beacon requests/s × 10 events and ${READ_RPS} read-API requests/s, full single-node stack (${os.cpus().length} cores)`,
];
for (const r of results) {
  out.push(
    `CLICKHOUSE_HTTP_MAX_THREADS=${r.threads}: analyst query answered ${r.during.analyst?.status} (code ${r.during.analyst?.exceptionCode}) after ${r.during.analyst?.seconds} s`,
    ...line('before', r.before),
    ...line('during', r.during),
    ...line('after', r.after),
  );
}
process.stdout.write(`${out.join('\n')}\n`);

recordFigures('analyst', {
  cores: os.cpus().length,
  analystSeconds: ANALYST_SECONDS,
  beaconRps: BEACON_RPS,
  readRps: READ_RPS,
  query: ANALYST_QUERY,
  results,
});
process.exit(0);
