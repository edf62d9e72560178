// Distributed mode on one machine: every service its own process (`node deploy/service.ts <name>`,
// configured by environment only) around the embedded broker and a Redis: the ClickHouse stand-in, the
// schema registry, the intake, two processor processes in the same consumer groups and the storefront
// read API. Beacon events reach the aggregates through the stand-in; the read API's own request events
// do too; when one processor process is SIGKILLed the other takes its partitions over, when another
// joins they are shared again, and every acknowledged event is counted exactly once throughout.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, type WriteStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AssignerProtocol, Kafka, logLevel } from 'kafkajs';
import pino from 'pino';
import { ulid } from 'ulid';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePorts, kafkaAnswers } from '../../deploy/local/stack.ts';
import { type ConfigWriter, openConfigWriter } from '../../services/store-config/writer.ts';
import { type RedisServer, startRedis } from '../helpers/redis.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const CH_USER = 'distributed';
const CH_PASSWORD = 'topology-test-secret';

interface Proc {
  name: string;
  child: ChildProcess;
  urls: Record<string, string>;
}

let dir: string;
let log: WriteStream;
let redis: RedisServer;
let broker: ChildProcess;
let brokers: string;
let clickhouseUrl: string;
let registryUrl: string;
const procs: Proc[] = [];
let writer: ConfigWriter;

function spawnLogged(name: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  for (const s of [child.stdout, child.stderr]) s?.on('data', (b: Buffer) => log.write(`[${name}] ${b}`));
  return child;
}

/** `node deploy/service.ts <service>` with its own data directory and HTTP port; resolves on its ready message. */
async function startService(name: string, service: string, env: Record<string, string>, args: string[] = []) {
  const [port] = await freePorts(1);
  const dataDir = path.join(dir, name);
  mkdirSync(dataDir, { recursive: true });
  const child = spawnLogged(name, ['deploy/service.ts', service, ...args], {
    ...process.env,
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    HTTP_PORT: String(port),
    KAFKA_BROKERS: brokers,
    REDIS_URL: redis.url,
    CLICKHOUSE_USER: CH_USER,
    CLICKHOUSE_PASSWORD: CH_PASSWORD,
    LOG_LEVEL: 'warn',
    DEMO_STORE: 'false',
    SERVICE_BUILD: 'test',
    STREAMS_SESSION_TIMEOUT_MS: '6000',
    ...env,
  });
  const urls = await new Promise<Record<string, string>>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} not ready within 90 s (see ${dir}/services.log)`)),
      90_000,
    );
    child.on('message', (m: { type?: string; urls?: Record<string, string> }) => {
      if (m.type === 'ready') {
        clearTimeout(timer);
        resolve(m.urls ?? {});
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? signal}) before it was ready (see ${dir}/services.log)`));
    });
  });
  const p = { name, child, urls };
  procs.push(p);
  return p;
}

async function stopProc(p: Proc, signal: NodeJS.Signals = 'SIGTERM') {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise((r) => p.child.once('exit', r));
  p.child.kill(signal);
  await exited;
}

/** SQL through the stand-in's HTTP interface (JSONEachRow rows). */
async function sql<T>(query: string, params: Record<string, string> = {}): Promise<T[]> {
  const qs = new URLSearchParams({ database: 'discovery', default_format: 'JSONEachRow' });
  for (const [k, v] of Object.entries(params)) qs.set(`param_${k}`, v);
  const r = await fetch(`${clickhouseUrl}/?${qs}`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${CH_USER}:${CH_PASSWORD}`).toString('base64')}` },
    body: query,
  });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`SQL ${r.status}: ${text}`);
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'sd-distributed-'));
  log = createWriteStream(path.join(dir, 'services.log'));
  redis = await startRedis();
  const [brokerPort, chPort, registryPort] = await freePorts(3);
  brokers = `127.0.0.1:${brokerPort}`;
  broker = spawnLogged('broker', ['services/kafka-broker/main.ts'], {
    ...process.env,
    BROKER_HOST: '127.0.0.1',
    BROKER_PORT: String(brokerPort),
    BROKER_DATA_DIR: path.join(dir, 'broker'),
    LOG_LEVEL: 'warn',
  });
  const deadline = Date.now() + 30_000;
  while (!(await kafkaAnswers('127.0.0.1', brokerPort))) {
    if (Date.now() > deadline) throw new Error('the embedded broker did not start');
    await new Promise((r) => setTimeout(r, 100));
  }

  const ch = await startService('clickhouse', 'clickhouse', { CLICKHOUSE_HTTP_PORT: String(chPort) });
  clickhouseUrl = ch.urls.clickhouse;
  const registry = await startService('registry', 'schema-registry', {
    CLICKHOUSE_URL: clickhouseUrl,
    SCHEMA_REGISTRY_PORT: String(registryPort),
  });
  registryUrl = registry.urls.schemaRegistry;
  const env = { CLICKHOUSE_URL: clickhouseUrl, SCHEMA_REGISTRY_URL: registryUrl };
  // one at a time: each runs the (idempotent) migrations and topic creation on start
  await startService('intake', 'intake', env);
  await startService('processors-a', 'processors', env, ['--processor', 'events,requests']);
  await startService('processors-b', 'processors', env, ['--processor', 'events,requests']);
  await startService('storefront', 'storefront', env);
  writer = openConfigWriter({
    brokers: [brokers],
    registryUrl,
    clientId: 'distributed-test-writer',
    logger: pino({ level: 'fatal' }),
  });
}, 300_000);

afterAll(async () => {
  await writer?.close();
  for (const p of [...procs].reverse()) await stopProc(p);
  if (broker && broker.exitCode === null) {
    const exited = new Promise((r) => broker.once('exit', r));
    broker.kill('SIGTERM');
    await exited;
  }
  await redis?.stop();
  log?.end();
  if (dir && !process.env.KEEP_DISTRIBUTED_DATA) rmSync(dir, { recursive: true, force: true });
}, 120_000);

const proc = (name: string) => {
  const p = procs.find((x) => x.name === name);
  if (!p) throw new Error(`no process ${name}`);
  return p;
};

async function createStore(name: string, services: string[]) {
  const created = await writer.createStore({ name });
  const w = writer.lastWritten();
  if (!w) throw new Error('the writer wrote nothing');
  for (const s of services) {
    await expect
      .poll(
        async () => {
          const r = await fetch(
            `${proc(s).urls.http}/internal/store-config/caught-up?partition=${w.partition}&offset=${w.offset}&wait_ms=1000`,
          );
          return r.ok && ((await r.json()) as { caught_up: boolean }).caught_up;
        },
        { timeout: 30_000 },
      )
      .toBe(true);
  }
  return created;
}

/** The members of a consumer group and the partitions of `topic` each one holds (sorted). */
async function groupAssignment(group: string, topic: string): Promise<number[][]> {
  const admin = new Kafka({
    brokers: [brokers],
    clientId: 'distributed-test-admin',
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    const [g] = (await admin.describeGroups([group])).groups;
    if (g.state !== 'Stable') return [];
    return g.members
      .map((m) => AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment[topic] ?? [])
      .map((ps) => [...ps].sort((a, b) => a - b))
      .sort((a, b) => a.length - b.length || a[0] - b[0]);
  } finally {
    await admin.disconnect();
  }
}

/** POST a batch of product views to the intake; the number of events it acknowledged (not duplicates). */
async function sendViews(token: string, session: string, products: number[]): Promise<number> {
  const now = Date.now();
  const events = products.map((p, i) => ({
    event_id: ulid(),
    event_type: 'product_view',
    timestamp: new Date(now - 5_000 + i).toISOString(),
    session_id: session,
    product_id: p,
  }));
  const r = await fetch(`${proc('intake').urls.http}/beacon`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'user-agent': UA, 'x-storefront-access-token': token },
    body: JSON.stringify({ events }),
  });
  if (r.status !== 201) return 0; // not acknowledged: the client would retry it, it does not count
  const body = (await r.json()) as { accepted: number; duplicates: number; rejected: number };
  expect(body.rejected).toBe(0);
  return body.accepted - body.duplicates;
}

test('every service answers /readyz with the stand-in, the broker and Redis behind it', async () => {
  for (const p of procs.filter((x) => x.urls.http)) {
    const r = await fetch(`${p.urls.http}/readyz`);
    expect({ service: p.name, status: r.status, body: await r.text() }).toMatchObject({
      service: p.name,
      status: 200,
    });
  }
});

test('beacon events reach the aggregates through the stand-in; a storefront request is recorded too', {
  timeout: 120_000,
}, async () => {
  const store = await createStore('distributed topology', ['intake', 'storefront']);
  const acked = await sendViews(store.token, 's-first', [101, 102, 101]);
  expect(acked).toBe(3);
  await expect
    .poll(
      () =>
        sql<{ p: string; v: number }>(
          'SELECT toString(product_id) AS p, toUInt32(sum(views)) AS v FROM product_daily_engagement WHERE store_id = {s:String} GROUP BY p ORDER BY p',
          { s: store.storeId },
        ),
      { timeout: 60_000, interval: 250 },
    )
    .toEqual([
      { p: '101', v: 2 },
      { p: '102', v: 1 },
    ]);

  // the read API (its own process) answers and its request event goes through Kafka, the processors and
  // the stand-in like the beacon's
  const r = await fetch(`${proc('storefront').urls.http}/api/storefront/v1/search/linen/execute`, {
    method: 'POST',
    headers: { 'x-storefront-access-token': store.token, 'content-type': 'application/json', 'user-agent': UA },
    body: JSON.stringify({ identity: { sessionId: 's-first' } }),
  });
  expect(r.status, await r.clone().text()).toBe(200);
  const requestId = r.headers.get('x-request-id') ?? '';
  await expect
    .poll(
      async () =>
        (
          await sql<{ n: number }>('SELECT toUInt32(count()) AS n FROM requests_raw WHERE request_id = {r:String}', {
            r: requestId,
          })
        )[0]?.n,
      { timeout: 60_000, interval: 250 },
    )
    .toBe(1);
});

test('a processor process SIGKILLed mid-stream: the other takes its partitions over; one joining shares them again; nothing lost or doubled', {
  timeout: 240_000,
}, async () => {
  const store = await createStore('distributed failover', ['intake']);
  const products = Array.from({ length: 10 }, (_, i) => 1_000 + i);
  let acked = 0;
  const send = async (from: number, to: number) => {
    for (let b = from; b < to; b++) acked += await sendViews(store.token, `s-${b}`, products);
  };
  const counts = () =>
    sql<{ rows: number; ids: number; views: number }>(
      `SELECT
         (SELECT toUInt32(count()) FROM events_raw WHERE store_id = {s:String}) AS rows,
         (SELECT toUInt32(uniqExact(event_id)) FROM events_raw WHERE store_id = {s:String}) AS ids,
         (SELECT toUInt32(sum(views)) FROM product_daily_engagement WHERE store_id = {s:String}) AS views`,
      { s: store.storeId },
    );

  // both processors consume (each partition of the events topic has one of them)
  await send(0, 20);
  await expect
    .poll(async () => (await counts())[0], { timeout: 60_000, interval: 250 })
    .toEqual({
      rows: acked,
      ids: acked,
      views: acked,
    });

  // one consumer group, two members, each holding some of the events topic's partitions
  const before = await groupAssignment('streams.events', 'storefront.events.v1');
  expect(before).toHaveLength(2);
  for (const ps of before) expect(ps.length).toBeGreaterThan(0);
  const all = before.flat().sort((a, b) => a - b);

  // sessions spread over the partitions: half of the batches land on the killed process's partitions
  const sending = send(20, 60);
  await new Promise((r) => setTimeout(r, 300));
  await stopProc(proc('processors-a'), 'SIGKILL');
  await sending;
  await send(60, 80);
  expect(acked).toBe(80 * products.length);

  // the survivor holds every partition once the group settled without the killed member
  await expect
    .poll(() => groupAssignment('streams.events', 'storefront.events.v1'), { timeout: 60_000, interval: 500 })
    .toEqual([all]);
  // it joins the partitions after the session timeout (6 s) and resumes from the committed
  // offsets: what the killed process had inserted but not committed comes again, with the same dedup
  // tokens and event ids
  await expect
    .poll(async () => (await counts())[0], { timeout: 120_000, interval: 500 })
    .toEqual({
      rows: acked,
      ids: acked,
      views: acked,
    });
  // and stays so (nothing arrives late, twice)
  await new Promise((r) => setTimeout(r, 2_000));
  expect((await counts())[0]).toEqual({ rows: acked, ids: acked, views: acked });

  // a processor process joins: the group rebalances onto both, and the count stays exact across it
  const env = { CLICKHOUSE_URL: clickhouseUrl, SCHEMA_REGISTRY_URL: registryUrl };
  const joining = startService('processors-c', 'processors', env, ['--processor', 'events,requests']);
  const sendingDuringJoin = send(80, 100);
  await joining;
  await sendingDuringJoin;
  await expect
    .poll(async () => (await groupAssignment('streams.events', 'storefront.events.v1')).length, {
      timeout: 60_000,
      interval: 500,
    })
    .toBe(2);
  const after = await groupAssignment('streams.events', 'storefront.events.v1');
  expect(after.flat().sort((a, b) => a - b)).toEqual(all);
  for (const ps of after) expect(ps.length).toBeGreaterThan(0);
  await send(100, 120);
  expect(acked).toBe(120 * products.length);
  await expect
    .poll(async () => (await counts())[0], { timeout: 120_000, interval: 500 })
    .toEqual({
      rows: acked,
      ids: acked,
      views: acked,
    });
});
