// The admin queries over the coordinator's groups: DescribeGroups, ListGroups, DeleteGroups. They read
// the groups cache (metadata-manager.ts); DeleteGroups writes its tombstones through it.
import type { DescribedGroup } from './api.ts';
import { EMPTY, ErrorCode } from './group.ts';
import type { GroupMetadataManager } from './metadata-manager.ts';
import type { Logger } from './offsets-log.ts';

export class GroupAdmin {
  private readonly manager: GroupMetadataManager;
  private readonly logger: Logger;

  constructor(manager: GroupMetadataManager, logger: Logger) {
    this.manager = manager;
    this.logger = logger;
  }

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
      if (this.manager.closed) return { ...dead, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, groupState: '' };
      const group = this.manager.groups.get(groupId);
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
    if (this.manager.closed) return [];
    const filter = statesFilter && statesFilter.length > 0 ? new Set(statesFilter.map((s) => s.toLowerCase())) : null;
    const out: { groupId: string; protocolType: string; groupState: string }[] = [];
    for (const g of this.manager.groups.values()) {
      if (filter && !filter.has(g.state.toLowerCase())) continue;
      out.push({ groupId: g.groupId, protocolType: g.protocolType ?? '', groupState: g.state });
    }
    return out;
  }

  /** DeleteGroups is synchronous in the contract: an Empty group is gone at once, its tombstones follow */
  deleteGroups(groupIds: string[]): { groupId: string; errorCode: number }[] {
    return groupIds.map((groupId) => {
      if (this.manager.closed) return { groupId, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE };
      const group = this.manager.groups.get(groupId);
      if (!group || group.state === 'Dead') return { groupId, errorCode: ErrorCode.GROUP_ID_NOT_FOUND };
      if (group.state !== 'Empty') return { groupId, errorCode: ErrorCode.NON_EMPTY_GROUP };
      const offsets = this.manager.deleteGroup(group);
      this.logger.info({ groupId, offsets }, 'group coordinator: group deleted');
      return { groupId, errorCode: ErrorCode.NONE };
    });
  }
}
