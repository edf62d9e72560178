// Fault run (not part of `npm test`): the single-node stack as `npm start` runs it (the launcher with its
// restart supervision) takes a generated stream with a known ground truth through POST /beacon while
// its children are SIGKILLed at random points and the broker is down for 30 s during steady intake. At
// the end every acknowledged event must be in events_raw exactly once and every aggregate the events
// feed must equal the ground truth. (events_raw is a ReplacingMergeTree by event_id: a chunk written
// twice under two dedup tokens merges away there, but not in the tables fed from the same chunk, the
// materialized views and the session processors; journal-overlaps.ts then names the chunk.)
//
//   npm run fault:combined                                  (1 000 000 events)
//   npm run fault:combined -- --events 50000 --seed 7       (options below)
//
// Options: --events N (events sent, the generator's duplicate deliveries included; default 1 000 000),
// --seed S (shape of the stream and of the fault schedule), --rate R (events/s the senders aim at;
// default N/300, so the intake lasts about 5 minutes and the faults land during it), --kills K (SIGKILLs
// of each of the app, the broker and Redis; default 3), --outage kill|stop|none (default kill, below),
// --outage-s S (default 30), --lanes L (concurrent senders; default 4), --timeout-s S (how long the
// catch-up may take after the intake; default 1800), --only app,broker,redis (the components SIGKILLed;
// default all three), --orders N, --catch-up-kills K, --burst F (below), --keep (keep the data directory).
//
// The stream: test/streams/scenario.ts (the generator of the exactly-once tests) for one store created
// for the run, its events sent as a browser would (server fields left to the beacon), 100 per request.
// The sessions are spread over `lanes` senders; each sends its events in order and retries a request
// answered 503 (after Retry-After) or not answered at all (connection refused while the app restarts)
// with the same body, so the same event ids (the beacon's dedup and the processors' make that safe),
// before it sends the next one: the order of a session's events is kept, as a browser's queue keeps it.
// Beside them, from the same generator: its orders as signed order webhooks (created, edited, cancelled,
// re-sent) and its search request events produced to the requests topic as the read API produces them
// (side-streams.ts), both spread over the intake and retried until acknowledged, so the aggregates built
// from them (trending, searches served, sales, co-purchase) are checked too. --orders N sets the orders
// (default one per 20 shoppers).
//
// The faults, in a seeded random order at seeded random points of the intake (each once the previous
// one is over: the launcher logged the restart and the beacon answered 201 again):
//   - SIGKILL of the app, the broker and Redis (`--kills` each), found as the launcher's children the way
//     test/foundation/launcher-restart.test.ts finds them; the launcher restarts each after its backoff;
//   - the broker down for 30 s (`--outage kill`): the broker is SIGKILLed while the launcher is held
//     with SIGSTOP, so nothing restarts it: its port refuses connections for 30 s, as a crashed broker
//     that nobody restarts at once. Then the launcher continues (SIGCONT), sees the exit and restarts
//     the broker after its backoff. (The launcher's children do not depend on it while it is stopped:
//     their output goes straight to this script, and the app and broker only watch the IPC channel
//     for a disconnect.) `--outage stop` instead freezes the broker itself for 30 s (SIGSTOP/SIGCONT):
//     a hung broker or a partition, where connections stay open and requests go unanswered.
//   During the outage every request started and answered within it must be answered 503 with a
//   Retry-After of at least 1 s; the 201s, 503s and other answers are counted.
//   - After the intake, while the processors still work through the backlog it left (consumer lag > 0),
//     `--catch-up-kills K` more SIGKILLs of each component (default 1), each once the previous one is
//     over; one that would come after the lag reached 0 is reported as skipped. The backlog: the last
//     `--burst F` of each sender's events (default 0.2) go out unpaced, as fast as the beacon answers,
//     a spike the processors end behind.
//
// Progress goes to stderr every 5 s; at the end a summary on stdout and bench/out/faults-combined.json.
// Exit code 0 when nothing acknowledged is lost or doubled and every aggregate is exact, 1 otherwise.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import pino from 'pino';
import { freePorts } from '../../deploy/local/stack.ts';
import { dlqTopic, TOPICS } from '../../schemas/topics.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { openConfigWriter } from '../../services/store-config/writer.ts';
import { rng } from '../streams/helpers.ts';
import { generateScenario, type Truth } from '../streams/scenario.ts';
import { httpQuery, normalizeTruth, readAggregates } from '../streams/truth.ts';
import { journalOverlaps } from './journal-overlaps.ts';
import { orderWebhooks, requestEvents } from './side-streams.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const OUT_FILE = path.join(REPO, 'bench/out/faults-combined.json');

// ---- options ----------------------------------------------------------------------------------------
function option(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const num = (name: string, fallback: number) => {
  const v = option(name);
  if (v === undefined) return fallback;
  const n = Number(v.replaceAll('_', ''));
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} expects a number, got ${v}`);
  return n;
};
const EVENTS = num('events', 1_000_000);
const SEED = num('seed', 20261127);
const RATE = num('rate', Math.max(50, Math.ceil(EVENTS / 300)));
const KILLS = num('kills', 3);
const OUTAGE = (option('outage') ?? 'kill') as 'kill' | 'stop' | 'none';
if (!['kill', 'stop', 'none'].includes(OUTAGE)) throw new Error('--outage expects kill, stop or none');
const OUTAGE_MS = num('outage-s', 30) * 1000;
const LANES = num('lanes', 4);
const CATCH_UP_TIMEOUT_MS = num('timeout-s', 1800) * 1000;
const KEEP = process.argv.includes('--keep');
const ORDERS = option('orders') === undefined ? undefined : num('orders', 0);
const CATCH_UP_KILLS = num('catch-up-kills', 1);
const BURST = num('burst', 0.2);
if (BURST > 1) throw new Error('--burst expects a share of the stream, 0 to 1');
const ONLY = (option('only') ?? 'app,broker,redis').split(',').filter(Boolean) as ('app' | 'broker' | 'redis')[];
if (!ONLY.every((c) => ['app', 'broker', 'redis'].includes(c))) throw new Error('--only expects app,broker,redis');
/** after the catch-up, aggregates unchanged for this long while different from the truth: the final answer */
const SETTLED_MS = 60_000;
const BATCH = 100;
const WEBHOOK_SECRET = 'fault-run-webhook-secret';
const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';

const t0 = Date.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(0)} s`;
const say = (line: string) => void process.stderr.write(`[${elapsed()}] ${line}\n`);

// ---- the stack --------------------------------------------------------------------------------------
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-faults-combined-'));
const [httpPort, kafkaPort, registryPort, chPort, redisPort] = (await freePorts(5)) as [
  number,
  number,
  number,
  number,
  number,
];
const base = `http://127.0.0.1:${httpPort}`;
const chUrl = `http://127.0.0.1:${chPort}`;
const logFile = path.join(dataDir, 'launcher.log');
const log = createWriteStream(logFile);
/** the launcher's supervisor lines (restarts), kept to find "restarted" after a kill */
let supervisor = '';
let launcherOut = '';

say(`starting the single-node stack (data in ${dataDir}, launcher output in ${logFile})`);
const launcher: ChildProcess = spawn(process.execPath, ['deploy/local/start.ts'], {
  cwd: REPO,
  env: {
    ...process.env,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    HTTP_PORT: String(httpPort),
    KAFKA_PORT: String(kafkaPort),
    SCHEMA_REGISTRY_PORT: String(registryPort),
    CLICKHOUSE_HTTP_PORT: String(chPort),
    REDIS_PORT: String(redisPort),
    KAFKA_BROKERS: '',
    REDIS_URL: '',
    CLICKHOUSE_URL: '',
    SCHEMA_REGISTRY_URL: '',
    DEMO_STORE: 'false',
    CATALOG_WEBHOOK_SECRET: WEBHOOK_SECRET,
    // every planned SIGKILL of a component (and the outage's) inside the launcher's crash window: the run
    // tests what survives them, not the crash-loop limit (test/foundation/launcher-give-up.test.ts does)
    LAUNCHER_MAX_CRASHES: String(KILLS + CATCH_UP_KILLS + 2),
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
  detached: true, // its own process group, as a shell gives a foreground job
});
for (const stream of [launcher.stdout!, launcher.stderr!]) {
  stream.on('data', (d: Buffer) => {
    log.write(d);
    const text = d.toString();
    if (launcherOut.length < 1_000_000) launcherOut += text;
    for (const line of text.split('\n')) if (line.startsWith('launcher: ')) supervisor += `${line}\n`;
  });
}
let launcherExit: string | undefined;
launcher.once('exit', (code, signal) => {
  launcherExit = `code ${code}, signal ${signal}`;
});

let stopped = false;
async function stopStack() {
  if (stopped || launcherExit) return;
  stopped = true;
  const gone = new Promise((r) => launcher.once('exit', r));
  try {
    process.kill(-launcher.pid!, 'SIGCONT'); // in case a fault left something stopped
    process.kill(-launcher.pid!, 'SIGINT'); // Ctrl-C: the whole foreground group
  } catch {}
  const timer = setTimeout(() => {
    try {
      process.kill(-launcher.pid!, 'SIGKILL');
    } catch {}
  }, 60_000);
  await gone;
  clearTimeout(timer);
}
process.once('SIGINT', () => {
  void stopStack().then(() => process.exit(130));
});

async function waitUntil(what: string, ok: () => Promise<boolean> | boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (launcherExit) throw new Error(`the launcher exited (${launcherExit}) while waiting for ${what}`);
    try {
      if (await ok()) return;
    } catch {}
    await sleep(250);
  }
  throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
}

/** pid of the launcher's child whose command line matches `re` */
function childPid(re: RegExp): number | undefined {
  let out = '';
  try {
    out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(launcher.pid)], { encoding: 'utf8' });
  } catch {
    return undefined; // ps exits 1 when the launcher has no children
  }
  const line = out.split('\n').find((l) => re.test(l));
  return line ? Number(line.trim().split(/\s+/)[0]) : undefined;
}
const COMPONENTS = {
  app: /services\/app\/main/,
  broker: /kafka-broker\/main/,
  redis: /redis-server/,
} as const;
type Component = keyof typeof COMPONENTS;

// ---- metrics and aggregates -------------------------------------------------------------------------
async function consumerLag(): Promise<number | undefined> {
  try {
    const r = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(5_000) });
    if (r.status !== 200) return undefined;
    let lag = 0;
    let seen = false;
    for (const line of (await r.text()).split('\n')) {
      if (!line.startsWith('stream_consumer_lag{')) continue;
      seen = true;
      lag += Number(line.slice(line.lastIndexOf(' ') + 1)) || 0;
    }
    return seen ? lag : undefined;
  } catch {
    return undefined;
  }
}

const query = httpQuery(chUrl);
async function sql(text: string): Promise<Record<string, unknown>[] | undefined> {
  try {
    return await query(text);
  } catch {
    return undefined; // the app (which serves the analysts' endpoint) restarting
  }
}

// ---- main -------------------------------------------------------------------------------------------
let exitCode = 1;
try {
  await waitUntil('the launcher to report the stack up', () => launcherOut.includes('Press Ctrl-C to stop.'), 240_000);
  await waitUntil('/readyz', async () => (await fetch(`${base}/readyz`)).status === 200, 180_000);
  const writer = openConfigWriter({
    brokers: [`127.0.0.1:${kafkaPort}`],
    registryUrl: `http://127.0.0.1:${registryPort}`,
    logger: pino({ level: 'error' }),
  });
  const created = await writer.createStore({ name: 'Combined faults' });
  const last = writer.lastWritten()!;
  await writer.close();
  const store = { storeId: created.storeId, token: created.token };
  await waitUntil(
    'the app to know the new store',
    async () => {
      const r = await fetch(
        `${base}/internal/store-config/caught-up?partition=${last.partition}&offset=${last.offset}&wait_ms=2000`,
      );
      return ((await r.json()) as { caught_up?: boolean }).caught_up === true;
    },
    60_000,
  );
  say(`stack up (http ${base}, analysts' SQL ${chUrl}); store ${store.storeId}`);

  // ---- the stream and its ground truth ----
  const visits = Math.max(1, Math.round(EVENTS / 10.8)); // test/streams/scenario.ts sends ≈ 10.8 events a visit
  const sc = generateScenario({
    seed: SEED,
    stores: [store.storeId],
    visitsPerStore: visits,
    ordersPerStore: ORDERS ?? Math.ceil(visits / 20),
  });
  const want = normalizeTruth(sc.truth);
  const SERVER_FIELDS = new Set([
    'store_id',
    'received_at',
    'geo_country',
    'geo_region',
    'geo_city',
    'device_type',
    'browser',
    'os',
    'is_bot',
    'timestamp_clamped',
  ]);
  /** per lane: its events as a browser sends them, in order */
  const laneEvents: string[][] = Array.from({ length: LANES }, () => []);
  const laneOf = new Map<string, number>();
  const uniqueIds = new Set<string>();
  for (const { key, value } of sc.events) {
    let lane = laneOf.get(key);
    if (lane === undefined) {
      lane = laneOf.size % LANES;
      laneOf.set(key, lane);
    }
    const client: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (SERVER_FIELDS.has(k) || v === null) continue;
      if (Array.isArray(v) && v.length === 0) continue;
      if (typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0) continue;
      client[k] = v;
    }
    laneEvents[lane]!.push(JSON.stringify(client));
    uniqueIds.add(value.event_id);
  }
  const sent = sc.events.length;
  sc.events.length = 0;
  const expectedRaw = want.eventsRaw[store.storeId] ?? 0;
  if (expectedRaw !== uniqueIds.size) throw new Error(`truth ${expectedRaw} ≠ ${uniqueIds.size} unique event ids`);
  /** per lane: request bodies with their event ids */
  const lanes = laneEvents.map((evs) => {
    const batches: { body: string; ids: string[] }[] = [];
    for (let i = 0; i < evs.length; i += BATCH) {
      const slice = evs.slice(i, i + BATCH);
      batches.push({
        body: `{"events":[${slice.join(',')}]}`,
        ids: slice.map((s) => (JSON.parse(s) as { event_id: string }).event_id),
      });
    }
    return batches;
  });
  laneEvents.length = 0;
  say(
    `stream: ${sent} events to send (${uniqueIds.size} distinct, the rest the generator's duplicate deliveries), ` +
      `${visits} shoppers, ${LANES} senders at ${RATE} events/s in all, ${BATCH} a request`,
  );

  // ---- the senders ----
  const stats = {
    requests: 0,
    ok: 0,
    status503: 0,
    retryAfterMissing: 0,
    connectionErrors: 0,
    otherStatus: {} as Record<string, number>,
    eventsAcked: 0, // events in 201 answers, duplicates included
    duplicatesReported: 0,
    rejected: 0,
  };
  const ackedIds = new Set<string>();
  let last201 = 0;
  /** faults whose recovery is measured: the first 201 to a request started after `at` */
  const recoveries: { at: number; answered?: number }[] = [];
  const recovery = (at: number) => {
    const r: { at: number; answered?: number } = { at };
    recoveries.push(r);
    return r;
  };
  /** answers seen while an outage is on (request started and answered inside it) */
  const outage = { on: false, from: 0, to: 0, s201: 0, s503: 0, retryAfterMin: Number.POSITIVE_INFINITY, other: 0 };
  let budget = RATE; // a token bucket of events, at most 1 s worth (or one request)
  let budgetAt = Date.now();
  const take = async (n: number) => {
    for (;;) {
      const now = Date.now();
      budget = Math.min(Math.max(RATE, BATCH), budget + ((now - budgetAt) / 1000) * RATE);
      budgetAt = now;
      if (budget >= n) {
        budget -= n;
        return;
      }
      await sleep(Math.ceil(((n - budget) / RATE) * 1000));
    }
  };
  const sendLane = async (batches: { body: string; ids: string[] }[]) => {
    const burstFrom = Math.floor(batches.length * (1 - BURST));
    for (const [i, b] of batches.entries()) {
      if (i < burstFrom) await take(b.ids.length);
      for (;;) {
        if (launcherExit) throw new Error(`the launcher exited (${launcherExit})`);
        const started = Date.now();
        let status: number;
        let retryAfter: string | null = null;
        let body: { accepted?: number; duplicates?: number; rejected?: number } = {};
        try {
          const r = await fetch(`${base}/beacon`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-storefront-access-token': store.token, 'user-agent': UA },
            body: b.body,
            signal: AbortSignal.timeout(60_000),
          });
          status = r.status;
          retryAfter = r.headers.get('retry-after');
          const text = await r.text();
          if (status === 201) body = JSON.parse(text) as typeof body;
        } catch {
          status = 0; // refused, reset, timed out: the app restarting
        }
        stats.requests++;
        const answered = Date.now();
        if (outage.on && started >= outage.from && answered <= outage.to) {
          if (status === 201) outage.s201++;
          else if (status === 503 && Number(retryAfter) >= 1) {
            outage.s503++;
            outage.retryAfterMin = Math.min(outage.retryAfterMin, Number(retryAfter));
          } else outage.other++;
        }
        if (status === 201) {
          stats.ok++;
          stats.eventsAcked += body.accepted ?? 0;
          stats.duplicatesReported += body.duplicates ?? 0;
          stats.rejected += body.rejected ?? 0;
          for (const id of b.ids) ackedIds.add(id);
          last201 = answered;
          for (const r of recoveries) if (r.answered === undefined && started > r.at) r.answered = answered;
          break;
        }
        let wait = 500;
        if (status === 503) {
          stats.status503++;
          if (retryAfter === null) stats.retryAfterMissing++;
          wait = Math.min(5_000, Math.max(1, Number(retryAfter) || 1) * 1000);
        } else if (status === 0) stats.connectionErrors++;
        else {
          stats.otherStatus[status] = (stats.otherStatus[status] ?? 0) + 1;
          if (status >= 400 && status < 500 && status !== 429) throw new Error(`POST /beacon answered ${status}`);
        }
        await sleep(wait * (0.75 + Math.random() * 0.5));
      }
    }
  };

  // ---- the faults ----
  const rand = rng(SEED ^ 0x5eed);
  type Fault = { kind: 'kill'; component: Component } | { kind: 'outage' };
  const faults: Fault[] = [];
  for (let k = 0; k < KILLS; k++) for (const component of ONLY) faults.push({ kind: 'kill', component });
  for (let i = faults.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [faults[i], faults[j]] = [faults[j]!, faults[i]!];
  }
  // the kills at random points of the intake (as a share of the events acknowledged), the outage in the
  // middle third, when the intake is steady
  const points = faults.map(() => 0.03 + rand() * 0.85).sort((a, b) => a - b);
  const schedule: { fault: Fault; at: number }[] = faults.map((fault, i) => ({ fault, at: points[i]! }));
  if (OUTAGE !== 'none') {
    schedule.push({ fault: { kind: 'outage' }, at: 0.35 + rand() * 0.25 });
    schedule.sort((a, b) => a.at - b.at);
  }
  const kills: Record<Component, number> = { app: 0, broker: 0, redis: 0 };
  const faultLog: Record<string, unknown>[] = [];
  let intakeDone = false;

  /** a component's restart logged after `mark` (characters of the supervisor's lines) */
  const restartedAfter = (component: string, mark: number) =>
    new RegExp(`${component} restarted \\(pid \\d+\\), serving again after ([\\d.]+) s`).exec(supervisor.slice(mark));
  /** over once the launcher logged the restart and the beacon answered 201 since */
  const recovered = async (component: string, mark: number, r: { at: number; answered?: number }) => {
    await waitUntil(`${component} restarted`, () => restartedAfter(component, mark) !== null, 180_000);
    await waitUntil('a 201 after the fault', () => r.answered !== undefined || intakeDone, 180_000);
    return {
      restart_s: Number(restartedAfter(component, mark)![1]),
      intake_outage_s: r.answered !== undefined ? (r.answered - r.at) / 1000 : undefined,
    };
  };
  const killAndRecover = async (component: Component, where: string) => {
    const pid = childPid(COMPONENTS[component]);
    if (!pid) throw new Error(`no ${component} process under the launcher`);
    const mark = supervisor.length;
    const rec = recovery(Date.now());
    process.kill(pid, 'SIGKILL');
    kills[component]++;
    say(`fault: SIGKILL ${component} (pid ${pid}) at ${where}`);
    const r = await recovered(component, mark, rec);
    say(
      `fault: ${component} restarted by the launcher, serving again ${r.restart_s} s after its restart` +
        (intakeDone ? '' : `; intake answered 201 again ${r.intake_outage_s?.toFixed(1) ?? '–'} s after the kill`),
    );
    return { fault: `SIGKILL ${component}`, at: where, ...r };
  };
  const runFaults = async () => {
    for (const { fault, at } of schedule) {
      await waitUntil(
        `${Math.round(at * 100)} % of the intake`,
        () => intakeDone || ackedIds.size >= at * uniqueIds.size,
        3_600_000,
      );
      const where = `${Math.round((ackedIds.size / uniqueIds.size) * 100)} % acknowledged${intakeDone ? ', intake over' : ''}`;
      if (fault.kind === 'kill') faultLog.push(await killAndRecover(fault.component, where));
      else {
        if (intakeDone) throw new Error('the intake ended before the broker outage (raise --events or lower --rate)');
        const pid = childPid(COMPONENTS.broker);
        if (!pid) throw new Error('no broker process under the launcher');
        const mark = supervisor.length;
        outage.from = Date.now();
        const rec = recovery(outage.from);
        outage.to = outage.from + OUTAGE_MS;
        outage.on = true;
        if (OUTAGE === 'kill') {
          process.kill(launcher.pid!, 'SIGSTOP'); // nobody restarts the broker for now
          process.kill(pid, 'SIGKILL');
        } else process.kill(pid, 'SIGSTOP');
        say(
          `fault: broker ${OUTAGE === 'kill' ? 'SIGKILLed, launcher held' : 'frozen (SIGSTOP)'} for ${OUTAGE_MS / 1000} s at ${where}`,
        );
        const acked0 = ackedIds.size;
        await sleep(OUTAGE_MS);
        const ackedDuring = ackedIds.size - acked0;
        if (OUTAGE === 'kill') process.kill(launcher.pid!, 'SIGCONT');
        else process.kill(pid, 'SIGCONT');
        const back = Date.now();
        say(
          `fault: outage over (${outage.s503} × 503 + Retry-After, ${outage.s201} × 201, ${outage.other} other answers ` +
            `to requests started and answered within it); broker ${OUTAGE === 'kill' ? 'restarting' : 'resumed'}`,
        );
        let r: { restart_s?: number; intake_outage_s?: number };
        if (OUTAGE === 'kill') r = await recovered('broker', mark, rec);
        else {
          await waitUntil('a 201 after the outage', () => last201 > back || intakeDone, 180_000);
          r = { intake_outage_s: rec.answered !== undefined ? (rec.answered - rec.at) / 1000 : undefined };
        }
        outage.on = false;
        say(`fault: intake answered 201 again ${r.intake_outage_s?.toFixed(1)} s after the outage began`);
        faultLog.push({
          fault:
            OUTAGE === 'kill'
              ? `broker down ${OUTAGE_MS / 1000} s (SIGKILL, restart held)`
              : `broker frozen ${OUTAGE_MS / 1000} s (SIGSTOP)`,
          at: where,
          answers_503_with_retry_after: outage.s503,
          answers_201: outage.s201,
          other_answers: outage.other,
          min_retry_after_s: Number.isFinite(outage.retryAfterMin) ? outage.retryAfterMin : null,
          events_acknowledged_during: ackedDuring,
          ...r,
        });
      }
    }
  };

  // ---- progress ----
  let lastLag: number | undefined;
  let lastRaw: number | undefined;
  const progress = setInterval(() => {
    void (async () => {
      lastLag = await consumerLag();
      const rows = await sql(
        `SELECT (SELECT count() FROM discovery.events_raw WHERE store_id = '${store.storeId}') AS raw,
                (SELECT sum(views) FROM discovery.product_daily_engagement WHERE store_id = '${store.storeId}') AS views,
                (SELECT count() FROM (SELECT session_id, seq FROM discovery.sessions WHERE store_id = '${store.storeId}' GROUP BY session_id, seq)) AS sessions`,
      );
      lastRaw = rows ? Number(rows[0]!.raw) : lastRaw;
      const agg = rows
        ? `events_raw ${rows[0]!.raw}/${expectedRaw}, views ${rows[0]!.views}/${sumOf(want.views)}, sessions ${rows[0]!.sessions}/${want.sessions[store.storeId] ?? 0}`
        : 'aggregates: analysts’ endpoint not answering';
      say(
        `acked ${ackedIds.size}/${uniqueIds.size} events (${stats.ok} × 201, ${stats.status503} × 503, ` +
          `${stats.connectionErrors} refused) | lag ${lastLag ?? '–'} | ${agg} | faults ${faultLog.length}/${schedule.length}`,
      );
    })();
  }, 5_000);

  // the orders and request events, spread over the intake's expected length
  const intakeExpectedS = Math.max(1, sent / RATE);
  const check = () => {
    if (launcherExit) throw new Error(`the launcher exited (${launcherExit})`);
  };
  const orderLane = orderWebhooks({
    base,
    storeId: store.storeId,
    secret: WEBHOOK_SECRET,
    orders: sc.orders.map((o) => o.value),
    rate: sc.orders.length / intakeExpectedS,
    check,
  });
  const requestLane = requestEvents({
    brokers: [`127.0.0.1:${kafkaPort}`],
    registryUrl: `http://127.0.0.1:${registryPort}`,
    requests: sc.requests,
    batch: BATCH,
    rate: sc.requests.length / intakeExpectedS,
    check,
  });
  say(`and ${sc.orders.length} order webhooks, ${sc.requests.length} search request events on the requests topic`);

  const intakeStart = Date.now();
  const faultsDone = runFaults();
  faultsDone.catch(() => {});
  await Promise.all([...lanes.map(sendLane), orderLane.run(), requestLane.run()]);
  intakeDone = true;
  const intakeS = (Date.now() - intakeStart) / 1000;
  say(`intake over: ${ackedIds.size} events acknowledged in ${intakeS.toFixed(0)} s`);
  await faultsDone;

  // ---- kills during the catch-up: while the processors work through the backlog the intake left ----
  const catchUpStart = Date.now();
  const catchUpFaults: Component[] = [];
  for (let k = 0; k < CATCH_UP_KILLS; k++) catchUpFaults.push(...ONLY);
  const catchUpLog: Record<string, unknown>[] = [];
  for (const component of catchUpFaults) {
    await sleep(rand() * 3_000);
    // the lag as the app reports it once its consumers are up again (none reported while they join)
    let lag = await consumerLag();
    for (const until = Date.now() + 120_000; lag === undefined && Date.now() < until; ) {
      await sleep(500);
      lag = await consumerLag();
    }
    if (!lag) {
      say(`fault: no SIGKILL of ${component} during the catch-up: the processors had caught up (lag ${lag ?? '–'})`);
      catchUpLog.push({ fault: `SIGKILL ${component}`, at: 'catch-up', skipped: `lag ${lag ?? 'unknown'}` });
      continue;
    }
    catchUpLog.push(await killAndRecover(component, `catch-up, lag ${lag}`));
  }

  let got: Truth | undefined;
  let settledSince = 0;
  for (;;) {
    if (launcherExit) throw new Error(`the launcher exited (${launcherExit})`);
    if (Date.now() - catchUpStart > CATCH_UP_TIMEOUT_MS) break;
    const lag = await consumerLag();
    if (lag === 0 && lastRaw !== undefined && lastRaw >= expectedRaw) {
      const now = await readAggregates(query).catch(() => undefined);
      if (now) {
        const same = got !== undefined && isDeepStrictEqual(got, now);
        got = now;
        if (isDeepStrictEqual(comparable(got, store.storeId), comparable(want, store.storeId))) break;
        // caught up and unchanged, yet different: that is the result
        if (!same) settledSince = Date.now();
        else if (Date.now() - settledSince >= SETTLED_MS) break;
      }
    } else settledSince = Date.now();
    await sleep(5_000);
  }
  clearInterval(progress);
  const catchUpS = (Date.now() - catchUpStart) / 1000;
  got ??= await readAggregates(query);

  // ---- the checks ----
  // in slices: the analysts' endpoint caps a result at CLICKHOUSE_HTTP_MAX_RESULT_ROWS (1 000 000)
  const SLICES = Math.max(1, Math.ceil(uniqueIds.size / 200_000));
  const stored = new Map<string, number>();
  for (let i = 0; i < SLICES; i++) {
    const rows = await query(
      `SELECT event_id, count() AS n FROM discovery.events_raw WHERE store_id = '${store.storeId}' AND cityHash64(event_id) % ${SLICES} = ${i} GROUP BY event_id`,
    );
    for (const r of rows) stored.set(String(r.event_id), Number(r.n));
  }
  let lost = 0;
  for (const id of ackedIds) if (!stored.has(id)) lost++;
  let doubled = 0;
  for (const n of stored.values()) if (n > 1) doubled++;
  const unexpected = [...stored.keys()].filter((id) => !uniqueIds.has(id)).length;
  const differing: string[] = [];
  const g = comparable(got, store.storeId);
  const w = comparable(want, store.storeId);
  for (const name of Object.keys(w)) {
    if (!isDeepStrictEqual(g[name], w[name])) differing.push(`${name}: ${describeDiff(g[name] ?? {}, w[name] ?? {})}`);
  }
  // too high somewhere: look for the same offsets journaled under two boundaries (journal-overlaps.ts)
  const overlaps = differing.length ? journalOverlaps(path.join(dataDir, 'redis')) : [];
  const kafka = createKafka([`127.0.0.1:${kafkaPort}`], 'faults-combined', pino({ level: 'error' }));
  const admin = kafka.admin();
  await admin.connect();
  let dlq = 0;
  try {
    for (const topic of [TOPICS.events.name, TOPICS.requests.name, TOPICS.orders.name]) {
      try {
        dlq += (await admin.fetchTopicOffsets(dlqTopic(topic))).reduce((n, p) => n + Number(p.high), 0);
      } catch {
        // no DLQ topic: nothing was ever dead-lettered
      }
    }
  } finally {
    await admin.disconnect();
  }

  const unknownAcks =
    ackedIds.size !== uniqueIds.size ||
    orderLane.stats.acked !== orderLane.stats.total ||
    requestLane.stats.acked !== requestLane.stats.total;
  const ok =
    !unknownAcks &&
    lost === 0 &&
    doubled === 0 &&
    unexpected === 0 &&
    differing.length === 0 &&
    dlq === 0 &&
    stats.rejected === 0 &&
    stats.retryAfterMissing === 0 &&
    schedule.every((_, i) => faultLog[i]) &&
    catchUpLog.length === catchUpFaults.length &&
    (OUTAGE === 'none' || (outage.s201 === 0 && outage.other === 0 && outage.s503 > 0));
  const outageLog = faultLog.find((f) => String(f.fault).startsWith('broker ')) as
    | { min_retry_after_s?: number | null; intake_outage_s?: number }
    | undefined;
  const outages = faultLog.map((f) => Number(f.intake_outage_s ?? 0));
  const summary = {
    ok,
    command: `npm run fault:combined -- ${process.argv.slice(2).join(' ')}`.trim(),
    seed: SEED,
    events_sent: sent,
    distinct_events: uniqueIds.size,
    rate_target_events_per_s: RATE,
    senders: LANES,
    acknowledged: ackedIds.size,
    acknowledged_events_in_201s: stats.eventsAcked,
    duplicates_reported_by_beacon: stats.duplicatesReported,
    rejected: stats.rejected,
    lost,
    doubled,
    unexpected_in_events_raw: unexpected,
    dlq,
    aggregates_compared: Object.keys(w),
    aggregates_differing: differing,
    journal_overlaps: overlaps.map((o) => `${o.key}: [${o.earlier.join('..')}] and [${o.later.join('..')}]`),
    kills,
    outage: OUTAGE === 'none' ? null : { mode: OUTAGE, seconds: OUTAGE_MS / 1000, ...outageLog },
    requests: stats.requests,
    answers_201: stats.ok,
    answers_503: stats.status503,
    answers_503_without_retry_after: stats.retryAfterMissing,
    connection_errors: stats.connectionErrors,
    other_answers: stats.otherStatus,
    max_intake_outage_s: Math.max(0, ...outages),
    faults: faultLog,
    faults_during_catch_up: catchUpLog,
    order_webhooks: orderLane.stats,
    request_events: requestLane.stats,
    intake_s: Math.round(intakeS),
    intake_events_per_s: Math.round(sent / intakeS),
    catch_up_after_intake_s: Math.round(catchUpS),
    wall_s: Math.round((Date.now() - t0) / 1000),
    launcher_restarts: supervisor.split('\n').filter((l) => / restarted \(pid/.test(l)).length,
    at: new Date().toISOString(),
  };
  mkdirSync(path.dirname(OUT_FILE), { recursive: true });
  writeFileSync(OUT_FILE, `${JSON.stringify(summary, null, 2)}\n`);
  const lines = [
    '',
    `Combined faults, ${sent} events sent (${uniqueIds.size} distinct) through POST /beacon, seed ${SEED}:`,
    `  kills: app ${kills.app}, broker ${kills.broker}, Redis ${kills.redis} (restarted by the launcher ${summary.launcher_restarts} times)`,
    OUTAGE === 'none'
      ? '  no broker outage'
      : `  broker ${OUTAGE === 'kill' ? 'down' : 'frozen'} ${OUTAGE_MS / 1000} s: ${outage.s503} × 503 with Retry-After (≥ ${outageLog?.min_retry_after_s ?? '–'} s), ` +
        `${outage.s201} × 201, ${outage.other} other answers; intake back ${outageLog?.intake_outage_s?.toFixed(1) ?? '–'} s after it began`,
    `  answers: ${stats.ok} × 201, ${stats.status503} × 503 (${stats.retryAfterMissing} without Retry-After), ${stats.connectionErrors} refused/reset, other ${JSON.stringify(stats.otherStatus)}`,
    `  max intake outage ${summary.max_intake_outage_s.toFixed(1)} s (fault → next 201)`,
    `  acknowledged ${ackedIds.size} of ${uniqueIds.size}; in events_raw ${stored.size}; lost ${lost}, doubled ${doubled}, unexpected ${unexpected}, rejected ${stats.rejected}, in the DLQ ${dlq}`,
    `  order webhooks: ${orderLane.stats.acked} of ${orderLane.stats.total} answered 200 (${orderLane.stats.retries} retried); ` +
      `search request events: ${requestLane.stats.acked} of ${requestLane.stats.total} acknowledged by Kafka (${requestLane.stats.retries} batches re-sent)`,
    `  during the catch-up: ${catchUpLog.map((f) => `${f.fault}${f.skipped ? ' (skipped: caught up)' : ` at ${f.at}`}`).join(', ') || 'no faults'}`,
    `  aggregates (${Object.keys(w).join(', ')}): ${differing.length === 0 ? 'all equal the ground truth' : `DIFFERENT — ${differing.join('; ')}`}`,
    ...overlaps.map(
      (o) =>
        `  the batch journal ${o.key} recorded [${o.earlier.join('..')}] and [${o.later.join('..')}]: ` +
        'the same offsets written under two dedup tokens',
    ),
    `  intake ${summary.intake_s} s (${summary.intake_events_per_s} events/s), catch-up after it ${summary.catch_up_after_intake_s} s, wall time ${summary.wall_s} s`,
    `  ${ok ? 'OK' : 'FAILED'} (summary in ${path.relative(REPO, OUT_FILE)})`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  exitCode = ok ? 0 : 1;
} catch (err) {
  process.stderr.write(`\nfault run failed: ${(err as Error).stack}\n`);
  process.stderr.write(`launcher supervisor lines:\n${supervisor}\n`);
  exitCode = 1;
} finally {
  await stopStack();
  log.end();
  if (exitCode === 0 && !KEEP) rmSync(dataDir, { recursive: true, force: true });
  else process.stderr.write(`data directory kept: ${dataDir}\n`);
  process.exit(exitCode);
}

function sumOf(m: Record<string, number>): number {
  return Object.values(m).reduce((a, b) => a + b, 0);
}

/** every aggregate of the truth, for the run's store */
function comparable(t: Truth, storeId: string): Record<string, Record<string, unknown>> {
  const mine = <V>(m: Record<string, V>) =>
    Object.fromEntries(Object.entries(m).filter(([k]) => k === storeId || k.startsWith(`${storeId}|`)));
  return {
    eventsRaw: mine(t.eventsRaw),
    views: mine(t.views),
    clicks: mine(t.clicks),
    addToCarts: mine(t.addToCarts),
    impressions: mine(t.impressions),
    coView: mine(t.coView),
    coCart: mine(t.coCart),
    searchedViewed: mine(t.searchedViewed),
    searchedCarted: mine(t.searchedCarted),
    viewedBought: mine(t.viewedBought),
    searchedPurchased: mine(t.searchedPurchased),
    sessions: mine(t.sessions),
    sessionEvents: mine(t.sessionEvents),
    trending: mine(t.trending),
    searches: mine(t.searches),
    units: mine(t.units),
    orders: mine(t.orders),
    revenue: mine(t.revenue),
    coPurchase: mine(t.coPurchase),
  };
}

function describeDiff(got: Record<string, unknown>, want: Record<string, unknown>): string {
  const keys = new Set([...Object.keys(got), ...Object.keys(want)]);
  const diffs: string[] = [];
  let delta = 0;
  for (const k of keys) {
    if (got[k] === want[k]) continue;
    diffs.push(`${k} got ${got[k] ?? '∅'} want ${want[k] ?? '∅'}`);
    delta += Number(got[k] ?? 0) - Number(want[k] ?? 0);
  }
  const total = Number.isFinite(delta) ? `, in all ${delta > 0 ? '+' : ''}${delta}` : '';
  return `${diffs.length} keys differ${total} (${diffs.slice(0, 5).join(', ')}${diffs.length > 5 ? ', …' : ''})`;
}
