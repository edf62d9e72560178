// The broker's data directory runs out of space (issue #23): the log on a small tmpfs, a filler file
// taking every byte left. Produce with acks=all is refused with KAFKA_STORAGE_ERROR and the engine's
// reason in the broker's log (no success for anything not stored), the beacon answers 503 with
// Retry-After (not 201, not 500), and once space returns (the filler deleted) the same log takes appends
// again; every acknowledged record is there exactly once, intact, before and after a restart of the
// broker on that directory (its recovery scan finds no torn batch).
//
// Needs to mount a tmpfs (root, or CAP_SYS_ADMIN): skipped with the reason otherwise.
import { rmSync, statfsSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPICS } from '../../schemas/topics.ts';
import type { Kafka } from '../../services/common/kafka/index.ts';
import { type Broker, startBroker } from '../../services/kafka-broker/index.ts';
import { type BeaconApp, eventId, readTopic, startBeaconApp } from '../beacon/helpers.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';
import { fillDisk, mountTmpfs } from '../faults/tmpfs.ts';
import { testKafka } from './helpers/broker.ts';

const STORE = 'store-disk-full';
const TOKEN = 'tok-disk-full-0123456789';
const TOPIC = 'disk-full.records';

const mount = mountTmpfs('16m');
const skipReason = 'reason' in mount ? mount.reason : undefined;

describe.skipIf(skipReason !== undefined)(
  `the broker's disk full${skipReason ? ` — skipped: ${skipReason}` : ''}`,
  () => {
    const dir = 'dir' in mount ? mount.dir : '';
    const dataDir = path.join(dir, 'kafka');
    const filler = path.join(dir, 'filler');
    const logLines: string[] = [];
    const logger = pino(
      { level: 'warn' },
      new Writable({
        write(chunk, _enc, cb) {
          logLines.push(String(chunk));
          cb();
        },
      }),
    );
    let broker: Broker;
    let brokers: string[];
    let kafka: Kafka;
    let redis: RedisServer;
    let beacon: BeaconApp;

    beforeAll(async () => {
      broker = await startBroker({ port: 0, dataDir, logger, groupOptions: { initialRebalanceDelayMs: 50 } });
      brokers = [`127.0.0.1:${broker.port}`];
      kafka = testKafka(brokers, 'disk-full', { retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 300 } });
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({ waitForLeaders: true, topics: [{ topic: TOPIC, numPartitions: 1 }] });
      await admin.disconnect();
      redis = await startRedis();
      beacon = await startBeaconApp({
        brokers,
        redisUrl: redis.url,
        stores: [{ storeId: STORE, token: TOKEN }],
        settings: { BEACON_PRODUCE_TIMEOUT_MS: 3_000 },
      });
    }, 60_000);
    afterAll(async () => {
      await beacon?.close();
      await redis?.stop();
      await broker?.close().catch(() => {});
      if ('unmount' in mount) mount.unmount();
    }, 60_000);

    async function post(ids: string[]) {
      const res = await fetch(`${beacon.url}/beacon`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-storefront-access-token': TOKEN },
        body: JSON.stringify({
          events: ids.map((id, i) => ({
            event_id: id,
            event_type: 'product_view',
            timestamp: new Date().toISOString(),
            session_id: 'disk',
            product_id: 100 + i,
          })),
        }),
      });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as object };
    }

    it('refuses writes with a clear error while full, loses nothing acknowledged, and appends again once space returns', {
      timeout: 240_000,
    }, async () => {
      const value = (i: number) => Buffer.from(`record-${i}-${'x'.repeat(2000)}`);
      const acknowledged: number[] = [];
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
      await producer.connect();
      let n = 0;
      const send = async (count: number) => {
        const batch = Array.from({ length: count }, () => n++);
        await producer.send({
          topic: TOPIC,
          acks: -1,
          messages: batch.map((i) => ({ key: `k${i % 7}`, value: value(i) })),
        });
        acknowledged.push(...batch);
      };
      try {
        // 1. room: records and beacon events are stored
        for (let i = 0; i < 20; i++) await send(10);
        const beforeIds = [eventId(), eventId()];
        expect((await post(beforeIds)).status).toBe(201);

        // 2. the disk fills up
        const filled = fillDisk(filler);
        expect(filled).toBeGreaterThan(0);
        expect(statfsSync(dir).bavail).toBe(0);
        let refused: Error | undefined;
        for (let i = 0; i < 5 && !refused; i++) {
          try {
            await send(10);
          } catch (err) {
            refused = err as Error;
          }
        }
        expect(refused, 'a produce to a full disk was acknowledged').toBeDefined();
        // kafkajs gives up after its retries of the broker's retriable answer; the cause names it
        const causes: string[] = [];
        for (let e: unknown = refused; e; e = (e as { cause?: unknown }).cause ?? undefined) {
          causes.push(`${(e as Error).name}: ${(e as Error).message} ${(e as { type?: string }).type ?? ''}`);
          if (causes.length > 5) break;
        }
        expect(causes.join(' | ')).toMatch(/KAFKA_STORAGE_ERROR|storage/i);
        // the broker's log says why, with the system's error
        expect(logLines.join('')).toMatch(/ENOSPC|no space left on device/i);
        // the beacon refuses too: 503 with Retry-After. (What still fits in the last page of a segment
        // file is really stored, and answered 201: those ids are checked below like the others.)
        const storedIds = [...beforeIds];
        let duringIds: string[] = [];
        let during: Awaited<ReturnType<typeof post>> | undefined;
        for (let i = 0; i < 10; i++) {
          duringIds = Array.from({ length: 20 }, () => eventId());
          during = await post(duringIds);
          if (during.status !== 201) break;
          storedIds.push(...duringIds);
        }
        expect(during?.status, JSON.stringify(during?.body)).toBe(503);
        expect(Number(during?.retryAfter)).toBeGreaterThan(0);

        // 3. space returns: the same log takes appends again, the beacon stores the retry
        rmSync(filler);
        await producer.disconnect();
        const again = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
        await again.connect();
        try {
          const batch = Array.from({ length: 10 }, () => n++);
          await again.send({ topic: TOPIC, acks: -1, messages: batch.map((i) => ({ key: 'after', value: value(i) })) });
          acknowledged.push(...batch);
        } finally {
          await again.disconnect();
        }
        // the beacon's retry, after the delay it asked for
        await expect.poll(async () => (await post(duringIds)).status, { timeout: 60_000, interval: 1_000 }).toBe(201);

        // every acknowledged record exactly once, in order, intact; the refused ones at most once each
        const check = async (k: Kafka) => {
          const records = await readTopic(k, TOPIC, { timeoutMs: 60_000 });
          const seen = records.map((r) => Number(/^record-(\d+)-/.exec(r.value.toString())?.[1]));
          for (const r of records)
            expect(r.value.equals(value(Number(/^record-(\d+)-/.exec(r.value.toString())?.[1])))).toBe(true);
          expect(new Set(seen).size, 'a record stored twice').toBe(seen.length);
          expect(
            acknowledged.filter((i) => !seen.includes(i)),
            'acknowledged records lost',
          ).toEqual([]);
          expect(
            records.map((r) => Number(r.offset)),
            'offsets have no gap',
          ).toEqual(records.map((_, i) => i));
          const events = await readTopic(k, TOPICS.events.name, { timeoutMs: 60_000 });
          const ids = events.map((e) => e.value.toString('latin1'));
          for (const id of [...storedIds, ...duringIds])
            expect(ids.filter((v) => v.includes(id)).length, `event ${id}`).toBe(1);
        };
        await check(kafka);
        // 4. a restart on the same directory: recovery finds an intact log, the same records
        await broker.close();
        broker = await startBroker({ port: Number(brokers[0].split(':')[1]), dataDir, logger });
        await check(testKafka(brokers, 'disk-full-after-restart'));
        expect(logLines.join('')).not.toMatch(/corrupt/i);
      } finally {
        await producer.disconnect().catch(() => {});
      }
    });

    it('rolls a segment on the full disk without taking the partition offline for good', {
      timeout: 240_000,
    }, async () => {
      // 16 KiB segments: every few sends seal a segment and open the next one, also while the disk is full
      const topic = 'disk-full.small-segments';
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({
        waitForLeaders: true,
        topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'segment.bytes', value: '16384' }] }],
      });
      await admin.disconnect();
      const value = (i: number) => Buffer.from(`small-${i}-${'y'.repeat(3000)}`);
      const acknowledged: number[] = [];
      let n = 0;
      const send = async (producer: ReturnType<Kafka['producer']>, count: number) => {
        const batch = Array.from({ length: count }, () => n++);
        await producer.send({ topic, acks: -1, messages: batch.map((i) => ({ key: 'k', value: value(i) })) });
        acknowledged.push(...batch);
      };
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
      await producer.connect();
      try {
        for (let i = 0; i < 10; i++) await send(producer, 2);
        fillDisk(filler);
        let refusals = 0;
        for (let i = 0; i < 8; i++) {
          try {
            await send(producer, 2);
          } catch {
            refusals++;
          }
        }
        expect(refusals).toBeGreaterThan(0);
      } finally {
        await producer.disconnect().catch(() => {});
      }
      rmSync(filler);
      // space is back: the partition takes appends again, without a restart
      const again = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
      await again.connect();
      try {
        await expect
          .poll(
            async () => {
              try {
                await send(again, 2);
                return 'appended';
              } catch (err) {
                return String((err as Error).message);
              }
            },
            { timeout: 30_000, interval: 500 },
          )
          .toBe('appended');
        for (let i = 0; i < 5; i++) await send(again, 2);
      } finally {
        await again.disconnect();
      }
      const records = await readTopic(kafka, topic, { timeoutMs: 60_000 });
      const seen = records.map((r) => Number(/^small-(\d+)-/.exec(r.value.toString())?.[1]));
      expect(new Set(seen).size, 'a record stored twice').toBe(seen.length);
      expect(
        acknowledged.filter((i) => !seen.includes(i)),
        'acknowledged records lost',
      ).toEqual([]);
      expect(records.map((r) => Number(r.offset))).toEqual(records.map((_, i) => i));
    });
  },
);
