// The coordinator's groups cache and its persistence (Kafka's GroupMetadataManager): the groups by id,
// committed offsets (store, fetch, retention, cleanup after a topic deletion), group metadata records and
// tombstones in `__consumer_offsets` (offsets-log.ts / offsets-codec.ts), and the replay at start.
// Membership (membership.ts) decides who may commit; this file decides what is stored and when it is
// visible: an offset is published to the cache only once its record is durable.
import type { LogStore } from '../storage/api.ts';
import type { OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse } from './api.ts';
import type { Clock, TimerHandle } from './clock.ts';
import { type CommittedOffset, EMPTY, ErrorCode, Group, type GroupState } from './group.ts';
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

export interface GroupMetadataOptions {
  log: LogStore;
  clock: Clock;
  logger: Logger;
  offsetsTopic: string;
  offsetsTopicPartitions: number;
  maxMetadataSize: number;
  offsetsRetentionMs: number;
  offsetsRetentionCheckIntervalMs: number;
}

export class GroupMetadataManager {
  readonly groups = new Map<string, Group>();
  /** set by the coordinator's close(): every request answers COORDINATOR_NOT_AVAILABLE, timers do nothing */
  closed = false;
  private readonly log: LogStore;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly offsetsTopic: string;
  private offsetsPartitions: number;
  private readonly maxMetadataSize: number;
  private readonly offsetsRetentionMs: number;
  private readonly offsetsRetentionCheckIntervalMs: number;
  private readonly writers = new Map<number, PartitionWriter>();
  private retentionTimer: TimerHandle | null = null;
  private seq = 0;

  constructor(opts: GroupMetadataOptions) {
    this.log = opts.log;
    this.clock = opts.clock;
    this.logger = opts.logger;
    this.offsetsTopic = opts.offsetsTopic;
    this.offsetsPartitions = opts.offsetsTopicPartitions;
    this.maxMetadataSize = opts.maxMetadataSize;
    this.offsetsRetentionMs = opts.offsetsRetentionMs;
    this.offsetsRetentionCheckIntervalMs = opts.offsetsRetentionCheckIntervalMs;
  }

  /**
   * Creates the offsets topic if needed and rebuilds groups and committed offsets from it; `restore`
   * brings back the members of a group whose metadata record names some. Then arms offset retention.
   */
  async load(restore: (group: Group, meta: GroupValue) => void): Promise<void> {
    const info = await ensureOffsetsTopic(this.log, this.offsetsTopic, this.offsetsPartitions, this.logger);
    this.offsetsPartitions = info.partitions;
    const replayed = new Map<string, ReplayedGroup>();
    let records = 0;
    for (let p = 0; p < info.partitions; p++) {
      const store = this.log.partition(this.offsetsTopic, p);
      if (!store) throw new Error(`offsets topic ${this.offsetsTopic} has no partition ${p}`);
      this.writers.set(p, new PartitionWriter(store, () => this.clock.now(), this.logger));
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
      if (r.meta) this.restoreGroup(group, r.meta, restore);
      if (!r.meta && group.offsets.size === 0) continue;
      this.groups.set(groupId, group);
    }
    this.logger.info({ groups: this.groups.size, offsets, records }, 'group coordinator: loaded offsets topic');
    if (this.offsetsRetentionMs >= 0) {
      this.retentionTimer = this.clock.setInterval(() => {
        this.expireOffsets().catch((err) => this.logger.warn({ err }, 'group coordinator: offset expiration failed'));
      }, this.offsetsRetentionCheckIntervalMs);
    }
  }

  private restoreGroup(group: Group, meta: GroupValue, restoreMembers: (group: Group, meta: GroupValue) => void): void {
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
    restoreMembers(group, meta);
    if (group.leaderId === null || !group.members.has(group.leaderId))
      group.leaderId = group.members.keys().next().value ?? null;
  }

  /** a new group (Empty) in the cache */
  createGroup(groupId: string): Group {
    const group = new Group(groupId);
    group.stateTimestamp = this.clock.now();
    this.groups.set(groupId, group);
    return group;
  }

  transition(group: Group, state: GroupState): void {
    group.state = state;
    group.stateTimestamp = this.clock.now();
  }

  /** drops a group that holds nothing at all (e.g. created by a JoinGroup that never came back) */
  maybeForgetGroup(group: Group): void {
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
  // writes to __consumer_offsets

  private writeRecords(groupId: string, records: BatchRecord[]): Promise<WriteOutcome> {
    return this.writers.get(partitionForGroup(groupId, this.offsetsPartitions))!.write(records);
  }

  /** writes the group's metadata record (its members only when Stable); failures are logged */
  persistGroup(group: Group): void {
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

  // -------------------------------------------------------------------------------------------
  // offsets

  /** stores the offsets of a commit membership has accepted; per-partition errors in the response */
  async storeOffsets(group: Group, req: OffsetCommitRequest): Promise<OffsetCommitResponse> {
    const timestamp = this.clock.now();
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

  /**
   * Offset retention (KIP-211): offsets of a consumer group expire once the group has been Empty for
   * offsetsRetentionMs; offsets of a simple-commit group (no protocol type) expire individually
   * offsetsRetentionMs after their commit. An Empty group left without offsets is removed.
   * Runs on a timer; callable directly (tests). Returns the number of expired offsets.
   */
  async expireOffsets(nowMs = this.clock.now()): Promise<number> {
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

  /**
   * Deletes an Empty group: tombstones for its offsets and its metadata, queued (ordered before any later
   * write for this group) and durable shortly after; the group is gone from the cache at once.
   * Returns the number of offsets deleted.
   */
  deleteGroup(group: Group): number {
    const groupId = group.groupId;
    const records: BatchRecord[] = [];
    let count = 0;
    for (const [topic, parts] of group.offsets) {
      for (const partition of parts.keys()) {
        records.push({ key: encodeOffsetKey(groupId, topic, partition), value: null });
        count++;
      }
    }
    records.push({ key: encodeGroupKey(groupId), value: null });
    group.clearPendingMembers(this.clock);
    group.offsets.clear();
    this.transition(group, 'Dead');
    this.groups.delete(groupId);
    this.seq++;
    void this.writeRecords(groupId, records).then((o) => {
      if (o.errorCode !== 0)
        this.logger.warn({ groupId, errorCode: o.errorCode }, 'group coordinator: failed to persist group deletion');
    });
    return count;
  }

  /** drops the committed offsets of a deleted topic (an Empty group left without offsets goes too) */
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

  /** stops retention (the caller has set `closed`) */
  stopRetention(): void {
    if (this.retentionTimer) this.clock.clearInterval(this.retentionTimer);
    this.retentionTimer = null;
  }

  /** waits until every queued write is appended */
  async drain(): Promise<void> {
    for (const w of this.writers.values()) await w.drain();
  }
}
