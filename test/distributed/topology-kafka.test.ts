// Distributed mode on real Apache Kafka ×3 (KRaft; topics with replication factor 3, min.insync.replicas=2,
// acks=all producers): the ClickHouse stand-in, the schema registry, an intake, two processor processes in
// one consumer group and the read API as two worker processes behind one address (HTTP_WORKERS=2), each a
// `node deploy/service.ts` process.
// - A rolling restart of the read API (SIGHUP: a new worker, then the old one drained and stopped, twice)
//   under a steady stream of requests with connections coming and going: not one request fails, and every
//   worker, old and new, served some of them.
// - (TOPOLOGY_KAFKA_FAULTS=1, with an intake and two processor processes) A processor process and one
//   Kafka node SIGKILLed at the same moment mid-stream: the client retries what was not acknowledged (same
//   event ids) until it is; in the end rows = distinct event ids = aggregated views = events sent, still so
//   2 s later. The surviving processor holds every partition; the two live nodes lead every partition of
//   the events topic. Then, with events arriving, a third processor process joins (the group shares the
//   partitions again) and the surviving one leaves (SIGTERM; the newcomer holds every partition): still
//   exact. `npm run fault:kafka-topology` runs it. One run found product_daily_engagement doubled (1150 views for 800 events, events_raw
//   exact): chunks re-read after failed offset commits were cut anew (fixed in 1573639, reproduced fast by
//   test/streams/failed-commits.test.ts); the run is intermittent, so it stays behind the switch.
import { setTimeout as sleep } from 'node:timers/promises';
import http from 'node:http';
import path from 'node:path';
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type RedisServer, startRedis } from '../helpers/redis.ts';
import { startTestKafka, type TestKafka } from '../kafka/helpers.ts';
import { createTopology, type Topology, UA } from './helpers.ts';

const EVENTS_TOPIC = 'storefront.events.v1';
/** The fault run (a processor process and a Kafka node killed, a processor joining and one leaving; about 2 minutes
 * here): TOPOLOGY_KAFKA_FAULTS=1 (`npm run fault:kafka-topology`) runs it. */
const FAULTS = process.env.TOPOLOGY_KAFKA_FAULTS === '1';

let t: Topology;
let kafka: TestKafka;
let redis: RedisServer;

beforeAll(async () => {
  t = createTopology();
  // Kafka, Redis and the stand-in need nothing of each other
  [kafka, redis] = await Promise.all([
    startTestKafka(3, {}, { dataDir: path.join(t.dir, 'kafka') }),
    startRedis(),
    t.startStandIn(),
  ]);
  t.brokers = kafka.bootstrap;
  t.redisUrl = redis.url;
  await t.startRegistry(); // the migrations and every topic, once
  // the rate limits (per store, per client IP: every request here comes from 127.0.0.1) are not under test
  const readApi = { HTTP_WORKERS: '2', STOREFRONT_RATE_LIMIT_PER_SEC: '0', STOREFRONT_RATE_LIMIT_PER_IP_PER_SEC: '0' };
  await Promise.all([
    t.startService('storefront', 'storefront', readApi),
    ...(FAULTS
      ? [
          t.startService('intake', 'intake'),
          t.startService('processors-a', 'processors', {}, ['--processor', 'events,requests']),
          t.startService('processors-b', 'processors', {}, ['--processor', 'events,requests']),
        ]
      : []),
  ]);
}, 420_000);

afterAll(async () => {
  await t?.close(async () => {
    await kafka?.close();
    await redis?.stop();
  });
}, 120_000);

const admin = async () => {
  const a = new Kafka({ brokers: kafka.brokers, clientId: 'topology-kafka-test', logLevel: logLevel.NOTHING }).admin();
  await a.connect();
  return a;
};

test('the events topic is replicated on the three nodes: replication factor 3, min.insync.replicas=2', async () => {
  const a = await admin();
  try {
    const meta = await a.fetchTopicMetadata({ topics: [EVENTS_TOPIC] });
    for (const p of meta.topics[0].partitions) {
      expect([...p.replicas].sort()).toEqual([1, 2, 3]);
      expect([...p.isr].sort()).toEqual([1, 2, 3]);
    }
    const { resources } = await a.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: EVENTS_TOPIC, configNames: ['min.insync.replicas'] }],
    });
    expect(resources[0].configEntries.map((e) => [e.configName, e.configValue])).toEqual([
      ['min.insync.replicas', '2'],
    ]);
  } finally {
    await a.disconnect();
  }
});

/** POST through `agent` (one connection at a time): the status, the body and the worker that answered */
function post(agent: http.Agent, url: string, headers: Record<string, string>, body: string) {
  return new Promise<{ status: number; body: string; servedBy: string }>((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: text, servedBy: String(res.headers['x-served-by'] ?? '') }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('a rolling restart of the two read-API worker processes behind one address: no request fails, every worker serves', {
  timeout: 240_000,
}, async () => {
  const storefront = t.proc('storefront');
  const oldPids = storefront.urls.workers.split(',');
  expect(oldPids).toHaveLength(2);
  const store = await t.createStore('rolling restart', []);
  const url = `${storefront.urls.http}/api/storefront/v1/search/linen/execute`;
  const headers = { 'x-storefront-access-token': store.token, 'content-type': 'application/json', 'user-agent': UA };

  // both workers know the store (each connection goes to the next worker)
  const knowing = new Set<string>();
  await expect
    .poll(
      async () => {
        const agent = new http.Agent({ keepAlive: false });
        const r = await post(agent, url, headers, '{}').catch(() => undefined);
        if (r?.status === 200) knowing.add(r.servedBy);
        return [...knowing].sort();
      },
      { timeout: 30_000, interval: 100 },
    )
    .toEqual([...oldPids].sort());

  // a steady stream: three clients, each sending its next request when the previous one is answered, on
  // a connection it keeps for ten requests (clients come and go; each new connection goes to the next worker)
  const failures: string[] = [];
  const served = new Map<string, number>();
  let streaming = true;
  const client = async (c: number) => {
    let agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; streaming; i++) {
      if (i % 10 === 9) {
        agent.destroy();
        agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      }
      try {
        const r = await post(agent, url, headers, JSON.stringify({ identity: { sessionId: `rolling-${c}-${i % 7}` } }));
        if (r.status === 200) served.set(r.servedBy, (served.get(r.servedBy) ?? 0) + 1);
        else failures.push(`${r.status} ${r.body.slice(0, 200)}`);
      } catch (err) {
        failures.push(`${(err as Error & { code?: string }).code ?? ''} ${(err as Error).message}`);
      }
    }
    agent.destroy();
  };
  const clients = [0, 1, 2].map(client);
  try {
    await expect.poll(() => oldPids.every((p) => (served.get(p) ?? 0) > 0), { timeout: 30_000 }).toBe(true);
    // SIGHUP: the primary starts a new worker, then drains and stops an old one, twice
    const restarted = new Promise<string[]>((resolve) => {
      const onMessage = (m: { type?: string; workers?: number[] }) => {
        if (m.type !== 'restarted') return;
        storefront.child.off('message', onMessage);
        resolve((m.workers ?? []).map(String));
      };
      storefront.child.on('message', onMessage);
    });
    storefront.child.kill('SIGHUP');
    const newPids = await restarted;
    expect(newPids).toHaveLength(2);
    for (const p of newPids) expect(oldPids).not.toContain(p);
    // the old workers are gone
    for (const p of oldPids) expect(() => process.kill(Number(p), 0)).toThrow();
    await expect.poll(() => newPids.every((p) => (served.get(p) ?? 0) > 0), { timeout: 30_000 }).toBe(true);
    streaming = false;
    await Promise.all(clients);
    expect(failures).toEqual([]);
    expect([...served.keys()].sort()).toEqual([...oldPids, ...newPids].sort());
  } finally {
    streaming = false;
    await Promise.all(clients);
  }
});

test.runIf(FAULTS)(
  'a processor process and a Kafka node SIGKILLed mid-stream, then a processor joining and one leaving: every acknowledged event is counted once',
  {
    timeout: 480_000,
  },
  async () => {
    const store = await t.createStore('kafka failover', ['intake']);
    const products = Array.from({ length: 10 }, (_, i) => 2_000 + i);
    let sent = 0;
    let retries = 0;
    // a beacon client: a batch not acknowledged (5xx, or no answer) is sent again, same event ids, until it is
    const send = async (from: number, to: number) => {
      for (let b = from; b < to; b++) {
        const events = t.viewEvents(`k-${b}`, products);
        for (let attempt = 0; ; attempt++) {
          const r = await t.postEvents(store.token, events).catch(() => ({ status: 0, acked: 0 }));
          if (r.status === 201) break;
          expect(r.status === 0 || r.status >= 500, `batch ${b}: status ${r.status}`).toBe(true);
          expect(attempt, `batch ${b} not acknowledged after ${attempt} attempts`).toBeLessThan(60);
          retries++;
          await sleep(500);
        }
        sent += events.length;
      }
    };
    const counts = async () =>
      (
        await t.sql<{ rows: number; ids: number; views: number }>(
          `SELECT
           (SELECT toUInt32(count()) FROM events_raw WHERE store_id = {s:String}) AS rows,
           (SELECT toUInt32(uniqExact(event_id)) FROM events_raw WHERE store_id = {s:String}) AS ids,
           (SELECT toUInt32(sum(views)) FROM product_daily_engagement WHERE store_id = {s:String}) AS views`,
          { s: store.storeId },
        )
      )[0];

    await send(0, 20);
    await expect.poll(counts, { timeout: 60_000, interval: 250 }).toEqual({ rows: sent, ids: sent, views: sent });
    // both processor processes in the group, each holding some partitions
    await expect
      .poll(async () => (await t.groupAssignment('streams.events', EVENTS_TOPIC)).length, { timeout: 60_000 })
      .toBe(2);
    const before = await t.groupAssignment('streams.events', EVENTS_TOPIC);
    for (const ps of before) expect(ps.length).toBeGreaterThan(0);
    const all = before.flat().sort((a, b) => a - b);

    // the node leading partition 0 of the events topic goes, together with one processor process
    const a = await admin();
    const meta = await a.fetchTopicMetadata({ topics: [EVENTS_TOPIC] });
    const victim = meta.topics[0].partitions.find((p) => p.partitionId === 0)?.leader ?? 1;
    const sending = send(20, 60);
    await sleep(300);
    await Promise.all([
      t.stopProc(t.proc('processors-a'), 'SIGKILL'),
      new Promise((r) => {
        kafka.children[victim - 1].once('exit', r);
        kafka.children[victim - 1].kill('SIGKILL');
      }),
    ]);
    await sending;
    await send(60, 80);
    expect(sent).toBe(80 * products.length);

    // the two live nodes lead every partition, each with an ISR of two (acks=all still satisfied)
    await expect
      .poll(
        async () =>
          (await a.fetchTopicMetadata({ topics: [EVENTS_TOPIC] })).topics[0].partitions.every(
            (p) => p.leader !== victim && p.isr.length === 2 && !p.isr.includes(victim),
          ),
        { timeout: 60_000, interval: 500 },
      )
      .toBe(true);
    await a.disconnect();
    /** one processor process holds every partition of the events topic */
    const oneHoldsAll = () =>
      expect
        .poll(() => t.groupAssignment('streams.events', EVENTS_TOPIC), { timeout: 90_000, interval: 500 })
        .toEqual([all]);
    /** every event sent is counted once, and (`settle`) still so 2 s later */
    const countedOnce = async (settle: boolean) => {
      const exact = { rows: sent, ids: sent, views: sent };
      await expect.poll(counts, { timeout: 120_000, interval: 500 }).toEqual(exact);
      if (!settle) return;
      await sleep(2_000);
      expect(await counts()).toEqual(exact);
    };
    // the surviving processor holds every partition
    await oneHoldsAll();
    // what the killed process had inserted but not committed comes again with the same dedup tokens and
    // event ids; what a killed node had acknowledged is on the other two
    await countedOnce(true);

    // a processor joins the group while events arrive: the partitions are shared again, each once
    const joiningSend = send(80, 110);
    await t.startService('processors-c', 'processors', {}, ['--processor', 'events,requests']);
    await joiningSend;
    await expect
      .poll(
        async () => {
          const now = await t.groupAssignment('streams.events', EVENTS_TOPIC);
          return now.length === 2 && now.every((ps) => ps.length > 0) ? now.flat().sort((x, y) => x - y) : now;
        },
        { timeout: 90_000, interval: 500 },
      )
      .toEqual(all);
    await countedOnce(false);

    // and one leaves (SIGTERM: it commits and leaves the group) while events arrive: the other takes over
    const leavingSend = send(110, 140);
    await t.stopProc(t.proc('processors-b'));
    await leavingSend;
    await oneHoldsAll();
    await countedOnce(true);
    expect(sent).toBe(140 * products.length);
    console.log(`kafka failover, join and leave: ${sent} events, ${retries} batch retries`);
  },
);
