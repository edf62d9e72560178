// Classic (pre-KIP-848) consumer-group coordinator for a single broker that coordinates every group.
// Semantics follow Apache Kafka's GroupCoordinator/GroupMetadata: states Empty -> PreparingRebalance ->
// CompletingRebalance -> Stable (and Dead once deleted), delayed joins bounded by the rebalance timeout,
// session timeouts, MEMBER_ID_REQUIRED, static membership and offset commits persisted in
// `__consumer_offsets` (see offsets-log.ts / offsets-codec.ts).
//
// Cut the way Kafka cuts it:
//   membership.ts        join / sync / heartbeat / leave, the rebalance state machine, sessions, timers
//   metadata-manager.ts  the groups cache, committed offsets, retention, persistence and replay
//   admin.ts             describe / list / delete groups
//   group.ts             Group, Member, error codes; clock.ts the injected clock and timers
// This class wires them behind the GroupCoordinator contract (api.ts) and owns start and close.
import type { LogStore } from '../storage/api.ts';
import { GroupAdmin } from './admin.ts';
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
import { type Clock, systemClock } from './clock.ts';
import { ErrorCode, type GroupState } from './group.ts';
import { GroupMembership } from './membership.ts';
import { GroupMetadataManager } from './metadata-manager.ts';
import type { Logger } from './offsets-log.ts';

export { ErrorCode, type GroupState } from './group.ts';

export interface GroupCoordinatorOptions {
  log: LogStore;
  /** wall clock (commit and state timestamps, retention) and timers (sessions, rebalances, retention
   *  checks); default: the process clock (clock.ts systemClock) */
  clock?: Clock;
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

const noopLogger: Logger = { info() {}, warn() {} };

export class ClassicGroupCoordinator implements GroupCoordinator {
  private readonly manager: GroupMetadataManager;
  private readonly membership: GroupMembership;
  private readonly admin: GroupAdmin;
  private closing: Promise<void> | null = null;

  constructor(opts: GroupCoordinatorOptions) {
    const clock = opts.clock ?? systemClock;
    const logger = opts.logger ?? noopLogger;
    this.manager = new GroupMetadataManager({
      log: opts.log,
      clock,
      logger,
      offsetsTopic: opts.offsetsTopic ?? '__consumer_offsets',
      offsetsTopicPartitions: opts.offsetsTopicPartitions ?? 1,
      maxMetadataSize: opts.maxMetadataSize ?? 4096,
      offsetsRetentionMs: opts.offsetsRetentionMs ?? 7 * 24 * 3600 * 1000,
      offsetsRetentionCheckIntervalMs: opts.offsetsRetentionCheckIntervalMs ?? 600_000,
    });
    this.membership = new GroupMembership(this.manager, {
      clock,
      logger,
      initialRebalanceDelayMs: opts.initialRebalanceDelayMs ?? 200,
      minSessionTimeoutMs: opts.minSessionTimeoutMs ?? 1000,
      maxSessionTimeoutMs: opts.maxSessionTimeoutMs ?? 1_800_000,
      newMemberJoinTimeoutMs: opts.newMemberJoinTimeoutMs ?? 300_000,
    });
    this.admin = new GroupAdmin(this.manager, logger);
  }

  /** creates the offsets topic if needed and rebuilds groups and committed offsets from it */
  async start(): Promise<void> {
    await this.manager.load((group, meta) => this.membership.restoreMembers(group, meta));
  }

  join(req: JoinGroupRequest): Promise<JoinGroupResponse> {
    return this.membership.join(req);
  }

  sync(req: SyncGroupRequest): Promise<SyncGroupResponse> {
    return this.membership.sync(req);
  }

  heartbeat(req: { groupId: string; generationId: number; memberId: string; groupInstanceId: string | null }): {
    errorCode: number;
  } {
    return this.membership.heartbeat(req);
  }

  leave(req: { groupId: string; members: { memberId: string; groupInstanceId: string | null }[] }): {
    errorCode: number;
    members: { memberId: string; groupInstanceId: string | null; errorCode: number }[];
  } {
    return this.membership.leave(req);
  }

  async commitOffsets(req: OffsetCommitRequest): Promise<OffsetCommitResponse> {
    const all = (errorCode: number): OffsetCommitResponse => ({
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partition: p.partition, errorCode })),
      })),
    });
    if (this.manager.closed) return all(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    let group = this.manager.groups.get(req.groupId);
    if (!group) {
      // the group does not use the coordinator for membership: a simple commit creates it
      if (req.generationId >= 0) return all(ErrorCode.ILLEGAL_GENERATION);
      group = this.manager.createGroup(req.groupId);
    } else {
      const errorCode = this.membership.validateCommit(group, req);
      if (errorCode !== ErrorCode.NONE) return all(errorCode);
    }
    return this.manager.storeOffsets(group, req);
  }

  fetchOffsets(req: OffsetFetchRequest): OffsetFetchResponse {
    return this.manager.fetchOffsets(req);
  }

  /** offset retention (KIP-211), run on a timer; callable directly (tests). Returns the expired count. */
  expireOffsets(nowMs?: number): Promise<number> {
    return this.manager.expireOffsets(nowMs);
  }

  describeGroups(groupIds: string[]): DescribedGroup[] {
    return this.admin.describeGroups(groupIds);
  }

  listGroups(statesFilter?: string[]): { groupId: string; protocolType: string; groupState: string }[] {
    return this.admin.listGroups(statesFilter);
  }

  deleteGroups(groupIds: string[]): { groupId: string; errorCode: number }[] {
    return this.admin.deleteGroups(groupIds);
  }

  onTopicDeleted(topic: string): Promise<void> {
    return this.manager.onTopicDeleted(topic);
  }

  async close(): Promise<void> {
    if (this.closing) return this.closing;
    this.manager.closed = true;
    this.manager.stopRetention();
    this.closing = (async () => {
      this.membership.close();
      await this.manager.drain();
    })();
    return this.closing;
  }

  /** for tests and diagnostics */
  groupState(groupId: string): GroupState | undefined {
    return this.manager.groups.get(groupId)?.state;
  }
}
