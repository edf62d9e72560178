// Exactly-once aggregates under crashes: a generated stream with known ground truth (including duplicate
// event_ids, duplicate request ids, edited / cancelled / re-sent orders) is processed by
// `streams/main.ts --processor all` as a child process that is SIGKILLed at random points several times
// and restarted. After catch-up every aggregate equals the ground truth exactly. The child owns its chDB
// directory; the test reads it through the child's analysts' endpoint.
//
// One exception is the engine's, not ours (docs/streams.md, "Known limitation"): a kill landing between
// ClickHouse's dedup record and its part commit loses that insert block (the retry is dropped as a
// duplicate). Where the aggregates differ, the test stops the processor and looks for such dangling
// dedup records; only if every differing aggregate belongs to a processor with one does it apply the
// documented repair — a replay of that processor from the log — and the aggregates must then be exact.
// A difference without a dangling record fails at once.
import type { ChildProcess } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbOptionsFromConfig, openDb } from '../../clickhouse/client.ts';
import { parsePartName } from '../../clickhouse/dedup-log.ts';
import { freePorts } from '../../deploy/local/stack.ts';
import { loadConfig } from '../../services/common/config.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { selectProcessors } from '../../streams/registry.ts';
import { runReplay } from '../../streams/replay/replay.ts';
import { lostBlocksKey, startStreams } from '../../streams/service.ts';
import { type Infra, produce, rng, spawnStreams, startInfra, waitCaughtUp } from './helpers.ts';
import { generateScenario } from './scenario.ts';
import { httpQuery, normalizeTruth, readAggregates } from './truth.ts';

// The soak run (`npm run test:soak`) raises these: more crashes over a larger stream.
const SLICES = Number(process.env.EXACTNESS_KILLS ?? 4);
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

  it('every aggregate equals the ground truth after repeated crashes and restarts', {
    timeout: 300_000 + SLICES * 20_000 + VISITS * 1_000,
  }, async () => {
    const sc = generateScenario({
      seed: 20261122,
      stores: ['store_a', 'store_b', 'store_c'],
      visitsPerStore: VISITS,
      ordersPerStore: Math.ceil(VISITS / 2),
    });
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
    const part = <T>(xs: T[], i: number) =>
      xs.slice(Math.floor((xs.length * i) / slices), Math.floor((xs.length * (i + 1)) / slices));

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
        expect(
          dlq.reduce((n, p) => n + Number(p.high), 0),
          `${k}.dlq`,
        ).toBe(0);
      }
      await admin.disconnect();
      let got = await readAggregates(httpQuery(ready.sql as string));
      const want = normalizeTruth(sc.truth);
      if (!isDeepStrictEqual(got, want)) {
        await kill(proc.child, 'SIGTERM');
        ({ got } = await repairEngineLoss(env));
      }
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
      expect(got.searchedCarted).toEqual(want.searchedCarted);
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

describe('a block the engine lost', () => {
  let infra: Infra;
  beforeAll(async () => {
    infra = await startInfra();
  });
  afterAll(async () => {
    await infra?.stop();
  });

  it('is found on disk, reported, and the replay restores the exact aggregates', { timeout: 180_000 }, async () => {
    // the state a kill between ClickHouse's dedup record and its part commit leaves: the record is in the
    // table's deduplication log, the part is not on disk. Made here by removing a part of co_view_pairs
    // while the processor is stopped.
    const sc = generateScenario({ seed: 7, stores: ['store_x'], visitsPerStore: 20, ordersPerStore: 5 });
    const env = {
      DATA_DIR: path.join(infra.dir, 'processor'),
      KAFKA_BROKERS: infra.brokers.join(','),
      REDIS_URL: infra.redisUrl,
      SCHEMA_REGISTRY_URL: infra.registryUrl,
      KAFKA_TOPIC_PREFIX: infra.prefix,
      STREAMS_MAX_BATCH_MESSAGES: '25',
      STREAMS_LINGER_MS: '20',
      LOG_LEVEL: 'warn',
    };
    const proc = spawnStreams(env, ['--processor', 'all']);
    await proc.ready;
    try {
      for (const k of ['events', 'requests', 'orders'] as const) await produce(infra, k, sc[k]);
      await waitCaughtUp(
        infra.kafka,
        (['events', 'requests', 'orders'] as const).map((k) => ({ group: `streams.${k}`, topic: infra.topic(k) })),
        120_000,
      );
    } finally {
      await kill(proc.child, 'SIGTERM');
    }
    const tableDir = path.join(env.DATA_DIR, 'clickhouse', 'data', 'discovery', 'co_view_pairs');
    // an active part (one no other part's block range contains) and the merged-away parts it holds, which
    // stay on disk for a while and would otherwise be loaded again in its place
    const parts = readdirSync(tableDir).flatMap((name) => {
      const p = parsePartName(name);
      return p ? [{ name, ...p }] : [];
    });
    const inside = (a: (typeof parts)[0], b: (typeof parts)[0]) =>
      a.partition === b.partition && b.min <= a.min && a.max <= b.max;
    const active = parts.find((a) => !parts.some((b) => b !== a && inside(a, b)));
    expect(active).toBeDefined();
    for (const p of parts)
      if (inside(p, active as (typeof parts)[0])) rmSync(path.join(tableDir, p.name), { recursive: true });

    const { got, lost } = await repairEngineLoss(env);
    expect(lost.join(' ')).toMatch(/^co_view_pairs: /);
    expect(got).toEqual(normalizeTruth(sc.truth));
  });
});

/**
 * The processor is stopped. Finds the insert blocks ClickHouse dropped as duplicates of parts it never
 * committed and replays the processors owning them (the documented repair); returns the aggregates
 * afterwards. Throws when nothing explains the difference (no dangling dedup record), so the caller's
 * comparison is never excused by a repair that was not needed.
 */
async function repairEngineLoss(env: Record<string, string>) {
  const config = loadConfig({ ...env, LOG_LEVEL: 'warn' });
  const logger = createLogger('exactness-repair', 'warn');
  const db = await openDb(dbOptionsFromConfig(config));
  const redis = createRedis(config.redisUrl);
  const kafka = createKafka(config.kafkaBrokers, 'exactness-repair', logger);
  const processors = selectProcessors('all');
  try {
    // what the processor's starts recorded (Redis), and what this open found on disk
    const lost: string[] = [];
    const owners = new Set<string>();
    for (const p of processors) {
      for (const table of [...p.tables.written, ...p.tables.views.map((v) => v.target)]) {
        const parts = new Set([
          ...(await redis.smembers(lostBlocksKey(db.database, table))),
          ...(db.lostBlocks.get(table) ?? []),
        ]);
        if (parts.size) {
          lost.push(`${table}: ${[...parts].join(', ')}`);
          owners.add(p.name);
        }
      }
    }
    const before = await readAggregates((sql) => db.query(sql));
    if (lost.length === 0) return { got: before, lost };
    process.stderr.write(
      `ClickHouse lost insert blocks in a kill (dedup record without its part) — ${lost.join('; ')}; replaying ${[...owners].join(', ')}\n`,
    );
    const streams = await startStreams({ config, db, redis, kafka, logger, processors });
    try {
      const replayEnv = {
        config,
        db,
        redis,
        kafka,
        logger,
        streams,
        deps: streams.deps,
        runOptions: streams.runOptions,
      };
      for (const processor of owners) {
        const result = await runReplay(replayEnv, { processor, from: { kind: 'earliest' } }, () => {});
        // the replay's compare saw the shortfall the dangling record explains
        expect(result.swapped, processor).toBe(true);
        expect(result.differences, processor).toBeGreaterThan(0);
        // and the platform no longer reports the loss
        for (const table of processors.find((p) => p.name === processor)?.tables.written ?? []) {
          expect(await redis.exists(lostBlocksKey(db.database, table)), table).toBe(0);
        }
      }
    } finally {
      await streams.stop();
    }
    return { got: await readAggregates((sql) => db.query(sql)), lost };
  } finally {
    redis.disconnect();
    await db.close();
  }
}
