// ClickHouse refusing inserts under running processors (issue #23): the engine itself fails every INSERT
// into one table per processor (a CHECK constraint that no row satisfies, added with ALTER TABLE while
// the processors run, dropped later). Meanwhile the processors keep retrying with capped back-off far
// beyond the old limit of six attempts, commit nothing, dead-letter nothing but the poison message that
// arrived in the outage, log the engine's error, count the retries and show the backlog as consumer lag.
// Once inserts succeed again they catch up, and every aggregate equals the ground truth: the tables a
// chunk had written before the failing one (events_raw and its materialized views, before sessions) are
// not counted twice when the chunk is retried.
import type { Counter, Gauge } from 'prom-client';
import type { MockInstance } from 'vitest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { streamMetrics } from '../../streams/runtime/metrics.ts';
import { produce, produceRaw, type StreamsHarness, startStreamsHarness, waitCaughtUp } from './helpers.ts';
import { generateScenario } from './scenario.ts';
import { normalizeTruth, readAggregates } from './truth.ts';

const KEYS = ['events', 'requests', 'orders'] as const;
type Key = (typeof KEYS)[number];
/** the table of each processor that refuses inserts (sessions: the second table the events processor writes) */
const REFUSING: Record<Key, string> = { events: 'sessions', requests: 'requests_raw', orders: 'orders_raw' };

async function metricSum(m: Counter | Gauge, labels: Record<string, string>): Promise<number> {
  const { values } = await m.get();
  return values
    .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
    .reduce((n, v) => n + v.value, 0);
}

describe('ClickHouse refusing inserts', () => {
  let h: StreamsHarness;
  beforeAll(async () => {
    h = await startStreamsHarness('insert-failures', {
      processors: 'events,requests,orders',
      env: { STREAMS_MAX_BATCH_MESSAGES: '25', STREAMS_LINGER_MS: '20' },
    });
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it('pauses the processors (retrying, nothing committed or dead-lettered, lag in the metrics), then catches up exactly once', {
    timeout: 240_000,
  }, async () => {
    const sc = generateScenario({
      seed: 2311,
      stores: ['store_a', 'store_b'],
      visitsPerStore: 30,
      ordersPerStore: 15,
    });
    const third = (xs: { key: string; value: unknown }[], i: number) =>
      xs.slice(Math.floor((xs.length * i) / 3), Math.floor((xs.length * (i + 1)) / 3));
    const groups = KEYS.map((k) => ({ group: `streams.${k}`, topic: h.infra.topic(k) }));
    const admin = h.infra.kafka.admin();
    await admin.connect();
    const warns = new Map<Key, MockInstance>();
    try {
      // 1. a first third, processed normally
      for (const k of KEYS) await produce(h.infra, k, third(sc[k], 0));
      await waitCaughtUp(h.infra.kafka, groups, 120_000);
      const committedBefore = new Map<Key, string>();
      for (const k of KEYS) committedBefore.set(k, await committedOf(k));
      const retriesBefore = new Map<Key, number>();
      for (const k of KEYS) {
        retriesBefore.set(k, await metricSum(streamMetrics.writeRetries, { processor: k, mode: 'live' }));
        const runner = h.streams.runners.get(k);
        if (!runner) throw new Error(`no runner ${k}`);
        warns.set(k, vi.spyOn(runner.logger, 'warn'));
      }

      // 2. the engine refuses every insert into one table per processor; the second third and a poison
      //    message arrive meanwhile
      for (const k of KEYS)
        await h.db.command(`ALTER TABLE ${REFUSING[k]} ADD CONSTRAINT fault_injected_refuse_inserts CHECK 0`);
      const outage: Record<Key, number> = { events: 0, requests: 0, orders: 0 };
      for (const k of KEYS) {
        await produce(h.infra, k, third(sc[k], 1));
        outage[k] = third(sc[k], 1).length;
      }
      await produceRaw(h.infra, 'events', [{ key: 'poison', value: Buffer.from('not avro at all') }]);
      outage.events += 1;

      for (const k of KEYS) {
        const labels = { processor: k, mode: 'live' };
        // retried far beyond the old limit of 6 attempts: a write of this processor reached attempt 6
        // and is still being retried (the success below reports its attempt count)
        await vi.waitFor(
          () => {
            const attempts = (warns.get(k) as MockInstance).mock.calls
              .map((c) => (c[0] as { attempt?: number }).attempt ?? 0)
              .reduce((a, b) => Math.max(a, b), 0);
            expect(attempts, `${k}: highest logged attempt`).toBeGreaterThanOrEqual(6);
          },
          { timeout: 60_000, interval: 200 },
        );
        expect(await metricSum(streamMetrics.writeRetries, labels)).toBeGreaterThan(
          (retriesBefore.get(k) as number) + 5,
        );
        // the warning names the table, says what happens and carries the engine's error
        const warn = (warns.get(k) as MockInstance).mock.calls.find((c) => String(c[1]).startsWith('write to'));
        expect(warn?.[0]).toMatchObject({ table: REFUSING[k], err: expect.stringMatching(/VIOLATED_CONSTRAINT/) });
        expect(warn?.[1]).toMatch(/paused, nothing committed; retrying until it succeeds/);
        expect(await metricSum(streamMetrics.writesFailing, labels), `${k}: partitions waiting`).toBeGreaterThan(0);
        // the backlog is in stream_consumer_lag: exactly the messages produced during the outage
        await expect
          .poll(() => metricSum(streamMetrics.lag, { ...labels, topic: h.infra.topic(k) }), { timeout: 10_000 })
          .toBe(outage[k]);
        // nothing was committed
        expect(await committedOf(k), `${k}: committed offsets`).toBe(committedBefore.get(k));
      }
      // nothing valid was dead-lettered: a failing engine is not the messages' fault (the poison message
      // goes to the DLQ once its partition reaches it: during the outage if it came before the stuck chunk)
      expect(await dlqCount('events')).toBeLessThanOrEqual(1);
      expect(await dlqCount('requests')).toBe(0);
      expect(await dlqCount('orders')).toBe(0);

      // 3. the engine accepts inserts again: the backlog is written, then the last third flows normally
      for (const k of KEYS)
        await h.db.command(`ALTER TABLE ${REFUSING[k]} DROP CONSTRAINT fault_injected_refuse_inserts`);
      await waitCaughtUp(h.infra.kafka, groups, 120_000);
      for (const k of KEYS) {
        const labels = { processor: k, mode: 'live' };
        const resumed = (warns.get(k) as MockInstance).mock.calls.filter(
          (c) => c[1] === 'write succeeded again: consumption resumes',
        );
        expect(resumed.length, `${k}: resumed writes`).toBeGreaterThan(0);
        expect(Math.max(...resumed.map((c) => (c[0] as { attempts: number }).attempts))).toBeGreaterThan(6);
        expect(await metricSum(streamMetrics.writesFailing, labels)).toBe(0);
        await produce(h.infra, k, third(sc[k], 2));
      }
      await waitCaughtUp(h.infra.kafka, groups, 120_000);
      for (const k of KEYS)
        await expect
          .poll(() => metricSum(streamMetrics.lag, { processor: k, mode: 'live', topic: h.infra.topic(k) }))
          .toBe(0);
      expect(await dlqCount('events')).toBe(1);
      expect(await metricSum(streamMetrics.dlq, { processor: 'events', reason: 'undecodable' })).toBe(1);
      expect(await dlqCount('requests')).toBe(0);
      expect(await dlqCount('orders')).toBe(0);

      const got = await readAggregates((sql) => h.db.query(sql));
      const want = normalizeTruth(sc.truth);
      for (const [name, m] of Object.entries(want)) expect(Object.keys(m).length, name).toBeGreaterThan(0);
      expect(got).toEqual(want);
    } finally {
      for (const w of warns.values()) w.mockRestore();
      await admin.disconnect();
    }

    async function committedOf(k: Key): Promise<string> {
      const res = await admin.fetchOffsets({ groupId: `streams.${k}`, topics: [h.infra.topic(k)] });
      return res[0].partitions
        .map((p) => `${p.partition}:${p.offset}`)
        .sort()
        .join(',');
    }
    async function dlqCount(k: Key): Promise<number> {
      const offsets = await admin.fetchTopicOffsets(`${h.infra.topic(k)}.dlq`);
      return offsets.reduce((n, p) => n + Number(p.high), 0);
    }
  });
});
