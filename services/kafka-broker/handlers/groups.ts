// Consumer-group APIs: wire shapes in, GroupCoordinator calls, wire shapes out.
import type {
  DescribedGroup,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchRequest,
  OffsetFetchResponse,
  SyncGroupRequest,
  SyncGroupResponse,
} from '../groups/api.ts';
import type { HeartbeatRequest } from '../protocol/apis/heartbeat.ts';
import type { JoinGroupWireRequest, JoinGroupWireResponse } from '../protocol/apis/join-group.ts';
import type { LeaveGroupRequest, LeaveGroupResponse } from '../protocol/apis/leave-group.ts';
import type { ListGroupsResponse } from '../protocol/apis/list-groups.ts';
import type { Handler } from '../server.ts';
import type { BrokerState } from './state.ts';

export function joinGroupHandler(state: BrokerState): Handler<JoinGroupWireRequest, JoinGroupWireResponse> {
  return async (ctx, req) => {
    const res = await state.groups.join({
      groupId: req.groupId,
      memberId: req.memberId,
      groupInstanceId: req.groupInstanceId,
      protocolType: req.protocolType,
      protocols: req.protocols,
      sessionTimeoutMs: req.sessionTimeoutMs,
      rebalanceTimeoutMs: req.rebalanceTimeoutMs,
      clientId: ctx.header.clientId ?? '',
      clientHost: ctx.clientHost,
      requireKnownMemberId: ctx.header.apiVersion >= 4,
    });
    return {
      errorCode: res.errorCode,
      generationId: res.generationId,
      protocolType: res.protocolType,
      protocolName: res.protocolName,
      leader: res.leader,
      skipAssignment: false,
      memberId: res.memberId,
      members: res.members,
    };
  };
}

export function syncGroupHandler(state: BrokerState): Handler<SyncGroupRequest, SyncGroupResponse> {
  return (_ctx, req) => state.groups.sync(req);
}

export function heartbeatHandler(state: BrokerState): Handler<HeartbeatRequest, { errorCode: number }> {
  return (_ctx, req) => state.groups.heartbeat(req);
}

export function leaveGroupHandler(state: BrokerState): Handler<LeaveGroupRequest, LeaveGroupResponse> {
  return (_ctx, req) => state.groups.leave(req);
}

export function offsetCommitHandler(state: BrokerState): Handler<OffsetCommitRequest, OffsetCommitResponse> {
  return (_ctx, req) => state.groups.commitOffsets(req);
}

export function offsetFetchHandler(state: BrokerState): Handler<OffsetFetchRequest, OffsetFetchResponse> {
  return (_ctx, req) => state.groups.fetchOffsets(req);
}

export function describeGroupsHandler(state: BrokerState): Handler<{ groups: string[] }, { groups: DescribedGroup[] }> {
  return (_ctx, req) => ({ groups: state.groups.describeGroups(req.groups) });
}

export function listGroupsHandler(state: BrokerState): Handler<{ statesFilter: string[] }, ListGroupsResponse> {
  return (_ctx, req) => ({
    errorCode: 0,
    groups: state.groups.listGroups(req.statesFilter.length > 0 ? req.statesFilter : undefined),
  });
}

export function deleteGroupsHandler(
  state: BrokerState,
): Handler<{ groups: string[] }, { results: { groupId: string; errorCode: number }[] }> {
  return (_ctx, req) => ({ results: state.groups.deleteGroups(req.groups) });
}
