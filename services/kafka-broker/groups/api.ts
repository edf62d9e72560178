// The contract between the broker's wire handlers and its consumer-group coordinator.
// The coordinator is protocol-agnostic: plain objects in, plain objects out, Kafka error codes as numbers.
// Error codes used: 0 NONE, 15 COORDINATOR_NOT_AVAILABLE, 16 NOT_COORDINATOR, 22 ILLEGAL_GENERATION,
// 23 INCONSISTENT_GROUP_PROTOCOL, 24 INVALID_GROUP_ID, 25 UNKNOWN_MEMBER_ID, 26 INVALID_SESSION_TIMEOUT,
// 27 REBALANCE_IN_PROGRESS, 69 GROUP_ID_NOT_FOUND, 68 NON_EMPTY_GROUP, 79 MEMBER_ID_REQUIRED,
// 82 FENCED_INSTANCE_ID, 3 UNKNOWN_TOPIC_OR_PARTITION.

export interface JoinGroupRequest {
  groupId: string;
  /** '' for a new member */
  memberId: string;
  groupInstanceId: string | null;
  protocolType: string;
  protocols: { name: string; metadata: Buffer }[];
  sessionTimeoutMs: number;
  /** v0 has no rebalance timeout: pass sessionTimeoutMs */
  rebalanceTimeoutMs: number;
  clientId: string;
  clientHost: string;
  /** JoinGroup v4+: a new member first gets MEMBER_ID_REQUIRED with its assigned id */
  requireKnownMemberId: boolean;
}

export interface JoinGroupResponse {
  errorCode: number;
  generationId: number;
  protocolType: string | null;
  protocolName: string | null;
  leader: string;
  memberId: string;
  /** filled only for the leader */
  members: { memberId: string; groupInstanceId: string | null; metadata: Buffer }[];
}

export interface SyncGroupRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  groupInstanceId: string | null;
  protocolType: string | null;
  protocolName: string | null;
  /** non-empty only from the leader */
  assignments: { memberId: string; assignment: Buffer }[];
}

export interface SyncGroupResponse {
  errorCode: number;
  protocolType: string | null;
  protocolName: string | null;
  assignment: Buffer;
}

export interface OffsetCommitRequest {
  groupId: string;
  /** -1 for simple (non-group) commits */
  generationId: number;
  memberId: string;
  groupInstanceId: string | null;
  topics: {
    name: string;
    partitions: { partition: number; offset: bigint; leaderEpoch: number; metadata: string | null }[];
  }[];
}

export interface OffsetCommitResponse {
  topics: { name: string; partitions: { partition: number; errorCode: number }[] }[];
}

export interface OffsetFetchRequest {
  groupId: string;
  /** null = all committed offsets of the group */
  topics: { name: string; partitions: number[] }[] | null;
}

export interface OffsetFetchResponse {
  errorCode: number;
  topics: {
    name: string;
    /** offset -1n when nothing is committed */
    partitions: {
      partition: number;
      offset: bigint;
      leaderEpoch: number;
      metadata: string | null;
      errorCode: number;
    }[];
  }[];
}

export interface DescribedGroup {
  errorCode: number;
  groupId: string;
  /** Empty | PreparingRebalance | CompletingRebalance | Stable | Dead */
  groupState: string;
  protocolType: string;
  protocolData: string;
  members: {
    memberId: string;
    groupInstanceId: string | null;
    clientId: string;
    clientHost: string;
    memberMetadata: Buffer;
    memberAssignment: Buffer;
  }[];
}

export interface GroupCoordinator {
  /** resolves when the join phase of the rebalance completes (long poll, bounded by the rebalance timeout) */
  join(req: JoinGroupRequest): Promise<JoinGroupResponse>;
  /** resolves when the leader's assignment is available */
  sync(req: SyncGroupRequest): Promise<SyncGroupResponse>;
  heartbeat(req: { groupId: string; generationId: number; memberId: string; groupInstanceId: string | null }): {
    errorCode: number;
  };
  leave(req: { groupId: string; members: { memberId: string; groupInstanceId: string | null }[] }): {
    errorCode: number;
    members: { memberId: string; groupInstanceId: string | null; errorCode: number }[];
  };
  /** durable (through the LogStore) before it resolves */
  commitOffsets(req: OffsetCommitRequest): Promise<OffsetCommitResponse>;
  fetchOffsets(req: OffsetFetchRequest): OffsetFetchResponse;
  describeGroups(groupIds: string[]): DescribedGroup[];
  listGroups(statesFilter?: string[]): { groupId: string; protocolType: string; groupState: string }[];
  deleteGroups(groupIds: string[]): { groupId: string; errorCode: number }[];
  /** topic deleted: drop its committed offsets */
  onTopicDeleted(topic: string): Promise<void>;
  close(): Promise<void>;
}
