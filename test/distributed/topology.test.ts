// Distributed mode on one machine: every service its own process (`node deploy/service.ts <name>`,
// configured by environment only) around the embedded broker and a Redis: the ClickHouse stand-in, the
// schema registry, the intake, two processor processes in the same consumer groups and the storefront
// read API. Beacon events reach the aggregates through the stand-in; the read API's own request events
// do too; when one processor process is SIGKILLed the other takes its partitions over, when another
// joins they are shared again, and every acknowledged event is counted exactly once throughout.
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePorts, kafkaAnswers } from '../../deploy/local/stack.ts';
import { type RedisServer, startRedis } from '../helpers/redis.ts';
import { createTopology, type Topology, UA } from './helpers.ts';

let t: Topology;
let redis: RedisServer;
let broker: ChildProcess;

beforeAll(async () => {
  t = createTopology();
  redis = await startRedis();
  t.redisUrl = redis.url;
  const [brokerPort, chPort, registryPort] = await freePorts(3);
  t.brokers = `127.0.0.1:${brokerPort}`;
  broker = t.spawnLogged('broker', ['services/kafka-broker/main.ts'], {
    ...process.env,
    BROKER_HOST: '127.0.0.1',
    BROKER_PORT: String(brokerPort),
    BROKER_DATA_DIR: path.join(t.dir, 'broker'),
    LOG_LEVEL: 'warn',
  });
  const deadline = Date.now() + 30_000;
  while (!(await kafkaAnswers('127.0.0.1', brokerPort))) {
    if (Date.now() > deadline) throw new Error('the embedded broker did not start');
    await new Promise((r) => setTimeout(r, 100));
  }

  await t.startStandIn(chPort);
  await t.startRegistry(registryPort);
  // one at a time: each runs the (idempotent) migrations and topic creation on start
  await t.startService('intake', 'intake');
  await t.startService('processors-a', 'processors', {}, ['--processor', 'events,requests']);
  await t.startService('processors-b', 'processors', {}, ['--processor', 'events,requests']);
  await t.startService('storefront', 'storefront');
}, 300_000);

afterAll(async () => {
  await t?.close(async () => {
    if (broker && broker.exitCode === null) {
      const exited = new Promise((r) => broker.once('exit', r));
      broker.kill('SIGTERM');
      await exited;
    }
    await redis?.stop();
  });
}, 120_000);

test('every service answers /readyz with the stand-in, the broker and Redis behind it', async () => {
  for (const p of t.procs.filter((x) => x.urls.http)) {
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
  const store = await t.createStore('distributed topology', ['intake', 'storefront']);
  const acked = await t.sendViews(store.token, 's-first', [101, 102, 101]);
  expect(acked).toBe(3);
  await expect
    .poll(
      () =>
        t.sql<{ p: string; v: number }>(
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
  const r = await fetch(`${t.proc('storefront').urls.http}/api/storefront/v1/search/linen/execute`, {
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
          await t.sql<{ n: number }>('SELECT toUInt32(count()) AS n FROM requests_raw WHERE request_id = {r:String}', {
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
  const store = await t.createStore('distributed failover', ['intake']);
  const products = Array.from({ length: 10 }, (_, i) => 1_000 + i);
  let acked = 0;
  const send = async (from: number, to: number) => {
    for (let b = from; b < to; b++) acked += await t.sendViews(store.token, `s-${b}`, products);
  };
  const counts = () =>
    t.sql<{ rows: number; ids: number; views: number }>(
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
  const before = await t.groupAssignment('streams.events', 'storefront.events.v1');
  expect(before).toHaveLength(2);
  for (const ps of before) expect(ps.length).toBeGreaterThan(0);
  const all = before.flat().sort((a, b) => a - b);

  // sessions spread over the partitions: half of the batches land on the killed process's partitions
  const sending = send(20, 60);
  await new Promise((r) => setTimeout(r, 300));
  await t.stopProc(t.proc('processors-a'), 'SIGKILL');
  await sending;
  await send(60, 80);
  expect(acked).toBe(80 * products.length);

  // the survivor holds every partition once the group settled without the killed member
  await expect
    .poll(() => t.groupAssignment('streams.events', 'storefront.events.v1'), { timeout: 60_000, interval: 500 })
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
  const joining = t.startService('processors-c', 'processors', {}, ['--processor', 'events,requests']);
  const sendingDuringJoin = send(80, 100);
  await joining;
  await sendingDuringJoin;
  await expect
    .poll(async () => (await t.groupAssignment('streams.events', 'storefront.events.v1')).length, {
      timeout: 60_000,
      interval: 500,
    })
    .toBe(2);
  const after = await t.groupAssignment('streams.events', 'storefront.events.v1');
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
