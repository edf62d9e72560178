// chDB's data directory full under running processors (issue #23): the database on a small tmpfs, a filler
// file taking every byte left while events, requests and orders keep arriving. The inserts fail in the
// engine; the processors pause on them (retrying, nothing committed, nothing dead-lettered, the backlog
// in stream_consumer_lag), and once the filler is deleted they catch up with every aggregate equal to the
// ground truth. Skipped, with the reason, where a tmpfs cannot be mounted.
import { rmSync } from 'node:fs';
import path from 'node:path';
import type { Redis } from 'ioredis';
import type { Counter, Gauge } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from 'vitest';
import { type Db, openDb } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { loadConfig } from '../../services/common/config.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { selectProcessors } from '../../streams/registry.ts';
import { streamMetrics } from '../../streams/runtime/metrics.ts';
import { type Streams, startStreams } from '../../streams/service.ts';
import { fillDisk, mountTmpfs } from '../faults/tmpfs.ts';
import { type Infra, produce, startInfra, waitCaughtUp } from './helpers.ts';
import { generateScenario } from './scenario.ts';
import { normalizeTruth, readAggregates } from './truth.ts';

const KEYS = ['events', 'requests', 'orders'] as const;
type Key = (typeof KEYS)[number];

async function metricSum(m: Counter | Gauge, labels: Record<string, string>): Promise<number> {
  const { values } = await m.get();
  return values
    .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
    .reduce((n, v) => n + v.value, 0);
}

const mount = mountTmpfs('256m');
const skipReason = 'reason' in mount ? mount.reason : undefined;

describe.skipIf(skipReason !== undefined)(`chDB's disk full${skipReason ? ` — skipped: ${skipReason}` : ''}`, () => {
  const dir = 'dir' in mount ? mount.dir : '';
  const filler = path.join(dir, 'filler');
  let infra: Infra;
  let db: Db;
  let redis: Redis;
  let streams: Streams;
  beforeAll(async () => {
    infra = await startInfra();
    db = await openDb({ chdbPath: path.join(dir, 'clickhouse'), database: 'disk_full' });
    await migrate(db);
    const config = loadConfig({
      KAFKA_BROKERS: infra.brokers.join(','),
      REDIS_URL: infra.redisUrl,
      SCHEMA_REGISTRY_URL: infra.registryUrl,
      KAFKA_TOPIC_PREFIX: infra.prefix,
      DATA_DIR: infra.dir,
      LOG_LEVEL: 'warn',
      STREAMS_SESSION_TIMEOUT_MS: '6000',
      STREAMS_MAX_BATCH_MESSAGES: '25',
      STREAMS_LINGER_MS: '20',
    });
    redis = createRedis(infra.redisUrl);
    const logger = createLogger('chdb-disk-full-test', 'warn');
    streams = await startStreams({
      config,
      db,
      redis,
      kafka: createKafka(infra.brokers, 'chdb-disk-full-test', logger),
      logger,
      processors: selectProcessors('events,requests,orders'),
    });
  }, 120_000);
  afterAll(async () => {
    rmSync(filler, { force: true });
    await streams?.stop();
    redis?.disconnect();
    await db?.close();
    await infra?.stop();
    if ('unmount' in mount) mount.unmount();
  }, 60_000);

  it('pauses the processors while the disk is full and catches up exactly once after space returns', {
    timeout: 300_000,
  }, async () => {
    const sc = generateScenario({ seed: 4242, stores: ['store_a', 'store_b'], visitsPerStore: 30, ordersPerStore: 15 });
    const third = (xs: { key: string; value: unknown }[], i: number) =>
      xs.slice(Math.floor((xs.length * i) / 3), Math.floor((xs.length * (i + 1)) / 3));
    const groups = KEYS.map((k) => ({ group: `streams.${k}`, topic: infra.topic(k) }));
    const warns = new Map<Key, MockInstance>();
    try {
      for (const k of KEYS) await produce(infra, k, third(sc[k], 0));
      await waitCaughtUp(infra.kafka, groups, 120_000);
      const retriesBefore = new Map<Key, number>();
      for (const k of KEYS) {
        retriesBefore.set(k, await metricSum(streamMetrics.writeRetries, { processor: k, mode: 'live' }));
        const runner = streams.runners.get(k);
        if (!runner) throw new Error(`no runner ${k}`);
        warns.set(k, vi.spyOn(runner.logger, 'warn'));
      }

      // the disk fills up; the second third arrives
      expect(fillDisk(filler)).toBeGreaterThan(0);
      const outage: Record<Key, number> = { events: 0, requests: 0, orders: 0 };
      for (const k of KEYS) {
        await produce(infra, k, third(sc[k], 1));
        outage[k] = third(sc[k], 1).length;
      }
      for (const k of KEYS) {
        const labels = { processor: k, mode: 'live' };
        await vi.waitFor(
          async () =>
            expect(await metricSum(streamMetrics.writeRetries, labels)).toBeGreaterThan(
              (retriesBefore.get(k) as number) + 3,
            ),
          { timeout: 60_000, interval: 200 },
        );
        const warn = (warns.get(k) as MockInstance).mock.calls.find((c) => String(c[1]).startsWith('write to'));
        expect(String((warn?.[0] as { err?: string })?.err)).toMatch(/space|ENOSPC|NOT_ENOUGH_SPACE|reserve/i);
        await expect
          .poll(() => metricSum(streamMetrics.lag, { ...labels, topic: infra.topic(k) }), { timeout: 10_000 })
          .toBe(outage[k]);
      }

      // space returns: the backlog is written, then the last third flows normally
      rmSync(filler);
      await waitCaughtUp(infra.kafka, groups, 180_000);
      for (const k of KEYS) await produce(infra, k, third(sc[k], 2));
      await waitCaughtUp(infra.kafka, groups, 120_000);
      const admin = infra.kafka.admin();
      await admin.connect();
      try {
        for (const k of KEYS) {
          const dlq = await admin.fetchTopicOffsets(`${infra.topic(k)}.dlq`);
          expect(
            dlq.reduce((n, p) => n + Number(p.high), 0),
            `${k}.dlq`,
          ).toBe(0);
        }
      } finally {
        await admin.disconnect();
      }
      const got = await readAggregates((sql) => db.query(sql));
      expect(got).toEqual(normalizeTruth(sc.truth));
    } finally {
      for (const w of warns.values()) w.mockRestore();
    }
  });
});
