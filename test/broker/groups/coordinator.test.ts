import { afterEach, describe, expect, it, vi } from 'vitest';
import type {
  GroupCoordinator,
  JoinGroupRequest,
  JoinGroupResponse,
} from '../../../services/kafka-broker/groups/api.ts';
import {
  type ClassicGroupCoordinator,
  createGroupCoordinator,
  ErrorCode as E,
  systemClock,
} from '../../../services/kafka-broker/groups/index.ts';
import { FakeLogStore } from './fake-log.ts';

const open: GroupCoordinator[] = [];

afterEach(async () => {
  while (open.length > 0) await open.pop()!.close();
  vi.useRealTimers();
});

/** Fake timers for the tests about timeouts: the coordinator's default clock reads the global timers, so
 *  a test jumps over a session or rebalance timeout with vi.advanceTimersByTimeAsync instead of sleeping.
 *  Zero-delay timers (a join's initial delay of 0) still run as real time passes. */
function fakeTimers() {
  vi.useFakeTimers({ shouldAdvanceTime: true });
}

async function make(opts: Record<string, unknown> = {}, log = new FakeLogStore()) {
  if (!log.getTopic('orders')) await log.createTopic('orders', 4);
  const c = await createGroupCoordinator({ log, initialRebalanceDelayMs: 0, minSessionTimeoutMs: 10, ...opts });
  open.push(c);
  return { log, c, state: (g = 'g') => (c as ClassicGroupCoordinator).groupState(g) };
}

function jreq(o: Partial<JoinGroupRequest> = {}): JoinGroupRequest {
  return {
    groupId: 'g',
    memberId: '',
    groupInstanceId: null,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: Buffer.from('sub') }],
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 2_000,
    clientId: 'client',
    clientHost: '/127.0.0.1',
    requireKnownMemberId: false,
    ...o,
  };
}

function syncReq(j: JoinGroupResponse, assignments: { memberId: string; assignment: Buffer }[] = [], groupId = 'g') {
  return {
    groupId,
    generationId: j.generationId,
    memberId: j.memberId,
    groupInstanceId: null,
    protocolType: 'consumer',
    protocolName: j.protocolName,
    assignments,
  };
}

/** joins `n` members at once and completes the sync with assignment `a-<index>` */
async function stableGroup(c: GroupCoordinator, n: number, o: Partial<JoinGroupRequest> = {}) {
  const joins = await Promise.all(Array.from({ length: n }, (_, i) => c.join(jreq({ clientId: `client${i}`, ...o }))));
  const leader = joins.find((j) => j.memberId === j.leader)!;
  const assignments = joins.map((j, i) => ({ memberId: j.memberId, assignment: Buffer.from(`a-${i}`) }));
  const syncs = await Promise.all(
    joins.map((j) => c.sync(syncReq(j, j === leader ? assignments : [], o.groupId ?? 'g'))),
  );
  return { joins, leader, syncs };
}

function commitReq(o: {
  groupId?: string;
  generationId: number;
  memberId: string;
  offset?: bigint;
  partition?: number;
  topic?: string;
}) {
  return {
    groupId: o.groupId ?? 'g',
    generationId: o.generationId,
    memberId: o.memberId,
    groupInstanceId: null,
    topics: [
      {
        name: o.topic ?? 'orders',
        partitions: [{ partition: o.partition ?? 0, offset: o.offset ?? 42n, leaderEpoch: 3, metadata: 'meta' }],
      },
    ],
  };
}

const codes = (r: { topics: { partitions: { errorCode: number }[] }[] }) =>
  r.topics.flatMap((t) => t.partitions.map((p) => p.errorCode));

describe('join / sync', () => {
  it('single member joins, syncs and becomes stable', async () => {
    const { c, state } = await make();
    const j = await c.join(jreq());
    expect(j.errorCode).toBe(0);
    expect(j.generationId).toBe(1);
    expect(j.leader).toBe(j.memberId);
    expect(j.memberId.startsWith('client-')).toBe(true);
    expect(j.protocolType).toBe('consumer');
    expect(j.protocolName).toBe('range');
    expect(j.members).toEqual([{ memberId: j.memberId, groupInstanceId: null, metadata: Buffer.from('sub') }]);
    expect(state()).toBe('CompletingRebalance');
    const s = await c.sync(syncReq(j, [{ memberId: j.memberId, assignment: Buffer.from('mine') }]));
    expect(s).toEqual({
      errorCode: 0,
      protocolType: 'consumer',
      protocolName: 'range',
      assignment: Buffer.from('mine'),
    });
    expect(state()).toBe('Stable');
    expect(c.heartbeat({ groupId: 'g', generationId: 1, memberId: j.memberId, groupInstanceId: null }).errorCode).toBe(
      0,
    );
    // a follower-style rejoin with unchanged metadata by the (only) leader forces a new generation
    const again = await c.join(jreq({ memberId: j.memberId }));
    expect(again.generationId).toBe(2);
  });

  it('three members join one generation; the leader assigns and everybody receives its assignment', async () => {
    fakeTimers();
    const { c, state } = await make({ initialRebalanceDelayMs: 50 });
    const joining = Promise.all([0, 1, 2].map((i) => c.join(jreq({ clientId: `c${i}` }))));
    // the initial delay (50 ms), extended once per member that arrived during it
    await vi.advanceTimersByTimeAsync(200);
    const joins = await joining;
    expect(new Set(joins.map((j) => j.generationId))).toEqual(new Set([1]));
    expect(new Set(joins.map((j) => j.memberId)).size).toBe(3);
    const leaders = joins.filter((j) => j.memberId === j.leader);
    expect(leaders).toHaveLength(1);
    expect(leaders[0].members.map((m) => m.memberId).sort()).toEqual(joins.map((j) => j.memberId).sort());
    for (const j of joins) if (j !== leaders[0]) expect(j.members).toEqual([]);

    // followers block until the leader's SyncGroup arrives
    const followers = joins.filter((j) => j !== leaders[0]);
    let followersAnswered = false;
    const followerSyncs = followers.map((j) => c.sync(syncReq(j)));
    void Promise.race(followerSyncs).then(() => {
      followersAnswered = true;
    });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(followersAnswered).toBe(false);
    expect(state()).toBe('CompletingRebalance');
    const assignments = joins.map((j) => ({ memberId: j.memberId, assignment: Buffer.from(`for-${j.memberId}`) }));
    const leaderSync = await c.sync(syncReq(leaders[0], assignments));
    expect(leaderSync.assignment.toString()).toBe(`for-${leaders[0].memberId}`);
    const fs = await Promise.all(followerSyncs);
    fs.forEach((s, i) => {
      expect(s.errorCode).toBe(0);
      expect(s.assignment.toString()).toBe(`for-${followers[i].memberId}`);
    });
    expect(state()).toBe('Stable');
  });

  it('selects a protocol every member supports by preference vote, rejects inconsistent ones', async () => {
    const { c } = await make({ initialRebalanceDelayMs: 30 });
    const p = (...names: string[]) => names.map((name) => ({ name, metadata: Buffer.from(name) }));
    const joins = await Promise.all([
      c.join(jreq({ protocols: p('cooperative-sticky', 'range') })),
      c.join(jreq({ protocols: p('range', 'cooperative-sticky') })),
      c.join(jreq({ protocols: p('range', 'roundrobin') })),
    ]);
    expect(joins.map((j) => j.protocolName)).toEqual(['range', 'range', 'range']);
    const leader = joins.find((j) => j.leader === j.memberId)!;
    expect(leader.members.map((m) => m.metadata.toString())).toEqual(['range', 'range', 'range']);
    expect((await c.join(jreq({ protocols: p('roundrobin') }))).errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL);
    expect((await c.join(jreq({ protocolType: 'connect' }))).errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL);
    expect((await c.join(jreq({ groupId: 'other', protocolType: '' }))).errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL);
  });

  it('validates group id, session timeout and unknown members', async () => {
    const { c } = await make({ minSessionTimeoutMs: 100, maxSessionTimeoutMs: 5000 });
    expect((await c.join(jreq({ groupId: '' }))).errorCode).toBe(E.INVALID_GROUP_ID);
    expect((await c.join(jreq({ sessionTimeoutMs: 50 }))).errorCode).toBe(E.INVALID_SESSION_TIMEOUT);
    expect((await c.join(jreq({ sessionTimeoutMs: 6000 }))).errorCode).toBe(E.INVALID_SESSION_TIMEOUT);
    expect((await c.join(jreq({ memberId: 'ghost', sessionTimeoutMs: 1000 }))).errorCode).toBe(E.UNKNOWN_MEMBER_ID);
  });

  it('SyncGroup errors: wrong generation 22, unknown member 25, rebalance in progress 27', async () => {
    const { c } = await make();
    const { joins } = await stableGroup(c, 2);
    const [a, b] = joins;
    expect((await c.sync({ ...syncReq(a), generationId: 7 })).errorCode).toBe(E.ILLEGAL_GENERATION);
    expect((await c.sync({ ...syncReq(a), memberId: 'nobody' })).errorCode).toBe(E.UNKNOWN_MEMBER_ID);
    expect((await c.sync({ ...syncReq(a), groupId: 'nogroup' })).errorCode).toBe(E.UNKNOWN_MEMBER_ID);
    expect((await c.sync({ ...syncReq(a), protocolName: 'other' })).errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL);
    // the leader rejoins: the group prepares a rebalance and waits for b
    const rejoin = c.join(jreq({ memberId: a.leader }));
    expect((await c.sync(syncReq(b))).errorCode).toBe(E.REBALANCE_IN_PROGRESS);
    expect(c.heartbeat({ groupId: 'g', generationId: 1, memberId: b.memberId, groupInstanceId: null }).errorCode).toBe(
      E.REBALANCE_IN_PROGRESS,
    );
    const rb = await c.join(jreq({ memberId: b.memberId }));
    expect((await rejoin).generationId).toBe(2);
    expect(rb.generationId).toBe(2);
  });

  it('a follower waiting in SyncGroup gets 27 when a rebalance starts before the leader syncs', async () => {
    const { c } = await make();
    const joins = await Promise.all([c.join(jreq()), c.join(jreq())]);
    const follower = joins.find((j) => j.leader !== j.memberId)!;
    const pending = c.sync(syncReq(follower));
    // a third member joins -> PreparingRebalance
    const third = c.join(jreq({ clientId: 'late' }));
    expect((await pending).errorCode).toBe(E.REBALANCE_IN_PROGRESS);
    const rejoins = await Promise.all(joins.map((j) => c.join(jreq({ memberId: j.memberId }))));
    expect((await third).generationId).toBe(2);
    expect(rejoins.map((r) => r.generationId)).toEqual([2, 2]);
  });
});

describe('membership changes', () => {
  it('a member leaves -> the other two rebalance into a new generation', async () => {
    const { c, state } = await make();
    const { joins } = await stableGroup(c, 3);
    const [a, b, cc] = joins;
    const left = c.leave({ groupId: 'g', members: [{ memberId: b.memberId, groupInstanceId: null }] });
    expect(left).toEqual({ errorCode: 0, members: [{ memberId: b.memberId, groupInstanceId: null, errorCode: 0 }] });
    expect(state()).toBe('PreparingRebalance');
    expect(c.heartbeat({ groupId: 'g', generationId: 1, memberId: a.memberId, groupInstanceId: null }).errorCode).toBe(
      E.REBALANCE_IN_PROGRESS,
    );
    const [ra, rc] = await Promise.all([
      c.join(jreq({ memberId: a.memberId })),
      c.join(jreq({ memberId: cc.memberId })),
    ]);
    expect(ra.generationId).toBe(2);
    expect(rc.generationId).toBe(2);
    const leader = [ra, rc].find((j) => j.leader === j.memberId)!;
    expect(leader.members.map((m) => m.memberId).sort()).toEqual([a.memberId, cc.memberId].sort());
    // unknown member leaving: per-member error
    const again = c.leave({ groupId: 'g', members: [{ memberId: b.memberId, groupInstanceId: null }] });
    expect(again.members[0].errorCode).toBe(E.UNKNOWN_MEMBER_ID);
    expect(c.leave({ groupId: 'nope', members: [{ memberId: 'x', groupInstanceId: null }] }).members[0].errorCode).toBe(
      E.UNKNOWN_MEMBER_ID,
    );
  });

  it('batch leave of every member empties the group', async () => {
    const { c, state } = await make();
    const { joins } = await stableGroup(c, 2);
    const r = c.leave({ groupId: 'g', members: joins.map((j) => ({ memberId: j.memberId, groupInstanceId: null })) });
    expect(r.members.map((m) => m.errorCode)).toEqual([0, 0]);
    expect(state()).toBe('Empty');
    expect(c.describeGroups(['g'])[0]).toMatchObject({ groupState: 'Empty', members: [] });
  });

  it('session timeout expires a silent member and the rest rebalance', async () => {
    fakeTimers();
    const { c, state } = await make();
    const { joins } = await stableGroup(c, 2, { sessionTimeoutMs: 200, rebalanceTimeoutMs: 1000 });
    const [a, b] = joins;
    const hb = setInterval(
      () => c.heartbeat({ groupId: 'g', generationId: 1, memberId: a.memberId, groupInstanceId: null }),
      40,
    );
    try {
      await vi.advanceTimersByTimeAsync(350);
    } finally {
      clearInterval(hb);
    }
    expect(state()).toBe('PreparingRebalance');
    expect(c.heartbeat({ groupId: 'g', generationId: 1, memberId: a.memberId, groupInstanceId: null }).errorCode).toBe(
      E.REBALANCE_IN_PROGRESS,
    );
    expect(c.heartbeat({ groupId: 'g', generationId: 1, memberId: b.memberId, groupInstanceId: null }).errorCode).toBe(
      E.UNKNOWN_MEMBER_ID,
    );
    const ra = await c.join(jreq({ memberId: a.memberId, sessionTimeoutMs: 200, rebalanceTimeoutMs: 1000 }));
    expect(ra.generationId).toBe(2);
    expect(ra.members.map((m) => m.memberId)).toEqual([a.memberId]);
  });

  it('members that do not rejoin within the rebalance timeout are removed', async () => {
    fakeTimers();
    const { c } = await make();
    const { joins, leader } = await stableGroup(c, 3, { rebalanceTimeoutMs: 200 });
    const others = joins.filter((j) => j !== leader);
    const t0 = Date.now();
    const rejoining = Promise.all([
      c.join(jreq({ memberId: leader.memberId, rebalanceTimeoutMs: 200 })),
      c.join(jreq({ memberId: others[0].memberId, rebalanceTimeoutMs: 200 })),
    ]);
    await vi.advanceTimersByTimeAsync(200);
    const [rl, r1] = await rejoining;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
    expect(rl.generationId).toBe(2);
    expect(r1.generationId).toBe(2);
    expect(rl.members.map((m) => m.memberId).sort()).toEqual([leader.memberId, others[0].memberId].sort());
    expect(
      c.heartbeat({ groupId: 'g', generationId: 1, memberId: others[1].memberId, groupInstanceId: null }).errorCode,
    ).toBe(E.UNKNOWN_MEMBER_ID);
  });

  it('a member that never sends SyncGroup is removed after the rebalance timeout', async () => {
    fakeTimers();
    const { c, state } = await make();
    const joins = await Promise.all([
      c.join(jreq({ rebalanceTimeoutMs: 150 })),
      c.join(jreq({ rebalanceTimeoutMs: 150 })),
    ]);
    const leader = joins.find((j) => j.leader === j.memberId)!;
    const follower = joins.find((j) => j !== leader)!;
    await c.sync(
      syncReq(
        leader,
        joins.map((j) => ({ memberId: j.memberId, assignment: Buffer.from('x') })),
      ),
    );
    expect(state()).toBe('Stable');
    await vi.advanceTimersByTimeAsync(250);
    expect(state()).toBe('PreparingRebalance');
    expect(
      c.heartbeat({ groupId: 'g', generationId: 1, memberId: follower.memberId, groupInstanceId: null }).errorCode,
    ).toBe(E.UNKNOWN_MEMBER_ID);
  });

  it('MEMBER_ID_REQUIRED: a new member gets an id and must rejoin with it', async () => {
    const { c, state } = await make();
    const first = await c.join(jreq({ requireKnownMemberId: true, clientId: 'app' }));
    expect(first.errorCode).toBe(E.MEMBER_ID_REQUIRED);
    expect(first.memberId).toMatch(/^app-[0-9a-f-]{36}$/);
    expect(first.generationId).toBe(-1);
    const second = await c.join(jreq({ requireKnownMemberId: true, clientId: 'app', memberId: first.memberId }));
    expect(second.errorCode).toBe(0);
    expect(second.memberId).toBe(first.memberId);
    expect(second.leader).toBe(first.memberId);
    expect(second.generationId).toBe(1);
    expect(state()).toBe('CompletingRebalance');
  });

  it('a pending MEMBER_ID_REQUIRED member that never comes back expires', async () => {
    fakeTimers();
    const { c } = await make();
    const first = await c.join(jreq({ requireKnownMemberId: true, sessionTimeoutMs: 100 }));
    expect(first.errorCode).toBe(E.MEMBER_ID_REQUIRED);
    expect(c.listGroups().map((g) => g.groupId)).toEqual(['g']);
    await vi.advanceTimersByTimeAsync(200);
    expect(c.listGroups()).toEqual([]);
    expect((await c.join(jreq({ memberId: first.memberId }))).errorCode).toBe(E.UNKNOWN_MEMBER_ID);
  });

  it('static membership: a restarted instance replaces its old member id without a rebalance; the old id is fenced', async () => {
    const { c, state } = await make();
    const { joins } = await stableGroup(c, 2, { groupInstanceId: null });
    // add a static member
    const staticJoin = c.join(jreq({ groupInstanceId: 'inst-1', clientId: 'static' }));
    const rejoins = await Promise.all(joins.map((j) => c.join(jreq({ memberId: j.memberId }))));
    const sj = await staticJoin;
    expect(sj.memberId.startsWith('inst-1-')).toBe(true);
    const all = [...rejoins, sj];
    const leader = all.find((j) => j.leader === j.memberId)!;
    await Promise.all(
      all.map((j) =>
        c.sync(
          syncReq(
            j,
            j === leader ? all.map((x) => ({ memberId: x.memberId, assignment: Buffer.from(`as-${x.memberId}`) })) : [],
          ),
        ),
      ),
    );
    expect(state()).toBe('Stable');
    const gen = sj.generationId;

    // the static instance restarts and joins with an empty member id
    const restarted = await c.join(jreq({ groupInstanceId: 'inst-1', clientId: 'static' }));
    expect(restarted.errorCode).toBe(0);
    expect(restarted.memberId).not.toBe(sj.memberId);
    expect(restarted.generationId).toBe(gen);
    expect(state()).toBe('Stable');
    const s = await c.sync({ ...syncReq(restarted), groupInstanceId: 'inst-1' });
    expect(s.assignment.toString()).toBe(`as-${sj.memberId}`);
    expect(
      c.heartbeat({ groupId: 'g', generationId: gen, memberId: sj.memberId, groupInstanceId: 'inst-1' }).errorCode,
    ).toBe(E.FENCED_INSTANCE_ID);
    expect(
      c.heartbeat({ groupId: 'g', generationId: gen, memberId: restarted.memberId, groupInstanceId: 'inst-1' })
        .errorCode,
    ).toBe(0);
    expect((await c.join(jreq({ memberId: sj.memberId, groupInstanceId: 'inst-1' }))).errorCode).toBe(
      E.FENCED_INSTANCE_ID,
    );
    const fencedCommit = await c.commitOffsets({
      ...commitReq({ generationId: gen, memberId: sj.memberId }),
      groupInstanceId: 'inst-1',
    });
    expect(codes(fencedCommit)).toEqual([E.FENCED_INSTANCE_ID]);
    // leaving by instance id
    const left = c.leave({ groupId: 'g', members: [{ memberId: '', groupInstanceId: 'inst-1' }] });
    expect(left.members[0].errorCode).toBe(0);
    expect(state()).toBe('PreparingRebalance');
  });

  it('close() answers pending joins and syncs with COORDINATOR_NOT_AVAILABLE', async () => {
    fakeTimers();
    const { c } = await make({ initialRebalanceDelayMs: 10_000 });
    const pendingJoin = c.join(jreq({ rebalanceTimeoutMs: 60_000 }));
    await vi.advanceTimersByTimeAsync(5_000);
    await c.close();
    expect((await pendingJoin).errorCode).toBe(E.COORDINATOR_NOT_AVAILABLE);
    expect((await c.join(jreq())).errorCode).toBe(E.COORDINATOR_NOT_AVAILABLE);
    expect(c.heartbeat({ groupId: 'g', generationId: 1, memberId: 'x', groupInstanceId: null }).errorCode).toBe(
      E.COORDINATOR_NOT_AVAILABLE,
    );
  });

  it('close() answers followers waiting for the leader', async () => {
    const { c } = await make();
    const joins = await Promise.all([c.join(jreq()), c.join(jreq())]);
    const follower = joins.find((j) => j.leader !== j.memberId)!;
    const pending = c.sync(syncReq(follower));
    await c.close();
    expect((await pending).errorCode).toBe(E.COORDINATOR_NOT_AVAILABLE);
  });
});

describe('offsets', () => {
  it('rejects a commit from a stale generation or unknown member, accepts the current one', async () => {
    const { c } = await make();
    const { joins } = await stableGroup(c, 1);
    const m = joins[0];
    expect(codes(await c.commitOffsets(commitReq({ generationId: 0, memberId: m.memberId })))).toEqual([
      E.ILLEGAL_GENERATION,
    ]);
    expect(codes(await c.commitOffsets(commitReq({ generationId: 1, memberId: 'ghost' })))).toEqual([
      E.UNKNOWN_MEMBER_ID,
    ]);
    expect(codes(await c.commitOffsets(commitReq({ generationId: -1, memberId: '' })))).toEqual([E.UNKNOWN_MEMBER_ID]);
    expect(codes(await c.commitOffsets(commitReq({ generationId: 1, memberId: m.memberId, offset: 7n })))).toEqual([0]);
    expect(codes(await c.commitOffsets(commitReq({ groupId: 'unknown', generationId: 3, memberId: 'x' })))).toEqual([
      E.ILLEGAL_GENERATION,
    ]);
    const f = c.fetchOffsets({ groupId: 'g', topics: [{ name: 'orders', partitions: [0, 1] }] });
    expect(f).toEqual({
      errorCode: 0,
      topics: [
        {
          name: 'orders',
          partitions: [
            { partition: 0, offset: 7n, leaderEpoch: 3, metadata: 'meta', errorCode: 0 },
            { partition: 1, offset: -1n, leaderEpoch: -1, metadata: '', errorCode: 0 },
          ],
        },
      ],
    });
  });

  it('commits during CompletingRebalance get 27; during PreparingRebalance the old generation may commit', async () => {
    const { c } = await make();
    const { joins, leader } = await stableGroup(c, 2);
    const follower = joins.find((j) => j !== leader)!;
    const rejoin = c.join(jreq({ memberId: leader.memberId }));
    expect(codes(await c.commitOffsets(commitReq({ generationId: 1, memberId: follower.memberId })))).toEqual([0]);
    const [rl, rf] = await Promise.all([rejoin, c.join(jreq({ memberId: follower.memberId }))]);
    expect(rl.generationId).toBe(2);
    expect(codes(await c.commitOffsets(commitReq({ generationId: 2, memberId: rf.memberId })))).toEqual([
      E.REBALANCE_IN_PROGRESS,
    ]);
  });

  it('simple commits (generation -1, no member) work for unknown and Empty groups', async () => {
    const { c } = await make();
    const r = await c.commitOffsets({
      groupId: 'simple',
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      topics: [
        {
          name: 'orders',
          partitions: [
            { partition: 0, offset: 10n, leaderEpoch: -1, metadata: null },
            { partition: 3, offset: 13n, leaderEpoch: -1, metadata: 'x' },
            { partition: 9, offset: 1n, leaderEpoch: -1, metadata: null },
          ],
        },
        { name: 'missing-topic', partitions: [{ partition: 0, offset: 1n, leaderEpoch: -1, metadata: null }] },
      ],
    });
    expect(r.topics.map((t) => t.partitions.map((p) => p.errorCode))).toEqual([
      [0, 0, E.UNKNOWN_TOPIC_OR_PARTITION],
      [E.UNKNOWN_TOPIC_OR_PARTITION],
    ]);
    expect(c.listGroups()).toEqual([{ groupId: 'simple', protocolType: '', groupState: 'Empty' }]);
    const all = c.fetchOffsets({ groupId: 'simple', topics: null });
    expect(all.topics).toEqual([
      {
        name: 'orders',
        partitions: [
          { partition: 0, offset: 10n, leaderEpoch: -1, metadata: '', errorCode: 0 },
          { partition: 3, offset: 13n, leaderEpoch: -1, metadata: 'x', errorCode: 0 },
        ],
      },
    ]);
    expect(c.fetchOffsets({ groupId: 'nobody', topics: null })).toEqual({ errorCode: 0, topics: [] });
    const big = await c.commitOffsets({
      ...commitReq({ groupId: 'simple', generationId: -1, memberId: '' }),
      topics: [
        { name: 'orders', partitions: [{ partition: 1, offset: 1n, leaderEpoch: -1, metadata: 'x'.repeat(5000) }] },
      ],
    });
    expect(codes(big)).toEqual([E.OFFSET_METADATA_TOO_LARGE]);
  });

  it('a failed append is reported (15) and not visible in fetches', async () => {
    const { c, log } = await make();
    log.fake('__consumer_offsets').failNext = 1;
    expect(codes(await c.commitOffsets(commitReq({ groupId: 's', generationId: -1, memberId: '' })))).toEqual([
      E.COORDINATOR_NOT_AVAILABLE,
    ]);
    expect(
      c.fetchOffsets({ groupId: 's', topics: [{ name: 'orders', partitions: [0] }] }).topics[0].partitions[0].offset,
    ).toBe(-1n);
    expect(codes(await c.commitOffsets(commitReq({ groupId: 's', generationId: -1, memberId: '' })))).toEqual([0]);
  });

  it('concurrent commits are coalesced into ordered appends; the last one wins', async () => {
    const { c, log } = await make();
    const p = log.fake('__consumer_offsets');
    p.appendDelayMs = 5;
    const rs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        c.commitOffsets(commitReq({ groupId: 's', generationId: -1, memberId: '', offset: BigInt(i) })),
      ),
    );
    expect(rs.flatMap(codes).every((e) => e === 0)).toBe(true);
    expect(
      c.fetchOffsets({ groupId: 's', topics: [{ name: 'orders', partitions: [0] }] }).topics[0].partitions[0].offset,
    ).toBe(19n);
    expect(p.batches.length).toBeLessThan(20);
  });

  it('group metadata, offsets and deletions survive a restart (replay of __consumer_offsets)', async () => {
    const log = new FakeLogStore();
    const first = await make({}, log);
    const { joins, leader } = await stableGroup(first.c, 2, { groupId: 'live' });
    expect(
      codes(
        await first.c.commitOffsets(
          commitReq({ groupId: 'live', generationId: 1, memberId: leader.memberId, offset: 99n }),
        ),
      ),
    ).toEqual([0]);
    expect(
      codes(await first.c.commitOffsets(commitReq({ groupId: 'gone', generationId: -1, memberId: '', offset: 5n }))),
    ).toEqual([0]);
    expect(
      codes(await first.c.commitOffsets(commitReq({ groupId: 'kept', generationId: -1, memberId: '', offset: 6n }))),
    ).toEqual([0]);
    expect(first.c.deleteGroups(['gone'])).toEqual([{ groupId: 'gone', errorCode: 0 }]);
    await first.c.close();

    const second = await make({}, log);
    const c = second.c;
    expect(c.listGroups().sort((a, b) => a.groupId.localeCompare(b.groupId))).toEqual([
      { groupId: 'kept', protocolType: '', groupState: 'Empty' },
      { groupId: 'live', protocolType: 'consumer', groupState: 'Stable' },
    ]);
    expect(
      c.fetchOffsets({ groupId: 'live', topics: [{ name: 'orders', partitions: [0] }] }).topics[0].partitions[0],
    ).toMatchObject({ offset: 99n, leaderEpoch: 3, metadata: 'meta' });
    expect(c.fetchOffsets({ groupId: 'gone', topics: null }).topics).toEqual([]);
    // the restored members keep working without a rebalance
    for (const j of joins) {
      expect(
        c.heartbeat({ groupId: 'live', generationId: 1, memberId: j.memberId, groupInstanceId: null }).errorCode,
      ).toBe(0);
      const s = await c.sync({ ...syncReq(j, [], 'live') });
      expect(s.errorCode).toBe(0);
      expect(s.assignment.toString()).toMatch(/^a-\d$/);
    }
    const d = c.describeGroups(['live'])[0];
    expect(d.members.map((m) => m.memberId).sort()).toEqual(joins.map((j) => j.memberId).sort());
    expect(d.protocolData).toBe('range');
  });

  it('offset retention: Empty consumer groups and old simple commits expire, active groups keep theirs', async () => {
    // an injected clock: commit and state timestamps come from it
    let now = 1_000_000;
    const clock = { ...systemClock, now: () => now };
    const log = new FakeLogStore();
    const { c } = await make({ clock, offsetsRetentionMs: 10_000 }, log);
    const { leader } = await stableGroup(c, 1, { groupId: 'active' });
    await c.commitOffsets(commitReq({ groupId: 'active', generationId: 1, memberId: leader.memberId }));
    const { joins } = await stableGroup(c, 1, { groupId: 'left' });
    await c.commitOffsets(commitReq({ groupId: 'left', generationId: 1, memberId: joins[0].memberId }));
    c.leave({ groupId: 'left', members: [{ memberId: joins[0].memberId, groupInstanceId: null }] });
    await c.commitOffsets(commitReq({ groupId: 'simple', generationId: -1, memberId: '', partition: 0 }));
    now += 5_000;
    await c.commitOffsets(commitReq({ groupId: 'simple', generationId: -1, memberId: '', partition: 1 }));
    const cc = c as ClassicGroupCoordinator;
    expect(await cc.expireOffsets()).toBe(0);
    now += 6_000;
    expect(await cc.expireOffsets()).toBe(2); // 'left' (empty for 11 s) and simple/0
    expect(
      c
        .listGroups()
        .map((g) => g.groupId)
        .sort(),
    ).toEqual(['active', 'simple']);
    expect(c.fetchOffsets({ groupId: 'simple', topics: null }).topics[0].partitions.map((p) => p.partition)).toEqual([
      1,
    ]);
    expect(c.fetchOffsets({ groupId: 'active', topics: null }).topics[0].partitions).toHaveLength(1);
    await c.close();
    const again = await make({ clock }, log);
    expect(
      again.c
        .listGroups()
        .map((g) => g.groupId)
        .sort(),
    ).toEqual(['active', 'simple']);
    expect(again.c.fetchOffsets({ groupId: 'left', topics: null }).topics).toEqual([]);
  });

  it('onTopicDeleted drops the topic offsets (also after a restart)', async () => {
    const log = new FakeLogStore();
    const first = await make({}, log);
    await log.createTopic('other', 1);
    await first.c.commitOffsets(commitReq({ groupId: 's', generationId: -1, memberId: '', offset: 5n }));
    await first.c.commitOffsets(
      commitReq({ groupId: 's', generationId: -1, memberId: '', offset: 6n, topic: 'other' }),
    );
    await first.c.commitOffsets(
      commitReq({ groupId: 'only-other', generationId: -1, memberId: '', offset: 6n, topic: 'other' }),
    );
    await log.deleteTopic('other');
    await first.c.onTopicDeleted('other');
    expect(first.c.fetchOffsets({ groupId: 's', topics: null }).topics.map((t) => t.name)).toEqual(['orders']);
    expect(first.c.listGroups().map((g) => g.groupId)).toEqual(['s']);
    await first.c.close();
    const second = await make({}, log);
    expect(second.c.fetchOffsets({ groupId: 's', topics: null }).topics.map((t) => t.name)).toEqual(['orders']);
    expect(second.c.listGroups().map((g) => g.groupId)).toEqual(['s']);
  });
});

describe('admin', () => {
  it('describe, list (with state filter) and delete groups', async () => {
    const { c } = await make();
    const { joins, leader } = await stableGroup(c, 2);
    await c.commitOffsets(commitReq({ generationId: 1, memberId: leader.memberId }));
    await c.commitOffsets(commitReq({ groupId: 'idle', generationId: -1, memberId: '' }));

    const [d, unknown] = c.describeGroups(['g', 'missing']);
    expect(d).toMatchObject({
      errorCode: 0,
      groupId: 'g',
      groupState: 'Stable',
      protocolType: 'consumer',
      protocolData: 'range',
    });
    expect(d.members).toHaveLength(2);
    for (const m of d.members) {
      const i = joins.findIndex((j) => j.memberId === m.memberId);
      expect(m.memberAssignment.toString()).toBe(`a-${i}`);
      expect(m.memberMetadata.toString()).toBe('sub');
      expect(m.clientId).toBe(`client${i}`);
      expect(m.clientHost).toBe('/127.0.0.1');
    }
    expect(unknown).toEqual({
      errorCode: 0,
      groupId: 'missing',
      groupState: 'Dead',
      protocolType: '',
      protocolData: '',
      members: [],
    });

    expect(
      c
        .listGroups()
        .map((g) => g.groupId)
        .sort(),
    ).toEqual(['g', 'idle']);
    expect(c.listGroups(['Stable'])).toEqual([{ groupId: 'g', protocolType: 'consumer', groupState: 'Stable' }]);
    expect(c.listGroups(['empty'])).toEqual([{ groupId: 'idle', protocolType: '', groupState: 'Empty' }]);
    expect(c.listGroups(['PreparingRebalance'])).toEqual([]);

    expect(c.deleteGroups(['g', 'idle', 'missing'])).toEqual([
      { groupId: 'g', errorCode: E.NON_EMPTY_GROUP },
      { groupId: 'idle', errorCode: 0 },
      { groupId: 'missing', errorCode: E.GROUP_ID_NOT_FOUND },
    ]);
    expect(c.fetchOffsets({ groupId: 'idle', topics: null }).topics).toEqual([]);
    c.leave({ groupId: 'g', members: joins.map((j) => ({ memberId: j.memberId, groupInstanceId: null })) });
    expect(c.describeGroups(['g'])[0].groupState).toBe('Empty');
    expect(c.deleteGroups(['g'])).toEqual([{ groupId: 'g', errorCode: 0 }]);
    expect(c.describeGroups(['g'])[0].groupState).toBe('Dead');
    expect(c.listGroups()).toEqual([]);
    expect(
      c.fetchOffsets({ groupId: 'g', topics: [{ name: 'orders', partitions: [0] }] }).topics[0].partitions[0].offset,
    ).toBe(-1n);
  });
});
