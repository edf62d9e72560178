// A classic consumer group and its members as the coordinator keeps them in memory (Kafka's
// GroupMetadata / MemberMetadata), the error codes the coordinator answers with, and the small
// response helpers the membership and offset code share.
import type { JoinGroupResponse, SyncGroupResponse } from './api.ts';
import type { Clock, TimerHandle } from './clock.ts';

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

export type JoinWaiter = (r: JoinGroupResponse) => void;
export type SyncWaiter = (r: SyncGroupResponse) => void;

export interface Member {
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
  timer: TimerHandle | null;
}

export interface CommittedOffset {
  offset: bigint;
  leaderEpoch: number;
  metadata: string;
  commitTimestamp: number;
  /** coordinator write sequence (log order) of the record that set it */
  seq: number;
}

export class Group {
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
  pendingMembers = new Map<string, TimerHandle>();
  /** members of the current generation that have not sent SyncGroup yet */
  pendingSync = new Set<string>();
  pendingSyncTimer: TimerHandle | null = null;
  joinTimer: TimerHandle | null = null;
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

  /** forgets the MEMBER_ID_REQUIRED members still expected, and their timers */
  clearPendingMembers(clock: Clock): void {
    for (const t of this.pendingMembers.values()) clock.clearTimeout(t);
    this.pendingMembers.clear();
  }
}

export const EMPTY = Buffer.alloc(0);

export function joinError(memberId: string, errorCode: number): JoinGroupResponse {
  return { errorCode, generationId: -1, protocolType: null, protocolName: null, leader: '', memberId, members: [] };
}

export function syncError(errorCode: number): SyncGroupResponse {
  return { errorCode, protocolType: null, protocolName: null, assignment: EMPTY };
}
