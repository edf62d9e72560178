// Classic (pre-KIP-848) consumer-group coordinator for a single broker that coordinates every group.
// Semantics follow Apache Kafka's GroupCoordinator/GroupMetadata: states Empty -> PreparingRebalance ->
// CompletingRebalance -> Stable (and Dead once deleted), delayed joins bounded by the rebalance timeout,
// session timeouts, MEMBER_ID_REQUIRED, static membership and offset commits persisted in
// `__consumer_offsets` (see offsets-log.ts / offsets-codec.ts).

import { randomUUID } from 'node:crypto';
import type { LogStore } from '../storage/api.ts';
import type {
  DescribedGroup,
  GroupCoordinator,
  JoinGroupRequest,
  JoinGroupResponse,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchRequest,
  OffsetFetchResponse,
  SyncGroupRequest,
  SyncGroupResponse,
} from './api.ts';
import {
  type BatchRecord,
  encodeGroupKey,
  encodeGroupValue,
  encodeOffsetKey,
  encodeOffsetValue,
  type GroupValue,
} from './offsets-codec.ts';
import {
  ensureOffsetsTopic,
  type Logger,
  PartitionWriter,
  partitionForGroup,
  type ReplayedGroup,
  replayPartition,
  type WriteOutcome,
} from './offsets-log.ts';

export const ErrorCode = {
  NONE: 0,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  OFFSET_METADATA_TOO_LARGE: 12,
  COORDINATOR_NOT_AVAILABLE: 15,
  ILLEGAL_GENERATION: 22,
  INCONSISTENT_GROUP_PROTOCOL: 23,
  INVALID_GROUP_ID: 24,
  UNKNOWN_MEMBER_ID: 25,
  INVALID_SESSION_TIMEOUT: 26,
  REBALANCE_IN_PROGRESS: 27,
  NON_EMPTY_GROUP: 68,
  GROUP_ID_NOT_FOUND: 69,
  MEMBER_ID_REQUIRED: 79,
  FENCED_INSTANCE_ID: 82,
} as const;

export type GroupState = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable' | 'Dead';

export interface GroupCoordinatorOptions {
  log: LogStore;
  /** wall clock for commit timestamps (default Date.now); timers always use real time */
  now?: () => number;
  logger?: Logger;
  /** group.initial.rebalance.delay.ms: how long the first rebalance of an Empty group waits for more
   *  members (extended by each new member, bounded by the rebalance timeout). Kafka: 3000. Default 200. */
  initialRebalanceDelayMs?: number;
  /** group.min.session.timeout.ms (Kafka 6000). Default 1000. */
  minSessionTimeoutMs?: number;
  /** group.max.session.timeout.ms (Kafka 1800000). Default 1800000. */
  maxSessionTimeoutMs?: number;
  /** a new member waiting in JoinGroup is dropped after this long (Kafka: 5 min). Default 300000. */
  newMemberJoinTimeoutMs?: number;
  /** offset.metadata.max.bytes (Kafka 4096) */
  maxMetadataSize?: number;
  /** name of the internal offsets topic (default __consumer_offsets) */
  offsetsTopic?: string;
  /** partitions used when the offsets topic is created (default 1); an existing topic keeps its count */
  offsetsTopicPartitions?: number;
  /** offsets.retention.minutes as ms (Kafka: 7 days, the default): committed offsets of a group that has
   *  been Empty this long are deleted (for simple-commit groups: offsets older than this). -1 = never. */
  offsetsRetentionMs?: number;
  /** offsets.retention.check.interval.ms (default 10 min) */
  offsetsRetentionCheckIntervalMs?: number;
}

type JoinWaiter = (r: JoinGroupResponse) => void;
type SyncWaiter = (r: SyncGroupResponse) => void;

interface Member {
  memberId: string;
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  rebalanceTimeoutMs: number;
  sessionTimeoutMs: number;
  protocolType: string;
  protocols: { name: string; metadata: Buffer }[];
  assignment: Buffer;
  joinWaiter: JoinWaiter | null;
  syncWaiter: SyncWaiter | null;
  /** joined but not yet part of a completed generation */
  isNew: boolean;
  timer: NodeJS.Timeout | null;
}

interface CommittedOffset {
  offset: bigint;
  leaderEpoch: number;
  metadata: string;
  commitTimestamp: number;
  /** coordinator write sequence (log order) of the record that set it */
  seq: number;
}

class Group {
  readonly groupId: string;
  state: GroupState = 'Empty';
  generationId = 0;
  protocolType: string | null = null;
  protocolName: string | null = null;
  leaderId: string | null = null;
  stateTimestamp = 0;
  /** insertion order = join order (used for leader election) */
  members = new Map<string, Member>();
  /** groupInstanceId -> memberId */
  staticMembers = new Map<string, string>();
  /** member ids handed out with MEMBER_ID_REQUIRED, waiting for the member's second JoinGroup */
  pendingMembers = new Map<string, NodeJS.Timeout>();
  /** members of the current generation that have not sent SyncGroup yet */
  pendingSync = new Set<string>();
  pendingSyncTimer: NodeJS.Timeout | null = null;
  joinTimer: NodeJS.Timeout | null = null;
  /** set while the initial (Empty -> first generation) join delay is running */
  initialDelay: { remainingMs: number; newMemberAdded: boolean } | null = null;
  offsets = new Map<string, Map<number, CommittedOffset>>();

  constructor(groupId: string) {
    this.groupId = groupId;
  }

  get rebalanceTimeoutMs(): number {
    let max = 0;
    for (const m of this.members.values()) max = Math.max(max, m.rebalanceTimeoutMs);
    return max;
  }

  isStaticMemberFenced(memberId: string, groupInstanceId: string | null): boolean {
    if (groupInstanceId === null) return false;
    const current = this.staticMembers.get(groupInstanceId);
    return current !== undefined && current !== memberId;
  }

  /** every member has a JoinGroup outstanding and no MEMBER_ID_REQUIRED member is still expected */
  allMembersJoined(): boolean {
    if (this.pendingMembers.size > 0) return false;
    for (const m of this.members.values()) if (m.joinWaiter === null) return false;
    return true;
  }

  hasOffsets(): boolean {
    return this.offsets.size > 0;
  }
}

const EMPTY = Buffer.alloc(0);
const noopLogger: Logger = { info() {}, warn() {} };

function joinError(memberId: string, errorCode: number): JoinGroupResponse {
  return { errorCode, generationId: -1, protocolType: null, protocolName: null, leader: '', memberId, members: [] };
}

function syncError(errorCode: number): SyncGroupResponse {
  return { errorCode, protocolType: null, protocolName: null, assignment: EMPTY };
}

function protocolsMatch(a: { name: string; metadata: Buffer }[], b: { name: string; metadata: Buffer }[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i].name !== b[i].name || !a[i].metadata.equals(b[i].metadata)) return false;
  }
  return true;
}

function timer(ms: number, fn: () => void): NodeJS.Timeout {
  const t = setTimeout(fn, Math.max(0, ms));
  t.unref();
  return t;
}

export class ClassicGroupCoordinator implements GroupCoordinator {
  private readonly log: LogStore;
  private readonly now: () => number;
  private readonly logger: Logger;
  private readonly initialRebalanceDelayMs: number;
  private readonly minSessionTimeoutMs: number;
  private readonly maxSessionTimeoutMs: number;
  private readonly newMemberJoinTimeoutMs: number;
  private readonly maxMetadataSize: number;
  private readonly offsetsTopic: string;
  private offsetsPartitions = 1;
  private readonly writers = new Map<number, PartitionWriter>();
  private readonly groups = new Map<string, Group>();
  private readonly offsetsRetentionMs: number;
  private readonly offsetsRetentionCheckIntervalMs: number;
  private retentionTimer: NodeJS.Timeout | null = null;
  private seq = 0;
  private closed = false;
  private closing: Promise<void> | null = null;

  constructor(opts: GroupCoordinatorOptions) {
    this.log = opts.log;
    this.now = opts.now ?? Date.now;
    this.logger = opts.logger ?? noopLogger;
    this.initialRebalanceDelayMs = opts.initialRebalanceDelayMs ?? 200;
    this.minSessionTimeoutMs = opts.minSessionTimeoutMs ?? 1000;
    this.maxSessionTimeoutMs = opts.maxSessionTimeoutMs ?? 1_800_000;
    this.newMemberJoinTimeoutMs = opts.newMemberJoinTimeoutMs ?? 300_000;
    this.maxMetadataSize = opts.maxMetadataSize ?? 4096;
    this.offsetsTopic = opts.offsetsTopic ?? '__consumer_offsets';
    this.offsetsPartitions = opts.offsetsTopicPartitions ?? 1;
    this.offsetsRetentionMs = opts.offsetsRetentionMs ?? 7 * 24 * 3600 * 1000;
    this.offsetsRetentionCheckIntervalMs = opts.offsetsRetentionCheckIntervalMs ?? 600_000;
  }

  /** creates the offsets topic if needed and rebuilds groups and committed offsets from it */
  async start(): Promise<void> {
    const info = await ensureOffsetsTopic(this.log, this.offsetsTopic, this.offsetsPartitions, this.logger);
    this.offsetsPartitions = info.partitions;
    const replayed = new Map<string, ReplayedGroup>();
    let records = 0;
    for (let p = 0; p < info.partitions; p++) {
      const store = this.log.partition(this.offsetsTopic, p);
      if (!store) throw new Error(`offsets topic ${this.offsetsTopic} has no partition ${p}`);
      this.writers.set(p, new PartitionWriter(store, this.now, this.logger));
      records += await replayPartition(store, replayed, this.logger);
    }
    let offsets = 0;
    for (const [groupId, r] of replayed) {
      const group = new Group(groupId);
      for (const [topic, parts] of r.offsets) {
        const t = new Map<number, CommittedOffset>();
        for (const [partition, v] of parts) t.set(partition, { ...v, seq: 0 });
        if (t.size > 0) group.offsets.set(topic, t);
        offsets += t.size;
      }
      if (r.meta) this.restoreGroup(group, r.meta);
      if (!r.meta && group.offsets.size === 0) continue;
      this.groups.set(groupId, group);
    }
    this.logger.info({ groups: this.groups.size, offsets, records }, 'group coordinator: loaded offsets topic');
    if (this.offsetsRetentionMs >= 0) {
      this.retentionTimer = setInterval(() => {
        this.expireOffsets().catch((err) => this.logger.warn({ err }, 'group coordinator: offset expiration failed'));
      }, this.offsetsRetentionCheckIntervalMs);
      this.retentionTimer.unref();
    }
  }

  /**
   * Offset retention (KIP-211): offsets of a consumer group expire once the group has been Empty for
   * offsetsRetentionMs; offsets of a simple-commit group (no protocol type) expire individually
   * offsetsRetentionMs after their commit. An Empty group left without offsets is removed.
   * Runs on a timer; callable directly (tests). Returns the number of expired offsets.
   */
  async expireOffsets(nowMs = this.now()): Promise<number> {
    if (this.closed || this.offsetsRetentionMs < 0) return 0;
    const writes: Promise<WriteOutcome>[] = [];
    let expired = 0;
    for (const group of [...this.groups.values()]) {
      if (group.state !== 'Empty' || group.pendingMembers.size > 0) continue;
      const wholeGroup = group.protocolType !== null && nowMs - group.stateTimestamp >= this.offsetsRetentionMs;
      const records: BatchRecord[] = [];
      for (const [topic, parts] of group.offsets) {
        for (const [partition, o] of parts) {
          if (wholeGroup || (group.protocolType === null && nowMs - o.commitTimestamp >= this.offsetsRetentionMs)) {
            records.push({ key: encodeOffsetKey(group.groupId, topic, partition), value: null });
            parts.delete(partition);
          }
        }
        if (parts.size === 0) group.offsets.delete(topic);
      }
      const drop = group.offsets.size === 0 && (records.length > 0 || wholeGroup);
      if (records.length === 0 && !drop) continue;
      expired += records.length;
      if (drop) {
        records.push({ key: encodeGroupKey(group.groupId), value: null });
        this.transition(group, 'Dead');
        this.groups.delete(group.groupId);
      }
      this.seq++;
      writes.push(this.writeRecords(group.groupId, records));
    }
    const outcomes = await Promise.all(writes);
    if (outcomes.some((o) => o.errorCode !== 0))
      this.logger.warn({}, 'group coordinator: failed to persist some expired offsets');
    if (expired > 0) this.logger.info({ expired }, 'group coordinator: expired committed offsets');
    return expired;
  }

  private restoreGroup(group: Group, meta: GroupValue): void {
    group.generationId = meta.generationId;
    group.protocolType = meta.protocolType === '' ? null : meta.protocolType;
    group.stateTimestamp = meta.currentStateTimestamp;
    if (meta.members.length === 0) {
      group.state = 'Empty';
      return;
    }
    group.state = 'Stable';
    group.protocolName = meta.protocolName;
    group.leaderId = meta.leaderId;
    for (const mv of meta.members) {
      const member: Member = {
        memberId: mv.memberId,
        groupInstanceId: mv.groupInstanceId,
        clientId: mv.clientId,
        clientHost: mv.clientHost,
        rebalanceTimeoutMs: mv.rebalanceTimeoutMs,
        sessionTimeoutMs: mv.sessionTimeoutMs,
        protocolType: meta.protocolType,
        protocols: [{ name: meta.protocolName ?? '', metadata: mv.subscription }],
        assignment: mv.assignment,
        joinWaiter: null,
        syncWaiter: null,
        isNew: false,
        timer: null,
      };
      group.members.set(member.memberId, member);
      if (member.groupInstanceId !== null) group.staticMembers.set(member.groupInstanceId, member.memberId);
      this.scheduleSession(group, member);
    }
    if (group.leaderId === null || !group.members.has(group.leaderId))
      group.leaderId = group.members.keys().next().value ?? null;
  }

  // -------------------------------------------------------------------------------------------
  // JoinGroup

  async join(req: JoinGroupRequest): Promise<JoinGroupResponse> {
    if (this.closed) return joinError(req.memberId, ErrorCode.COORDINATOR_NOT_AVAILABLE);
    if (!req.groupId) return joinError(req.memberId, ErrorCode.INVALID_GROUP_ID);
    if (req.sessionTimeoutMs < this.minSessionTimeoutMs || req.sessionTimeoutMs > this.maxSessionTimeoutMs) {
      return joinError(req.memberId, ErrorCode.INVALID_SESSION_TIMEOUT);
    }
    const isUnknownMember = req.memberId === '';
    let group = this.groups.get(req.groupId);
    if (!group) {
      // only a member without id may create the group
      if (!isUnknownMember) return joinError(req.memberId, ErrorCode.UNKNOWN_MEMBER_ID);
      group = new Group(req.groupId);
      group.stateTimestamp = this.now();
      this.groups.set(req.groupId, group);
    }
    if (group.state === 'Dead') return joinError(req.memberId, ErrorCode.COORDINATOR_NOT_AVAILABLE);
    return isUnknownMember ? this.joinUnknownMember(group, req) : this.joinKnownMember(group, req);
  }

  private supportsProtocols(group: Group, req: JoinGroupRequest, self: string | null): boolean {
    let others = 0;
    for (const id of group.members.keys()) if (id !== self) others++;
    if (others === 0) return req.protocolType !== '' && req.protocols.length > 0;
    if (group.protocolType !== req.protocolType) return false;
    return req.protocols.some((p) => {
      for (const m of group.members.values()) {
        if (m.memberId !== self && !m.protocols.some((mp) => mp.name === p.name)) return false;
      }
      return true;
    });
  }

  private joinUnknownMember(group: Group, req: JoinGroupRequest): Promise<JoinGroupResponse> | JoinGroupResponse {
    if (!this.supportsProtocols(group, req, null)) return joinError('', ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    const newMemberId = `${req.groupInstanceId ?? req.clientId}-${randomUUID()}`;

    if (req.groupInstanceId !== null && group.staticMembers.has(req.groupInstanceId)) {
      // a known static member restarted: it takes over the old member's place without a rebalance
      // when nothing changed; the old member id is fenced
      const oldMemberId = group.staticMembers.get(req.groupInstanceId)!;
      const currentLeader = group.leaderId;
      const old = group.members.get(oldMemberId)!;
      const unchanged = protocolsMatch(old.protocols, req.protocols);
      const member = this.replaceStaticMember(group, old, newMemberId);
      this.logger.info(
        { groupId: group.groupId, groupInstanceId: req.groupInstanceId, oldMemberId, newMemberId },
        'static member rejoined',
      );
      member.clientId = req.clientId;
      member.clientHost = req.clientHost;
      member.sessionTimeoutMs = req.sessionTimeoutMs;
      member.rebalanceTimeoutMs = req.rebalanceTimeoutMs;
      this.scheduleSession(group, member);
      if ((group.state === 'Stable' || group.state === 'CompletingRebalance') && unchanged) {
        return {
          errorCode: ErrorCode.NONE,
          generationId: group.generationId,
          protocolType: group.protocolType,
          protocolName: group.protocolName,
          // the old leader id, so that a restarted leader does not compute an assignment that a
          // Stable group would not distribute
          leader: currentLeader ?? '',
          memberId: newMemberId,
          members: [],
        };
      }
      return this.updateMemberAndRebalance(group, member, req);
    }

    if (req.requireKnownMemberId && req.groupInstanceId === null) {
      const t = timer(req.sessionTimeoutMs, () => this.onPendingMemberExpired(group, newMemberId));
      group.pendingMembers.set(newMemberId, t);
      return joinError(newMemberId, ErrorCode.MEMBER_ID_REQUIRED);
    }
    return this.addMemberAndRebalance(group, req, newMemberId);
  }

  private joinKnownMember(group: Group, req: JoinGroupRequest): Promise<JoinGroupResponse> | JoinGroupResponse {
    const memberId = req.memberId;
    if (!this.supportsProtocols(group, req, memberId))
      return joinError(memberId, ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    if (group.pendingMembers.has(memberId)) {
      clearTimeout(group.pendingMembers.get(memberId));
      group.pendingMembers.delete(memberId);
      return this.addMemberAndRebalance(group, req, memberId);
    }
    if (group.isStaticMemberFenced(memberId, req.groupInstanceId))
      return joinError(memberId, ErrorCode.FENCED_INSTANCE_ID);
    const member = group.members.get(memberId);
    if (!member || (req.groupInstanceId !== null && !group.staticMembers.has(req.groupInstanceId))) {
      return joinError(memberId, ErrorCode.UNKNOWN_MEMBER_ID);
    }
    switch (group.state) {
      case 'PreparingRebalance':
        return this.updateMemberAndRebalance(group, member, req);
      case 'CompletingRebalance':
        if (protocolsMatch(member.protocols, req.protocols)) {
          // the member lost its JoinGroup response: send the current generation again
          return this.joinResponseFor(group, member);
        }
        return this.updateMemberAndRebalance(group, member, req);
      case 'Stable':
        if (group.leaderId === memberId || !protocolsMatch(member.protocols, req.protocols)) {
          // a rejoining leader forces a rebalance (e.g. topic metadata changed)
          return this.updateMemberAndRebalance(group, member, req);
        }
        return { ...this.joinResponseFor(group, member), members: [] };
      default:
        return joinError(memberId, ErrorCode.UNKNOWN_MEMBER_ID);
    }
  }

  private newMember(req: JoinGroupRequest, memberId: string): Member {
    return {
      memberId,
      groupInstanceId: req.groupInstanceId,
      clientId: req.clientId,
      clientHost: req.clientHost,
      rebalanceTimeoutMs: req.rebalanceTimeoutMs,
      sessionTimeoutMs: req.sessionTimeoutMs,
      protocolType: req.protocolType,
      protocols: req.protocols,
      assignment: EMPTY,
      joinWaiter: null,
      syncWaiter: null,
      isNew: true,
      timer: null,
    };
  }

  private setJoinWaiter(member: Member, waiter: JoinWaiter): void {
    // a member never has two JoinGroups outstanding; if it does, the older one is answered
    const previous = member.joinWaiter;
    member.joinWaiter = waiter;
    previous?.(joinError(member.memberId, ErrorCode.REBALANCE_IN_PROGRESS));
  }

  private addMemberAndRebalance(group: Group, req: JoinGroupRequest, memberId: string): Promise<JoinGroupResponse> {
    return new Promise((resolve) => {
      const member = this.newMember(req, memberId);
      if (group.members.size === 0) group.protocolType = req.protocolType;
      member.joinWaiter = resolve;
      group.members.set(memberId, member);
      if (group.leaderId === null) group.leaderId = memberId;
      if (member.groupInstanceId !== null) group.staticMembers.set(member.groupInstanceId, memberId);
      if (group.initialDelay) group.initialDelay.newMemberAdded = true;
      // a new member cannot heartbeat before its first generation: bound its wait instead
      this.scheduleSession(group, member, this.newMemberJoinTimeoutMs);
      this.maybePrepareRebalance(group, `adding member ${memberId}`);
      this.tryCompleteJoin(group);
    });
  }

  private updateMemberAndRebalance(group: Group, member: Member, req: JoinGroupRequest): Promise<JoinGroupResponse> {
    return new Promise((resolve) => {
      member.protocols = req.protocols;
      member.protocolType = req.protocolType;
      member.rebalanceTimeoutMs = req.rebalanceTimeoutMs;
      member.sessionTimeoutMs = req.sessionTimeoutMs;
      member.clientId = req.clientId;
      member.clientHost = req.clientHost;
      this.setJoinWaiter(member, resolve);
      this.maybePrepareRebalance(group, `member ${member.memberId} rejoined`);
      this.tryCompleteJoin(group);
    });
  }

  private replaceStaticMember(group: Group, old: Member, newMemberId: string): Member {
    if (old.timer) clearTimeout(old.timer);
    old.timer = null;
    const oldJoin = old.joinWaiter;
    const oldSync = old.syncWaiter;
    const member: Member = { ...old, memberId: newMemberId, joinWaiter: null, syncWaiter: null, timer: null };
    const rebuilt = new Map<string, Member>();
    for (const [id, m] of group.members)
      rebuilt.set(id === old.memberId ? newMemberId : id, id === old.memberId ? member : m);
    group.members = rebuilt;
    if (old.groupInstanceId !== null) group.staticMembers.set(old.groupInstanceId, newMemberId);
    if (group.leaderId === old.memberId) group.leaderId = newMemberId;
    if (group.pendingSync.delete(old.memberId)) group.pendingSync.add(newMemberId);
    oldJoin?.(joinError(old.memberId, ErrorCode.FENCED_INSTANCE_ID));
    oldSync?.(syncError(ErrorCode.FENCED_INSTANCE_ID));
    return member;
  }

  private joinResponseFor(group: Group, member: Member): JoinGroupResponse {
    const isLeader = group.leaderId === member.memberId;
    return {
      errorCode: ErrorCode.NONE,
      generationId: group.generationId,
      protocolType: group.protocolType,
      protocolName: group.protocolName,
      leader: group.leaderId ?? '',
      memberId: member.memberId,
      members: isLeader
        ? [...group.members.values()].map((m) => ({
            memberId: m.memberId,
            groupInstanceId: m.groupInstanceId,
            metadata: m.protocols.find((p) => p.name === group.protocolName)?.metadata ?? EMPTY,
          }))
        : [],
    };
  }

  // -------------------------------------------------------------------------------------------
  // rebalance state machine

  private maybePrepareRebalance(group: Group, reason: string): void {
    if (group.state === 'Stable' || group.state === 'CompletingRebalance' || group.state === 'Empty') {
      this.prepareRebalance(group, reason);
    }
  }

  private prepareRebalance(group: Group, reason: string): void {
    if (group.state === 'CompletingRebalance') {
      // members waiting for the assignment must rejoin
      for (const m of group.members.values()) {
        m.assignment = EMPTY;
        const w = m.syncWaiter;
        m.syncWaiter = null;
        w?.(syncError(ErrorCode.REBALANCE_IN_PROGRESS));
      }
    }
    this.clearPendingSync(group);
    this.clearJoinTimer(group);
    const rebalanceTimeout = group.rebalanceTimeoutMs;
    if (group.state === 'Empty') {
      const delay = this.initialRebalanceDelayMs;
      group.initialDelay = { remainingMs: Math.max(rebalanceTimeout - delay, 0), newMemberAdded: false };
      group.joinTimer = timer(delay, () => this.onInitialDelayExpired(group, delay));
    } else {
      group.initialDelay = null;
      group.joinTimer = timer(rebalanceTimeout, () => this.completeJoin(group));
    }
    this.logger.info(
      { groupId: group.groupId, from: group.state, generationId: group.generationId, reason },
      'group coordinator: preparing to rebalance',
    );
    this.transition(group, 'PreparingRebalance');
    // e.g. the last member left, or every member is already waiting in JoinGroup
    this.tryCompleteJoin(group);
  }

  private onInitialDelayExpired(group: Group, lastDelay: number): void {
    group.joinTimer = null;
    const d = group.initialDelay;
    if (this.closed || group.state !== 'PreparingRebalance' || d === null) return;
    if (d.newMemberAdded && d.remainingMs > 0) {
      // more members are arriving: wait another delay (bounded by the rebalance timeout)
      const next = Math.min(lastDelay, d.remainingMs);
      d.remainingMs = Math.max(d.remainingMs - next, 0);
      d.newMemberAdded = false;
      group.joinTimer = timer(next, () => this.onInitialDelayExpired(group, next));
      return;
    }
    group.initialDelay = null;
    this.completeJoin(group);
  }

  private tryCompleteJoin(group: Group): void {
    if (group.state === 'PreparingRebalance' && group.initialDelay === null && group.allMembersJoined())
      this.completeJoin(group);
  }

  private completeJoin(group: Group): void {
    this.clearJoinTimer(group);
    group.initialDelay = null;
    if (this.closed || group.state !== 'PreparingRebalance') return;
    // dynamic members that did not rejoin in time are dropped; static members are kept
    for (const m of [...group.members.values()]) {
      if (m.joinWaiter === null && m.groupInstanceId === null) {
        this.logger.info(
          { groupId: group.groupId, memberId: m.memberId },
          'group coordinator: member did not rejoin, removing it',
        );
        this.removeMember(group, m);
      }
    }
    if (group.members.size > 0) {
      const joined = [...group.members.values()].filter((m) => m.joinWaiter !== null);
      if (joined.length === 0) {
        // only static members that have not rejoined yet: wait for them (or their session timeout)
        group.joinTimer = timer(group.rebalanceTimeoutMs, () => this.completeJoin(group));
        return;
      }
      const leader = group.leaderId === null ? undefined : group.members.get(group.leaderId);
      if (!leader || leader.joinWaiter === null) group.leaderId = joined[0].memberId;
    }
    group.generationId++;
    if (group.members.size === 0) {
      group.protocolName = null;
      group.leaderId = null;
      this.transition(group, 'Empty');
      this.logger.info(
        { groupId: group.groupId, generationId: group.generationId },
        'group coordinator: group is now empty',
      );
      this.persistGroup(group);
      return;
    }
    group.protocolName = this.selectProtocol(group);
    this.transition(group, 'CompletingRebalance');
    this.logger.info(
      {
        groupId: group.groupId,
        generationId: group.generationId,
        protocol: group.protocolName,
        members: group.members.size,
        leader: group.leaderId,
      },
      'group coordinator: join phase complete',
    );
    group.pendingSync = new Set(group.members.keys());
    for (const m of group.members.values()) {
      m.isNew = false;
      const w = m.joinWaiter;
      m.joinWaiter = null;
      w?.(this.joinResponseFor(group, m));
      this.scheduleSession(group, m);
    }
    const generation = group.generationId;
    group.pendingSyncTimer = timer(group.rebalanceTimeoutMs, () => this.onPendingSyncExpired(group, generation));
  }

  /** protocols every member supports; each member votes for its most preferred one of those */
  private selectProtocol(group: Group): string {
    const members = [...group.members.values()];
    const candidates = members[0].protocols
      .map((p) => p.name)
      .filter((name) => members.every((m) => m.protocols.some((p) => p.name === name)));
    if (candidates.length === 0) return members[0].protocols[0]?.name ?? '';
    const votes = new Map<string, number>();
    for (const m of members) {
      const choice = m.protocols.find((p) => candidates.includes(p.name))!.name;
      votes.set(choice, (votes.get(choice) ?? 0) + 1);
    }
    let best = candidates[0];
    for (const c of candidates) if ((votes.get(c) ?? 0) > (votes.get(best) ?? 0)) best = c;
    return best;
  }

  private onPendingSyncExpired(group: Group, generation: number): void {
    group.pendingSyncTimer = null;
    if (this.closed || group.generationId !== generation) return;
    if (group.state !== 'CompletingRebalance' && group.state !== 'Stable') return;
    const missing = [...group.pendingSync];
    group.pendingSync.clear();
    if (missing.length === 0) return;
    this.logger.info(
      { groupId: group.groupId, members: missing },
      'group coordinator: members did not sync in time, removing them',
    );
    for (const id of missing) {
      const m = group.members.get(id);
      if (m) this.removeMember(group, m);
    }
    this.afterMemberRemoved(group, 'members failed to sync');
  }

  private transition(group: Group, state: GroupState): void {
    group.state = state;
    group.stateTimestamp = this.now();
  }

  private clearJoinTimer(group: Group): void {
    if (group.joinTimer) clearTimeout(group.joinTimer);
    group.joinTimer = null;
  }

  private clearPendingSync(group: Group): void {
    if (group.pendingSyncTimer) clearTimeout(group.pendingSyncTimer);
    group.pendingSyncTimer = null;
    group.pendingSync.clear();
  }

  private markSynced(group: Group, memberId: string): void {
    group.pendingSync.delete(memberId);
    if (group.pendingSync.size === 0 && group.pendingSyncTimer) {
      clearTimeout(group.pendingSyncTimer);
      group.pendingSyncTimer = null;
    }
  }

  // -------------------------------------------------------------------------------------------
  // members: sessions and removal

  private scheduleSession(group: Group, member: Member, timeoutMs = member.sessionTimeoutMs): void {
    if (member.timer) clearTimeout(member.timer);
    member.timer = timer(timeoutMs, () => this.onSessionExpired(group, member));
  }

  private onSessionExpired(group: Group, member: Member): void {
    member.timer = null;
    if (this.closed || group.members.get(member.memberId) !== member) return;
    if (member.isNew && member.joinWaiter !== null) {
      this.logger.info(
        { groupId: group.groupId, memberId: member.memberId },
        'group coordinator: new member join timed out',
      );
    } else if (member.joinWaiter !== null || member.syncWaiter !== null) {
      // a member blocked in JoinGroup/SyncGroup cannot heartbeat: keep it alive
      this.scheduleSession(group, member);
      return;
    } else {
      this.logger.info(
        { groupId: group.groupId, memberId: member.memberId },
        'group coordinator: member session expired',
      );
    }
    this.removeMember(group, member);
    this.afterMemberRemoved(group, `member ${member.memberId} expired`);
  }

  private onPendingMemberExpired(group: Group, memberId: string): void {
    if (!group.pendingMembers.delete(memberId) || this.closed) return;
    this.tryCompleteJoin(group);
    this.maybeForgetGroup(group);
  }

  /** removes the member without touching the group state */
  private removeMember(group: Group, member: Member): void {
    if (member.timer) clearTimeout(member.timer);
    member.timer = null;
    group.members.delete(member.memberId);
    if (member.groupInstanceId !== null && group.staticMembers.get(member.groupInstanceId) === member.memberId) {
      group.staticMembers.delete(member.groupInstanceId);
    }
    group.pendingSync.delete(member.memberId);
    if (group.leaderId === member.memberId) group.leaderId = group.members.keys().next().value ?? null;
    const jw = member.joinWaiter;
    const sw = member.syncWaiter;
    member.joinWaiter = null;
    member.syncWaiter = null;
    jw?.(joinError('', ErrorCode.UNKNOWN_MEMBER_ID));
    sw?.(syncError(ErrorCode.UNKNOWN_MEMBER_ID));
  }

  private afterMemberRemoved(group: Group, reason: string): void {
    if (group.state === 'Stable' || group.state === 'CompletingRebalance') this.prepareRebalance(group, reason);
    else if (group.state === 'PreparingRebalance') this.tryCompleteJoin(group);
  }

  /** drops a group that holds nothing at all (e.g. created by a JoinGroup that never came back) */
  private maybeForgetGroup(group: Group): void {
    if (
      group.state === 'Empty' &&
      group.generationId === 0 &&
      group.members.size === 0 &&
      group.pendingMembers.size === 0 &&
      !group.hasOffsets() &&
      this.groups.get(group.groupId) === group
    ) {
      this.groups.delete(group.groupId);
    }
  }

  // -------------------------------------------------------------------------------------------
  // SyncGroup / Heartbeat / LeaveGroup

  async sync(req: SyncGroupRequest): Promise<SyncGroupResponse> {
    if (this.closed) return syncError(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    if (!req.groupId) return syncError(ErrorCode.INVALID_GROUP_ID);
    const group = this.groups.get(req.groupId);
    if (!group) return syncError(ErrorCode.UNKNOWN_MEMBER_ID);
    if (group.state === 'Dead') return syncError(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    if (group.isStaticMemberFenced(req.memberId, req.groupInstanceId)) return syncError(ErrorCode.FENCED_INSTANCE_ID);
    const member = group.members.get(req.memberId);
    if (!member) return syncError(ErrorCode.UNKNOWN_MEMBER_ID);
    if (req.generationId !== group.generationId) return syncError(ErrorCode.ILLEGAL_GENERATION);
    if (
      (req.protocolType !== null && req.protocolType !== group.protocolType) ||
      (req.protocolName !== null && req.protocolName !== group.protocolName)
    ) {
      return syncError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    }
    switch (group.state) {
      case 'PreparingRebalance':
        return syncError(ErrorCode.REBALANCE_IN_PROGRESS);
      case 'Stable':
        this.markSynced(group, member.memberId);
        this.scheduleSession(group, member);
        return {
          errorCode: ErrorCode.NONE,
          protocolType: group.protocolType,
          protocolName: group.protocolName,
          assignment: member.assignment,
        };
      case 'CompletingRebalance':
        return new Promise((resolve) => {
          const previous = member.syncWaiter;
          member.syncWaiter = resolve;
          previous?.(syncError(ErrorCode.REBALANCE_IN_PROGRESS));
          this.markSynced(group, member.memberId);
          if (group.leaderId === member.memberId) this.completeSync(group, req.assignments);
        });
      default:
        return syncError(ErrorCode.UNKNOWN_MEMBER_ID);
    }
  }

  private completeSync(group: Group, assignments: { memberId: string; assignment: Buffer }[]): void {
    const byMember = new Map<string, Buffer>();
    for (const a of assignments) byMember.set(a.memberId, a.assignment);
    for (const m of group.members.values()) m.assignment = byMember.get(m.memberId) ?? EMPTY;
    this.transition(group, 'Stable');
    this.logger.info(
      { groupId: group.groupId, generationId: group.generationId },
      'group coordinator: group is stable',
    );
    for (const m of group.members.values()) {
      const w = m.syncWaiter;
      if (!w) continue;
      m.syncWaiter = null;
      w({
        errorCode: ErrorCode.NONE,
        protocolType: group.protocolType,
        protocolName: group.protocolName,
        assignment: m.assignment,
      });
      this.scheduleSession(group, m);
    }
    this.persistGroup(group);
  }

  heartbeat(req: { groupId: string; generationId: number; memberId: string; groupInstanceId: string | null }): {
    errorCode: number;
  } {
    if (this.closed) return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE };
    if (!req.groupId) return { errorCode: ErrorCode.INVALID_GROUP_ID };
    const group = this.groups.get(req.groupId);
    if (!group) return { errorCode: ErrorCode.UNKNOWN_MEMBER_ID };
    if (group.state === 'Dead') return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE };
    if (group.isStaticMemberFenced(req.memberId, req.groupInstanceId))
      return { errorCode: ErrorCode.FENCED_INSTANCE_ID };
    const member = group.members.get(req.memberId);
    if (!member) return { errorCode: ErrorCode.UNKNOWN_MEMBER_ID };
    if (req.generationId !== group.generationId) return { errorCode: ErrorCode.ILLEGAL_GENERATION };
    switch (group.state) {
      case 'PreparingRebalance':
        this.scheduleSession(group, member);
        return { errorCode: ErrorCode.REBALANCE_IN_PROGRESS };
      case 'CompletingRebalance':
      case 'Stable':
        // a member may heartbeat between its JoinGroup and SyncGroup responses
        this.scheduleSession(group, member);
        return { errorCode: ErrorCode.NONE };
      default:
        return { errorCode: ErrorCode.UNKNOWN_MEMBER_ID };
    }
  }

  leave(req: { groupId: string; members: { memberId: string; groupInstanceId: string | null }[] }): {
    errorCode: number;
    members: { memberId: string; groupInstanceId: string | null; errorCode: number }[];
  } {
    if (this.closed) return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, members: [] };
    if (!req.groupId) return { errorCode: ErrorCode.INVALID_GROUP_ID, members: [] };
    const group = this.groups.get(req.groupId);
    const result = (m: { memberId: string; groupInstanceId: string | null }, errorCode: number) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      errorCode,
    });
    if (!group)
      return { errorCode: ErrorCode.NONE, members: req.members.map((m) => result(m, ErrorCode.UNKNOWN_MEMBER_ID)) };
    if (group.state === 'Dead') return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, members: [] };
    let removed = 0;
    const members = req.members.map((lm) => {
      if (lm.memberId !== '' && group.isStaticMemberFenced(lm.memberId, lm.groupInstanceId))
        return result(lm, ErrorCode.FENCED_INSTANCE_ID);
      if (group.pendingMembers.has(lm.memberId)) {
        clearTimeout(group.pendingMembers.get(lm.memberId));
        group.pendingMembers.delete(lm.memberId);
        removed++;
        return result(lm, ErrorCode.NONE);
      }
      const staticId = lm.groupInstanceId === null ? undefined : group.staticMembers.get(lm.groupInstanceId);
      const member = group.members.get(staticId ?? lm.memberId);
      if (!member) return result(lm, ErrorCode.UNKNOWN_MEMBER_ID);
      this.logger.info({ groupId: group.groupId, memberId: member.memberId }, 'group coordinator: member left');
      this.removeMember(group, member);
      removed++;
      return result(lm, ErrorCode.NONE);
    });
    if (removed > 0) {
      this.afterMemberRemoved(group, 'members left the group');
      this.maybeForgetGroup(group);
    }
    return { errorCode: ErrorCode.NONE, members };
  }

  // -------------------------------------------------------------------------------------------
  // offsets

  private writer(groupId: string): PartitionWriter {
    return this.writers.get(partitionForGroup(groupId, this.offsetsPartitions))!;
  }

  private writeRecords(groupId: string, records: BatchRecord[]): Promise<WriteOutcome> {
    return this.writer(groupId).write(records);
  }

  private persistGroup(group: Group): void {
    const value: GroupValue = {
      protocolType: group.protocolType ?? '',
      generationId: group.generationId,
      protocolName: group.protocolName,
      leaderId: group.leaderId,
      currentStateTimestamp: group.stateTimestamp,
      members:
        group.state === 'Stable'
          ? [...group.members.values()].map((m) => ({
              memberId: m.memberId,
              groupInstanceId: m.groupInstanceId,
              clientId: m.clientId,
              clientHost: m.clientHost,
              rebalanceTimeoutMs: m.rebalanceTimeoutMs,
              sessionTimeoutMs: m.sessionTimeoutMs,
              subscription: m.protocols.find((p) => p.name === group.protocolName)?.metadata ?? EMPTY,
              assignment: m.assignment,
            }))
          : [],
    };
    this.seq++;
    void this.writeRecords(group.groupId, [
      { key: encodeGroupKey(group.groupId), value: encodeGroupValue(value) },
    ]).then((o) => {
      if (o.errorCode !== 0)
        this.logger.warn(
          { groupId: group.groupId, errorCode: o.errorCode },
          'group coordinator: failed to persist group metadata',
        );
    });
  }

  async commitOffsets(req: OffsetCommitRequest): Promise<OffsetCommitResponse> {
    const all = (errorCode: number): OffsetCommitResponse => ({
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partition: p.partition, errorCode })),
      })),
    });
    if (this.closed) return all(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    let group = this.groups.get(req.groupId);
    if (!group) {
      // the group does not use the coordinator for membership: a simple commit creates it
      if (req.generationId >= 0) return all(ErrorCode.ILLEGAL_GENERATION);
      group = new Group(req.groupId);
      group.stateTimestamp = this.now();
      this.groups.set(req.groupId, group);
    } else if (group.state === 'Dead') {
      return all(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    } else if (req.generationId < 0 && group.state === 'Empty') {
      // simple commit
    } else {
      if (group.isStaticMemberFenced(req.memberId, req.groupInstanceId)) return all(ErrorCode.FENCED_INSTANCE_ID);
      const member = group.members.get(req.memberId);
      if (!member) return all(ErrorCode.UNKNOWN_MEMBER_ID);
      if (req.generationId !== group.generationId) return all(ErrorCode.ILLEGAL_GENERATION);
      if (group.state === 'CompletingRebalance') return all(ErrorCode.REBALANCE_IN_PROGRESS);
      // Stable or PreparingRebalance: the previous generation may still commit; counts as a heartbeat
      this.scheduleSession(group, member);
    }

    const timestamp = this.now();
    const records: BatchRecord[] = [];
    const pending: {
      topic: string;
      partition: number;
      value: Omit<CommittedOffset, 'seq'>;
      out: { errorCode: number };
    }[] = [];
    const response: OffsetCommitResponse = { topics: [] };
    for (const t of req.topics) {
      const info = this.log.getTopic(t.name);
      const partitions: { partition: number; errorCode: number }[] = [];
      response.topics.push({ name: t.name, partitions });
      for (const p of t.partitions) {
        const out: { partition: number; errorCode: number } = { partition: p.partition, errorCode: ErrorCode.NONE };
        partitions.push(out);
        if (!info || p.partition < 0 || p.partition >= info.partitions) {
          out.errorCode = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
          continue;
        }
        const metadata = p.metadata ?? '';
        if (Buffer.byteLength(metadata, 'utf8') > this.maxMetadataSize) {
          out.errorCode = ErrorCode.OFFSET_METADATA_TOO_LARGE;
          continue;
        }
        const value = { offset: p.offset, leaderEpoch: p.leaderEpoch, metadata, commitTimestamp: timestamp };
        records.push({ key: encodeOffsetKey(req.groupId, t.name, p.partition), value: encodeOffsetValue(value) });
        pending.push({ topic: t.name, partition: p.partition, value, out });
      }
    }
    if (records.length === 0) {
      this.maybeForgetGroup(group);
      return response;
    }

    const seq = ++this.seq;
    const outcome = await this.writeRecords(req.groupId, records);
    if (outcome.errorCode !== 0) {
      for (const e of pending) e.out.errorCode = outcome.errorCode;
      this.maybeForgetGroup(group);
      return response;
    }
    // durable: publish to the cache unless the group was deleted meanwhile (its tombstones follow
    // this record in the log) or a later write already replaced the entry
    if (this.groups.get(req.groupId) === group) {
      for (const e of pending) {
        if (!this.log.getTopic(e.topic)) continue;
        let t = group.offsets.get(e.topic);
        if (!t) {
          t = new Map();
          group.offsets.set(e.topic, t);
        }
        const existing = t.get(e.partition);
        if (!existing || existing.seq < seq) t.set(e.partition, { ...e.value, seq });
      }
    }
    return response;
  }

  fetchOffsets(req: OffsetFetchRequest): OffsetFetchResponse {
    if (this.closed) return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, topics: [] };
    const group = this.groups.get(req.groupId);
    const entry = (partition: number, o: CommittedOffset | undefined) =>
      o
        ? { partition, offset: o.offset, leaderEpoch: o.leaderEpoch, metadata: o.metadata, errorCode: ErrorCode.NONE }
        : { partition, offset: -1n, leaderEpoch: -1, metadata: '', errorCode: ErrorCode.NONE };
    if (req.topics === null) {
      if (!group) return { errorCode: ErrorCode.NONE, topics: [] };
      return {
        errorCode: ErrorCode.NONE,
        topics: [...group.offsets].map(([name, parts]) => ({
          name,
          partitions: [...parts].sort((a, b) => a[0] - b[0]).map(([p, o]) => entry(p, o)),
        })),
      };
    }
    return {
      errorCode: ErrorCode.NONE,
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => entry(p, group?.offsets.get(t.name)?.get(p))),
      })),
    };
  }

  // -------------------------------------------------------------------------------------------
  // admin

  describeGroups(groupIds: string[]): DescribedGroup[] {
    return groupIds.map((groupId) => {
      const dead: DescribedGroup = {
        errorCode: ErrorCode.NONE,
        groupId,
        groupState: 'Dead',
        protocolType: '',
        protocolData: '',
        members: [],
      };
      if (this.closed) return { ...dead, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, groupState: '' };
      const group = this.groups.get(groupId);
      if (!group) return dead;
      const stable = group.state === 'Stable';
      return {
        errorCode: ErrorCode.NONE,
        groupId,
        groupState: group.state,
        protocolType: group.protocolType ?? '',
        protocolData: stable ? (group.protocolName ?? '') : '',
        members: [...group.members.values()].map((m) => ({
          memberId: m.memberId,
          groupInstanceId: m.groupInstanceId,
          clientId: m.clientId,
          clientHost: m.clientHost,
          memberMetadata: stable ? (m.protocols.find((p) => p.name === group.protocolName)?.metadata ?? EMPTY) : EMPTY,
          memberAssignment: stable ? m.assignment : EMPTY,
        })),
      };
    });
  }

  listGroups(statesFilter?: string[]): { groupId: string; protocolType: string; groupState: string }[] {
    if (this.closed) return [];
    const filter = statesFilter && statesFilter.length > 0 ? new Set(statesFilter.map((s) => s.toLowerCase())) : null;
    const out: { groupId: string; protocolType: string; groupState: string }[] = [];
    for (const g of this.groups.values()) {
      if (filter && !filter.has(g.state.toLowerCase())) continue;
      out.push({ groupId: g.groupId, protocolType: g.protocolType ?? '', groupState: g.state });
    }
    return out;
  }

  deleteGroups(groupIds: string[]): { groupId: string; errorCode: number }[] {
    return groupIds.map((groupId) => {
      if (this.closed) return { groupId, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE };
      const group = this.groups.get(groupId);
      if (!group || group.state === 'Dead') return { groupId, errorCode: ErrorCode.GROUP_ID_NOT_FOUND };
      if (group.state !== 'Empty') return { groupId, errorCode: ErrorCode.NON_EMPTY_GROUP };
      const records: BatchRecord[] = [];
      let count = 0;
      for (const [topic, parts] of group.offsets) {
        for (const partition of parts.keys()) {
          records.push({ key: encodeOffsetKey(groupId, topic, partition), value: null });
          count++;
        }
      }
      records.push({ key: encodeGroupKey(groupId), value: null });
      for (const t of group.pendingMembers.values()) clearTimeout(t);
      group.pendingMembers.clear();
      group.offsets.clear();
      this.transition(group, 'Dead');
      this.groups.delete(groupId);
      this.seq++;
      // DeleteGroups is synchronous in the contract: the tombstones are queued (ordered before any
      // later write for this group) and become durable shortly after
      void this.writeRecords(groupId, records).then((o) => {
        if (o.errorCode !== 0)
          this.logger.warn({ groupId, errorCode: o.errorCode }, 'group coordinator: failed to persist group deletion');
      });
      this.logger.info({ groupId, offsets: count }, 'group coordinator: group deleted');
      return { groupId, errorCode: ErrorCode.NONE };
    });
  }

  async onTopicDeleted(topic: string): Promise<void> {
    if (this.closed) return;
    const writes: Promise<WriteOutcome>[] = [];
    for (const group of [...this.groups.values()]) {
      const parts = group.offsets.get(topic);
      if (!parts) continue;
      const records: BatchRecord[] = [...parts.keys()].map((p) => ({
        key: encodeOffsetKey(group.groupId, topic, p),
        value: null,
      }));
      group.offsets.delete(topic);
      if (group.state === 'Empty' && group.offsets.size === 0 && group.pendingMembers.size === 0) {
        // an empty group left without offsets is gone (as Kafka's cleanup does)
        records.push({ key: encodeGroupKey(group.groupId), value: null });
        this.transition(group, 'Dead');
        this.groups.delete(group.groupId);
      }
      this.seq++;
      writes.push(this.writeRecords(group.groupId, records));
    }
    const outcomes = await Promise.all(writes);
    const failed = outcomes.filter((o) => o.errorCode !== 0).length;
    if (failed > 0) this.logger.warn({ topic, failed }, 'group coordinator: failed to persist some offset deletions');
  }

  async close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closed = true;
    if (this.retentionTimer) clearInterval(this.retentionTimer);
    this.retentionTimer = null;
    this.closing = (async () => {
      for (const group of this.groups.values()) {
        this.clearJoinTimer(group);
        this.clearPendingSync(group);
        group.initialDelay = null;
        for (const t of group.pendingMembers.values()) clearTimeout(t);
        group.pendingMembers.clear();
        for (const m of group.members.values()) {
          if (m.timer) clearTimeout(m.timer);
          m.timer = null;
          const jw = m.joinWaiter;
          const sw = m.syncWaiter;
          m.joinWaiter = null;
          m.syncWaiter = null;
          jw?.(joinError(m.memberId, ErrorCode.COORDINATOR_NOT_AVAILABLE));
          sw?.(syncError(ErrorCode.COORDINATOR_NOT_AVAILABLE));
        }
      }
      for (const w of this.writers.values()) await w.drain();
    })();
    return this.closing;
  }

  /** for tests and diagnostics */
  groupState(groupId: string): GroupState | undefined {
    return this.groups.get(groupId)?.state;
  }
}
