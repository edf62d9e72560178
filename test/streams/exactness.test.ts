// Exactly-once aggregates under crashes: a generated stream with known ground truth (including duplicate
// event_ids, duplicate request ids, edited / cancelled / re-sent orders) is processed by
// `streams/main.ts --processor all` as a child process that is SIGKILLed at random points several times
// and restarted. After catch-up every aggregate equals the ground truth exactly. The child owns its chDB
// directory; the test reads it through the child's analysts' endpoint.
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts } from '../../deploy/local/stack.ts';
import { type Infra, produce, rng, spawnStreams, startInfra, waitCaughtUp } from './helpers.ts';
import { generateScenario } from './scenario.ts';
import { httpQuery, normalizeTruth, readAggregates } from './truth.ts';

// The soak run (`npm run test:soak`) raises these: more crashes over a larger stream.
const SLICES = Number(process.env.EXACTNESS_KILLS ?? 6);
const VISITS = Number(process.env.EXACTNESS_VISITS_PER_STORE ?? 50);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function kill(child: ChildProcess, signal: NodeJS.Signals) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  await exited;
}

describe('exactly-once aggregates under SIGKILL', () => {
  let infra: Infra;
  beforeAll(async () => {
    infra = await startInfra();
  });
  afterAll(async () => {
    await infra?.stop();
  });

  it('every aggregate equals the ground truth after repeated crashes and restarts', { timeout: 300_000 + SLICES * 20_000 + VISITS * 1_000 }, async () => {
    const sc = generateScenario({ seed: 20261122, stores: ['store_a', 'store_b', 'store_c'], visitsPerStore: VISITS, ordersPerStore: Math.ceil(VISITS / 2) });
    const [sqlPort] = await freePorts(1);
    const env = {
      DATA_DIR: path.join(infra.dir, 'processor'),
      KAFKA_BROKERS: infra.brokers.join(','),
      REDIS_URL: infra.redisUrl,
      SCHEMA_REGISTRY_URL: infra.registryUrl,
      KAFKA_TOPIC_PREFIX: infra.prefix,
      STREAMS_MAX_BATCH_MESSAGES: '25',
      STREAMS_LINGER_MS: '20',
      STREAMS_SESSION_TIMEOUT_MS: '6000',
      LOG_LEVEL: 'warn',
    };
    const args = ['--processor', 'all', '--sql-port', String(sqlPort)];
    const rand = rng(99);
    const slices = SLICES;
    const part = <T>(xs: T[], i: number) => xs.slice(Math.floor((xs.length * i) / slices), Math.floor((xs.length * (i + 1)) / slices));

    let proc = spawnStreams(env, args);
    let ready = await proc.ready;
    let kills = 0;
    const logs: string[] = [];
    try {
      for (let i = 0; i < slices; i++) {
        await produce(infra, 'events', part(sc.events, i));
        await produce(infra, 'requests', part(sc.requests, i));
        await produce(infra, 'orders', part(sc.orders, i));
        // crash while the slice is being processed, at a random point
        await sleep(150 + Math.floor(rand() * 900));
        await kill(proc.child, 'SIGKILL');
        kills++;
        logs.push(...proc.logs);
        proc = spawnStreams(env, args);
        ready = await proc.ready;
      }
      await waitCaughtUp(
        infra.kafka,
        (['events', 'requests', 'orders'] as const).map((k) => ({ group: `streams.${k}`, topic: infra.topic(k) })),
        120_000 + VISITS * 1_000,
      );
      expect(kills).toBe(slices);
      // nothing valid was dead-lettered on the way
      const admin = infra.kafka.admin();
      await admin.connect();
      for (const k of ['events', 'requests', 'orders'] as const) {
        const dlq = await admin.fetchTopicOffsets(`${infra.topic(k)}.dlq`);
        expect(dlq.reduce((n, p) => n + Number(p.high), 0), `${k}.dlq`).toBe(0);
      }
      await admin.disconnect();
      const got = await readAggregates(httpQuery(ready.sql as string));
      const want = normalizeTruth(sc.truth);
      // sanity: the scenario exercises every aggregate
      for (const [name, m] of Object.entries(want)) expect(Object.keys(m).length, name).toBeGreaterThan(0);
      expect(got.eventsRaw).toEqual(want.eventsRaw);
      expect(got.views).toEqual(want.views);
      expect(got.clicks).toEqual(want.clicks);
      expect(got.addToCarts).toEqual(want.addToCarts);
      expect(got.impressions).toEqual(want.impressions);
      expect(got.sessions).toEqual(want.sessions);
      expect(got.sessionEvents).toEqual(want.sessionEvents);
      expect(got.coView).toEqual(want.coView);
      expect(got.coCart).toEqual(want.coCart);
      expect(got.searchedViewed).toEqual(want.searchedViewed);
      expect(got.viewedBought).toEqual(want.viewedBought);
      expect(got.searchedPurchased).toEqual(want.searchedPurchased);
      expect(got.trending).toEqual(want.trending);
      expect(got.searches).toEqual(want.searches);
      expect(got.units).toEqual(want.units);
      expect(got.orders).toEqual(want.orders);
      expect(got.revenue).toEqual(want.revenue);
      expect(got.coPurchase).toEqual(want.coPurchase);
      // and nothing the truth covers was left out of the comparisons above
      expect(got).toEqual(want);
    } catch (err) {
      process.stderr.write(`child logs:\n${[...logs, ...proc.logs].slice(-60).join('\n')}\n`);
      throw err;
    } finally {
      await kill(proc.child, 'SIGTERM');
    }
  });
});
