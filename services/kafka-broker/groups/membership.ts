// Group membership (the JoinGroup / SyncGroup / Heartbeat / LeaveGroup half of Kafka's GroupCoordinator):
// the rebalance state machine Empty -> PreparingRebalance -> CompletingRebalance -> Stable, delayed joins
// bounded by the rebalance timeout, session timeouts, MEMBER_ID_REQUIRED and static membership. Every
// timer goes through the injected Clock. The groups themselves and their persistence live in
// metadata-manager.ts.
import { randomUUID } from 'node:crypto';
import type {
  JoinGroupRequest,
  JoinGroupResponse,
  OffsetCommitRequest,
  SyncGroupRequest,
  SyncGroupResponse,
} from './api.ts';
import type { Clock } from './clock.ts';
import { EMPTY, ErrorCode, type Group, type JoinWaiter, joinError, type Member, syncError } from './group.ts';
import type { GroupMetadataManager } from './metadata-manager.ts';
import type { GroupValue } from './offsets-codec.ts';
import type { Logger } from './offsets-log.ts';

export interface MembershipOptions {
  clock: Clock;
  logger: Logger;
  initialRebalanceDelayMs: number;
  minSessionTimeoutMs: number;
  maxSessionTimeoutMs: number;
  newMemberJoinTimeoutMs: number;
}

function protocolsMatch(a: { name: string; metadata: Buffer }[], b: { name: string; metadata: Buffer }[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i].name !== b[i].name || !a[i].metadata.equals(b[i].metadata)) return false;
  }
  return true;
}

export class GroupMembership {
  private readonly manager: GroupMetadataManager;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly initialRebalanceDelayMs: number;
  private readonly minSessionTimeoutMs: number;
  private readonly maxSessionTimeoutMs: number;
  private readonly newMemberJoinTimeoutMs: number;

  constructor(manager: GroupMetadataManager, opts: MembershipOptions) {
    this.manager = manager;
    this.clock = opts.clock;
    this.logger = opts.logger;
    this.initialRebalanceDelayMs = opts.initialRebalanceDelayMs;
    this.minSessionTimeoutMs = opts.minSessionTimeoutMs;
    this.maxSessionTimeoutMs = opts.maxSessionTimeoutMs;
    this.newMemberJoinTimeoutMs = opts.newMemberJoinTimeoutMs;
  }

  private get closed(): boolean {
    return this.manager.closed;
  }

  /** brings back the members of a Stable group read from its metadata record, with fresh sessions */
  restoreMembers(group: Group, meta: GroupValue): void {
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
  }

  /**
   * Whether a member's OffsetCommit may be stored (ErrorCode.NONE) or its error; an accepted commit counts
   * as a heartbeat. Commits without generation (-1) to an Empty group are simple commits.
   */
  validateCommit(group: Group, req: OffsetCommitRequest): number {
    if (group.state === 'Dead') return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    if (req.generationId < 0 && group.state === 'Empty') return ErrorCode.NONE;
    if (group.isStaticMemberFenced(req.memberId, req.groupInstanceId)) return ErrorCode.FENCED_INSTANCE_ID;
    const member = group.members.get(req.memberId);
    if (!member) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (req.generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION;
    if (group.state === 'CompletingRebalance') return ErrorCode.REBALANCE_IN_PROGRESS;
    // Stable or PreparingRebalance: the previous generation may still commit
    this.scheduleSession(group, member);
    return ErrorCode.NONE;
  }

  /** stops every timer and answers every waiting JoinGroup/SyncGroup with COORDINATOR_NOT_AVAILABLE */
  close(): void {
    for (const group of this.manager.groups.values()) {
      this.clearJoinTimer(group);
      this.clearPendingSync(group);
      group.initialDelay = null;
      group.clearPendingMembers(this.clock);
      for (const m of group.members.values()) {
        if (m.timer) this.clock.clearTimeout(m.timer);
        m.timer = null;
        const jw = m.joinWaiter;
        const sw = m.syncWaiter;
        m.joinWaiter = null;
        m.syncWaiter = null;
        jw?.(joinError(m.memberId, ErrorCode.COORDINATOR_NOT_AVAILABLE));
        sw?.(syncError(ErrorCode.COORDINATOR_NOT_AVAILABLE));
      }
    }
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
    let group = this.manager.groups.get(req.groupId);
    if (!group) {
      // only a member without id may create the group
      if (!isUnknownMember) return joinError(req.memberId, ErrorCode.UNKNOWN_MEMBER_ID);
      group = this.manager.createGroup(req.groupId);
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
      const t = this.clock.setTimeout(() => this.onPendingMemberExpired(group, newMemberId), req.sessionTimeoutMs);
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
      this.clock.clearTimeout(group.pendingMembers.get(memberId)!);
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
    if (old.timer) this.clock.clearTimeout(old.timer);
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
      group.joinTimer = this.clock.setTimeout(() => this.onInitialDelayExpired(group, delay), delay);
    } else {
      group.initialDelay = null;
      group.joinTimer = this.clock.setTimeout(() => this.completeJoin(group), rebalanceTimeout);
    }
    this.logger.info(
      { groupId: group.groupId, from: group.state, generationId: group.generationId, reason },
      'group coordinator: preparing to rebalance',
    );
    this.manager.transition(group, 'PreparingRebalance');
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
      group.joinTimer = this.clock.setTimeout(() => this.onInitialDelayExpired(group, next), next);
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
        group.joinTimer = this.clock.setTimeout(() => this.completeJoin(group), group.rebalanceTimeoutMs);
        return;
      }
      const leader = group.leaderId === null ? undefined : group.members.get(group.leaderId);
      if (!leader || leader.joinWaiter === null) group.leaderId = joined[0].memberId;
    }
    group.generationId++;
    if (group.members.size === 0) {
      group.protocolName = null;
      group.leaderId = null;
      this.manager.transition(group, 'Empty');
      this.logger.info(
        { groupId: group.groupId, generationId: group.generationId },
        'group coordinator: group is now empty',
      );
      this.manager.persistGroup(group);
      return;
    }
    group.protocolName = this.selectProtocol(group);
    this.manager.transition(group, 'CompletingRebalance');
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
    group.pendingSyncTimer = this.clock.setTimeout(
      () => this.onPendingSyncExpired(group, generation),
      group.rebalanceTimeoutMs,
    );
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

  private clearJoinTimer(group: Group): void {
    if (group.joinTimer) this.clock.clearTimeout(group.joinTimer);
    group.joinTimer = null;
  }

  private clearPendingSync(group: Group): void {
    if (group.pendingSyncTimer) this.clock.clearTimeout(group.pendingSyncTimer);
    group.pendingSyncTimer = null;
    group.pendingSync.clear();
  }

  private markSynced(group: Group, memberId: string): void {
    group.pendingSync.delete(memberId);
    if (group.pendingSync.size === 0 && group.pendingSyncTimer) {
      this.clock.clearTimeout(group.pendingSyncTimer);
      group.pendingSyncTimer = null;
    }
  }

  // -------------------------------------------------------------------------------------------
  // members: sessions and removal

  private scheduleSession(group: Group, member: Member, timeoutMs = member.sessionTimeoutMs): void {
    if (member.timer) this.clock.clearTimeout(member.timer);
    member.timer = this.clock.setTimeout(() => this.onSessionExpired(group, member), timeoutMs);
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
    this.manager.maybeForgetGroup(group);
  }

  /** removes the member without touching the group state */
  private removeMember(group: Group, member: Member): void {
    if (member.timer) this.clock.clearTimeout(member.timer);
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

  // -------------------------------------------------------------------------------------------
  // SyncGroup / Heartbeat / LeaveGroup

  async sync(req: SyncGroupRequest): Promise<SyncGroupResponse> {
    if (this.closed) return syncError(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    if (!req.groupId) return syncError(ErrorCode.INVALID_GROUP_ID);
    const group = this.manager.groups.get(req.groupId);
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
    this.manager.transition(group, 'Stable');
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
    this.manager.persistGroup(group);
  }

  heartbeat(req: { groupId: string; generationId: number; memberId: string; groupInstanceId: string | null }): {
    errorCode: number;
  } {
    if (this.closed) return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE };
    if (!req.groupId) return { errorCode: ErrorCode.INVALID_GROUP_ID };
    const group = this.manager.groups.get(req.groupId);
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
    const group = this.manager.groups.get(req.groupId);
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
        this.clock.clearTimeout(group.pendingMembers.get(lm.memberId)!);
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
      this.manager.maybeForgetGroup(group);
    }
    return { errorCode: ErrorCode.NONE, members };
  }
}
