// Committed offsets and group metadata survive a restart: the real LogStore on a temp dir.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createGroupCoordinator } from '../../../services/kafka-broker/groups/index.ts';
import { decodeRecordBatches } from '../../../services/kafka-broker/groups/offsets-codec.ts';
import { openLogStore } from '../../../services/kafka-broker/storage/index.ts';
import type { LogStore } from '../../../services/kafka-broker/storage/api.ts';

const dirs: string[] = [];
const stores: LogStore[] = [];

afterEach(async () => {
  while (stores.length > 0)
    await stores
      .pop()!
      .close()
      .catch(() => {});
  while (dirs.length > 0) await rm(dirs.pop()!, { recursive: true, force: true });
});

async function openStore(dir: string): Promise<LogStore> {
  const s = await openLogStore({ dataDir: dir, fsync: 'always', maintenanceIntervalMs: 3_600_000 });
  stores.push(s);
  return s;
}

async function countRecords(log: LogStore): Promise<number> {
  const p = log.partition('__consumer_offsets', 0)!;
  let n = 0;
  let offset = p.logStartOffset();
  while (offset < p.highWatermark()) {
    const r = await p.read(offset, 1 << 20);
    if (r.chunks.length === 0) break;
    for (const chunk of r.chunks) {
      for (const b of await decodeRecordBatches(chunk)) {
        n += b.records.filter((rec) => rec.offset >= offset).length;
        offset = b.lastOffset + 1n;
      }
    }
  }
  return n;
}

const commit = (
  groupId: string,
  generationId: number,
  memberId: string,
  partitions: [number, bigint, string | null][],
) => ({
  groupId,
  generationId,
  memberId,
  groupInstanceId: null,
  topics: [
    {
      name: 'orders',
      partitions: partitions.map(([partition, offset, metadata]) => ({ partition, offset, leaderEpoch: 2, metadata })),
    },
  ],
});

describe('offsets persistence (real LogStore)', () => {
  it('creates __consumer_offsets as an internal compacted topic', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'groups-topic-'));
    dirs.push(dir);
    const log = await openStore(dir);
    const c = await createGroupCoordinator({ log });
    const t = log.getTopic('__consumer_offsets')!;
    expect(t).toMatchObject({ partitions: 1, internal: true });
    expect(t.config.cleanupPolicy).toBe('compact');
    await c.close();
  });

  it('offsets, group metadata and deletions survive a restart and a compaction', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'groups-persist-'));
    dirs.push(dir);

    let log = await openStore(dir);
    await log.createTopic('orders', 3);
    // small segments so that compaction has sealed segments to rewrite; the coordinator uses an
    // existing offsets topic as it is
    await log.createTopic(
      '__consumer_offsets',
      1,
      { cleanupPolicy: 'compact', segmentBytes: 1024, deleteRetentionMs: 0, minCompactionLagMs: 0 },
      true,
    );
    let c = await createGroupCoordinator({ log, initialRebalanceDelayMs: 0 });
    const topic = log.getTopic('__consumer_offsets')!;
    expect(topic.internal).toBe(true);
    expect(topic.config.cleanupPolicy).toBe('compact');

    // a managed group: join, sync, commit several times (older values must be superseded)
    const j = await c.join({
      groupId: 'app',
      memberId: '',
      groupInstanceId: null,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.from('sub') }],
      sessionTimeoutMs: 30_000,
      rebalanceTimeoutMs: 30_000,
      clientId: 'cli',
      clientHost: '/127.0.0.1',
      requireKnownMemberId: false,
    });
    expect(j.errorCode).toBe(0);
    const s = await c.sync({
      groupId: 'app',
      generationId: 1,
      memberId: j.memberId,
      groupInstanceId: null,
      protocolType: 'consumer',
      protocolName: 'range',
      assignments: [{ memberId: j.memberId, assignment: Buffer.from('all') }],
    });
    expect(s.errorCode).toBe(0);
    for (let i = 0; i < 5; i++) {
      const r = await c.commitOffsets(
        commit('app', 1, j.memberId, [
          [0, BigInt(100 + i), 'm0'],
          [1, BigInt(200 + i), null],
          [2, BigInt(300 + i), 'm2'],
        ]),
      );
      expect(r.topics[0].partitions.map((p) => p.errorCode)).toEqual([0, 0, 0]);
    }
    // simple-commit groups, one of them deleted
    expect((await c.commitOffsets(commit('batch', -1, '', [[1, 7n, 'x']]))).topics[0].partitions[0].errorCode).toBe(0);
    expect((await c.commitOffsets(commit('tmp', -1, '', [[0, 9n, null]]))).topics[0].partitions[0].errorCode).toBe(0);
    expect(c.deleteGroups(['tmp'])).toEqual([{ groupId: 'tmp', errorCode: 0 }]);
    const before = c.fetchOffsets({ groupId: 'app', topics: null });
    expect(before.topics[0].partitions.map((p) => p.offset)).toEqual([104n, 201n + 3n, 304n]);
    await c.close();
    await log.close();
    stores.length = 0;

    // restart: everything is rebuilt from __consumer_offsets
    log = await openStore(dir);
    c = await createGroupCoordinator({ log, initialRebalanceDelayMs: 0 });
    const verifyOffsets = () => {
      expect(c.fetchOffsets({ groupId: 'app', topics: null })).toEqual(before);
      expect(
        c.fetchOffsets({ groupId: 'app', topics: [{ name: 'orders', partitions: [1, 5] }] }).topics[0].partitions,
      ).toEqual([
        { partition: 1, offset: 204n, leaderEpoch: 2, metadata: '', errorCode: 0 },
        { partition: 5, offset: -1n, leaderEpoch: -1, metadata: '', errorCode: 0 },
      ]);
      expect(
        c.fetchOffsets({ groupId: 'batch', topics: [{ name: 'orders', partitions: [1] }] }).topics[0].partitions[0],
      ).toMatchObject({ offset: 7n, metadata: 'x' });
      expect(c.fetchOffsets({ groupId: 'tmp', topics: null }).topics).toEqual([]);
    };
    verifyOffsets();
    expect(c.listGroups().sort((a, b) => a.groupId.localeCompare(b.groupId))).toEqual([
      { groupId: 'app', protocolType: 'consumer', groupState: 'Stable' },
      { groupId: 'batch', protocolType: '', groupState: 'Empty' },
    ]);
    // the restored member keeps its generation and assignment
    expect(
      c.heartbeat({ groupId: 'app', generationId: 1, memberId: j.memberId, groupInstanceId: null }).errorCode,
    ).toBe(0);
    const again = await c.sync({
      groupId: 'app',
      generationId: 1,
      memberId: j.memberId,
      groupInstanceId: null,
      protocolType: null,
      protocolName: null,
      assignments: [],
    });
    expect(again.assignment.toString()).toBe('all');

    // the member leaves (group -> Empty, persisted); compaction rewrites the sealed segments
    expect(
      c.leave({ groupId: 'app', members: [{ memberId: j.memberId, groupInstanceId: null }] }).members[0].errorCode,
    ).toBe(0);
    await c.close();
    const recordsBefore = await countRecords(log);
    await log.runMaintenance(Date.now() + 10 * 86_400_000);
    expect(await countRecords(log)).toBeLessThan(recordsBefore);
    await log.close();
    stores.length = 0;

    log = await openStore(dir);
    c = await createGroupCoordinator({ log, initialRebalanceDelayMs: 0 });
    verifyOffsets();
    expect(c.describeGroups(['app'])[0]).toMatchObject({ groupState: 'Empty', protocolType: 'consumer', members: [] });
    // the next generation continues from the persisted one
    const j2 = await c.join({
      groupId: 'app',
      memberId: '',
      groupInstanceId: null,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.from('sub') }],
      sessionTimeoutMs: 30_000,
      rebalanceTimeoutMs: 30_000,
      clientId: 'cli',
      clientHost: '/127.0.0.1',
      requireKnownMemberId: false,
    });
    expect(j2.generationId).toBe(3);
    await c.close();
  });
});
