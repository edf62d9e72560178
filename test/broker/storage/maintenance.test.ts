import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  InvalidConfigError,
  InvalidPartitionsError,
  InvalidTopicError,
  type LogStore,
  OffsetOutOfRangeError,
  TopicExistsError,
  UnknownTopicError,
} from '../../../services/kafka-broker/storage/api.ts';
import { encodeRecordBatch } from '../../../services/kafka-broker/storage/record-batch.ts';
import { batch, listFiles, openStore, readAll, removeDir, tempDir } from './helpers.ts';

let dir: string;
let store: LogStore;

beforeEach(async () => {
  dir = await tempDir('maint');
  store = await openStore(dir);
});

afterEach(async () => {
  await store.close();
  await removeDir(dir);
});

const DAY = 24 * 3600 * 1000;

describe('retention', () => {
  it('drops segments older than retention.ms, never the active one, and advances the log start', async () => {
    await store.createTopic('t', 1, { segmentBytes: 500, retentionMs: DAY });
    const p = store.partition('t', 0)!;
    const now = Date.now();
    for (let i = 0; i < 20; i++)
      await p.append(await batch([`old-${i}`.padEnd(60, '.')], { baseTimestamp: now - 10 * DAY }));
    for (let i = 0; i < 20; i++) await p.append(await batch([`new-${i}`.padEnd(60, '.')], { baseTimestamp: now }));
    const pdir = path.join(dir, 't-0');
    const before = await listFiles(pdir, '.log');
    await store.runMaintenance(now);
    const after = await listFiles(pdir, '.log');
    expect(after.length).toBeLessThan(before.length);
    expect(p.logStartOffset()).toBeGreaterThan(0n);
    expect(p.logStartOffset()).toBeLessThanOrEqual(20n);
    expect(await p.read(0n, 100)).toMatchObject({ errorCode: 1 });
    const recs = await readAll(p);
    expect(recs.every((r) => r.offset >= p.logStartOffset())).toBe(true);
    expect(recs.filter((r) => r.value?.startsWith('new')).length).toBe(20);
    // everything expired: the active segment stays
    await store.runMaintenance(now + 30 * DAY);
    expect((await listFiles(pdir, '.log')).length).toBe(1);
    expect(p.highWatermark()).toBe(40n);
    // the start offset survives a restart
    const start = p.logStartOffset();
    await store.close();
    store = await openStore(dir);
    expect(store.partition('t', 0)!.logStartOffset()).toBe(start);
  });

  it('drops the oldest segments beyond retention.bytes', async () => {
    await store.createTopic('t', 1, { segmentBytes: 400, retentionBytes: 1200 });
    const p = store.partition('t', 0)!;
    for (let i = 0; i < 40; i++) await p.append(await batch([`r-${i}`.padEnd(50, '.')]));
    await store.runMaintenance();
    const pdir = path.join(dir, 't-0');
    let total = 0;
    for (const f of await listFiles(pdir, '.log')) total += (await fs.stat(path.join(pdir, f))).size;
    expect(total).toBeLessThanOrEqual(1200 + 400);
    expect(p.logStartOffset()).toBeGreaterThan(0n);
    expect((await readAll(p)).at(-1)?.offset).toBe(39n);
  });

  it('deleteRecordsBefore advances the start offset, removes whole segments and persists', async () => {
    await store.createTopic('t', 1, { segmentBytes: 300 });
    const p = store.partition('t', 0)!;
    for (let i = 0; i < 30; i++) await p.append(await batch([`d-${i}`.padEnd(40, '.')]));
    expect(await p.deleteRecordsBefore(17n)).toBe(17n);
    expect(await p.deleteRecordsBefore(5n)).toBe(17n);
    await expect(p.deleteRecordsBefore(31n)).rejects.toBeInstanceOf(OffsetOutOfRangeError);
    expect(await p.read(16n, 100)).toMatchObject({ errorCode: 1, logStartOffset: 17n });
    expect((await readAll(p))[0].offset).toBe(17n);
    await store.runMaintenance();
    const logs = await listFiles(path.join(dir, 't-0'), '.log');
    expect(BigInt(logs[0].slice(0, 20))).toBeLessThanOrEqual(17n);
    expect(BigInt(logs[0].slice(0, 20))).toBeGreaterThan(0n);
    await store.close();
    store = await openStore(dir);
    expect(store.partition('t', 0)!.logStartOffset()).toBe(17n);
  });
});

describe('compaction', () => {
  async function produceKeyed(
    p: ReturnType<LogStore['partition']>,
    entries: [string, string | null][],
    ts: number,
    compression?: 'gzip' | 'zstd',
  ) {
    return p!.append(
      await encodeRecordBatch(
        entries.map(([key, value]) => ({ key, value })),
        { baseTimestamp: ts, compression },
      ),
    );
  }

  it('rejects records without a key on compacted topics', async () => {
    await store.createTopic('c', 1, { cleanupPolicy: 'compact' });
    const p = store.partition('c', 0)!;
    expect(await p.append(await batch(['no key']))).toMatchObject({ errorCode: 87 });
    expect(await p.append(await batch(['v'], { keys: ['k'], compression: 'zstd' }))).toMatchObject({ errorCode: 0 });
    expect(await p.append(await batch(['v', 'w'], { keys: ['k', null], compression: 'gzip' }))).toMatchObject({
      errorCode: 87,
    });
  });

  it('keeps the latest record per key, preserves offsets, and drops tombstones after delete.retention.ms', async () => {
    await store.createTopic('c', 1, { cleanupPolicy: 'compact', segmentBytes: 400, deleteRetentionMs: 60_000 });
    const p = store.partition('c', 0)!;
    const now = Date.now();
    const latest = new Map<string, { offset: bigint; value: string | null }>();
    for (let round = 0; round < 6; round++) {
      for (let k = 0; k < 8; k++) {
        const value = k === 3 && round === 5 ? null : `v${round}-${k}`;
        const res = await produceKeyed(p, [[`key-${k}`, value]], now, round % 2 ? 'gzip' : undefined);
        expect(res.errorCode).toBe(0);
        latest.set(`key-${k}`, { offset: res.baseOffset, value });
      }
    }
    // a later write to key-0 that stays in the active segment
    const tail = await produceKeyed(p, [['key-0', 'final']], now);
    const hw = p.highWatermark();
    const before = await readAll(p);
    expect(before.length).toBe(49);

    await store.runMaintenance(now + 1000);
    const after = await readAll(p);
    expect(p.highWatermark()).toBe(hw);
    expect(after.length).toBeLessThan(before.length);
    // offsets are preserved: every surviving record is the same record as before
    const byOffset = new Map(before.map((r) => [r.offset, r]));
    for (const r of after) expect(byOffset.get(r.offset)).toEqual(r);
    // at most one record per key in the cleaned part; that one is the latest (or the active segment's)
    const keys = new Map<string, bigint[]>();
    for (const r of after) keys.set(r.key!, [...(keys.get(r.key!) ?? []), r.offset]);
    for (const [k, offs] of keys) {
      const expectedLast = k === 'key-0' ? tail.baseOffset : latest.get(k)!.offset;
      expect(offs.at(-1)).toBe(expectedLast);
    }
    expect(after.find((r) => r.key === 'key-3')?.value).toBeNull(); // tombstone kept for now

    // after delete.retention.ms the tombstone goes too
    await store.runMaintenance(now + 120_000);
    const later = await readAll(p);
    expect(later.find((r) => r.key === 'key-3')).toBeUndefined();

    // survives a restart, and reads from a compacted-away offset land on the next record
    await store.close();
    store = await openStore(dir);
    const q = store.partition('c', 0)!;
    expect(await readAll(q)).toEqual(later);
    const gapRead = await readAll(q, 1n);
    expect(gapRead[0].offset).toBeGreaterThan(1n);
  });

  it('respects min.compaction.lag.ms', async () => {
    await store.createTopic('c', 1, { cleanupPolicy: 'compact', segmentBytes: 200, minCompactionLagMs: 3_600_000 });
    const p = store.partition('c', 0)!;
    const now = Date.now();
    for (let i = 0; i < 20; i++) await produceKeyed(p, [['same', `v${i}`]], now);
    await store.runMaintenance(now);
    expect((await readAll(p)).length).toBe(20);
    await store.runMaintenance(now + 2 * 3_600_000);
    expect((await readAll(p)).length).toBeLessThan(20);
  });

  it('leaves a valid log when a compaction was interrupted (leftover .cleaned files)', async () => {
    await store.createTopic('c', 1, { cleanupPolicy: 'compact', segmentBytes: 300 });
    const p = store.partition('c', 0)!;
    for (let i = 0; i < 20; i++) await produceKeyed(p, [[`k${i % 3}`, `v${i}`]], Date.now());
    const before = await readAll(p);
    await store.close();
    const pdir = path.join(dir, 'c-0');
    const first = (await listFiles(pdir, '.log'))[0];
    await fs.writeFile(path.join(pdir, `${first}.cleaned`), Buffer.from('half-written cleaned segment'));
    await fs.writeFile(path.join(pdir, `${first.replace('.log', '.index')}.cleaned`), Buffer.alloc(16));
    store = await openStore(dir);
    const q = store.partition('c', 0)!;
    expect(await readAll(q)).toEqual(before);
    expect((await fs.readdir(pdir)).some((n) => n.endsWith('.cleaned'))).toBe(false);
    await store.runMaintenance(Date.now() + 1000);
    expect((await readAll(q)).length).toBeLessThan(before.length);
  });
});

describe('maintenance timer', () => {
  it('runs retention on its own every maintenanceIntervalMs', async () => {
    await store.close();
    store = await openStore(dir, { maintenanceIntervalMs: 50 });
    await store.createTopic('t', 1, { segmentBytes: 300, retentionMs: DAY });
    const p = store.partition('t', 0)!;
    for (let i = 0; i < 20; i++)
      await p.append(await batch([`x${i}`.padEnd(50, '.')], { baseTimestamp: Date.now() - 3 * DAY }));
    await expect.poll(() => p.logStartOffset(), { timeout: 5000 }).toBeGreaterThan(0n);
  });
});

describe('topics', () => {
  it('creates, lists, alters, extends and deletes topics, persisting metadata', async () => {
    const info = await store.createTopic('orders', 2, { retentionMs: 1000, cleanupPolicy: 'delete,compact' as never });
    expect(info.topicId).toHaveLength(16);
    expect(info.config).toMatchObject({ retentionMs: 1000, cleanupPolicy: 'compact,delete', segmentBytes: 1 << 30 });
    expect(info.configOverrides).toEqual({ retentionMs: 1000, cleanupPolicy: 'compact,delete' });
    await expect(store.createTopic('orders', 1)).rejects.toBeInstanceOf(TopicExistsError);
    await expect(store.createTopic('bad/name', 1)).rejects.toBeInstanceOf(InvalidTopicError);
    await expect(store.createTopic('zero', 0)).rejects.toBeInstanceOf(InvalidPartitionsError);
    await expect(store.createTopic('x', 1, { cleanupPolicy: 'shred' as never })).rejects.toThrow(/cleanupPolicy/);
    await expect(store.createTopic('x', 1, { bogus: 1 } as never)).rejects.toBeInstanceOf(InvalidConfigError);
    await expect(store.createTopic('x', 1, { segmentBytes: 1.5 })).rejects.toBeInstanceOf(InvalidConfigError);
    expect(store.getTopic('x')).toBeUndefined();

    await store.createTopic('__consumer_offsets', 1, { cleanupPolicy: 'compact' }, true);
    await store.partition('orders', 1)!.append(await batch(['a'], { keys: ['k'] }));
    const altered = await store.alterTopicConfig('orders', { retentionMs: undefined, maxMessageBytes: 5000 });
    expect(altered.config.retentionMs).toBe(7 * DAY);
    expect(altered.configOverrides).toEqual({ cleanupPolicy: 'compact,delete', maxMessageBytes: 5000 });
    await expect(store.alterTopicConfig('nope', {})).rejects.toBeInstanceOf(UnknownTopicError);
    await store.createPartitions('orders', 4);
    await expect(store.createPartitions('orders', 3)).rejects.toBeInstanceOf(InvalidPartitionsError);
    expect(store.partition('orders', 3)).toBeDefined();

    await store.close();
    store = await openStore(dir);
    const names = store
      .listTopics()
      .map((t) => t.name)
      .sort();
    expect(names).toEqual(['__consumer_offsets', 'orders']);
    const reopened = store.getTopic('orders')!;
    expect(reopened).toMatchObject({ partitions: 4, internal: false, config: { maxMessageBytes: 5000 } });
    expect(reopened.topicId.equals(info.topicId)).toBe(true);
    expect(store.getTopic('__consumer_offsets')!.internal).toBe(true);
    expect(store.partition('orders', 1)!.highWatermark()).toBe(1n);

    const p = store.partition('orders', 1)!;
    await store.deleteTopic('orders');
    expect(store.getTopic('orders')).toBeUndefined();
    expect(store.partition('orders', 0)).toBeUndefined();
    expect((await p.append(await batch(['late'], { keys: ['k'] }))).errorCode).toBe(3);
    expect((await fs.readdir(dir)).filter((n) => n.startsWith('orders'))).toEqual([]);
    await expect(store.deleteTopic('orders')).rejects.toBeInstanceOf(UnknownTopicError);
    // recreated topic starts empty
    await store.createTopic('orders', 1);
    expect(store.partition('orders', 0)!.highWatermark()).toBe(0n);
  });

  it('applies the store default config', async () => {
    await store.close();
    store = await openStore(dir, { defaultTopicConfig: { retentionMs: 5000 } });
    const t = await store.createTopic('d', 1);
    expect(t.config.retentionMs).toBe(5000);
    expect(t.configOverrides).toEqual({});
  });
});
