// JoinGroup (key 11) v0-9.
import { defineApi } from '../api.ts';

export interface JoinGroupWireRequest {
  groupId: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  memberId: string;
  groupInstanceId: string | null;
  protocolType: string;
  protocols: { name: string; metadata: Buffer }[];
  reason: string | null;
}
export interface JoinGroupWireResponse {
  errorCode: number;
  generationId: number;
  protocolType: string | null;
  protocolName: string | null;
  leader: string;
  skipAssignment: boolean;
  memberId: string;
  members: { memberId: string; groupInstanceId: string | null; metadata: Buffer }[];
}

export const joinGroup = defineApi<JoinGroupWireRequest, JoinGroupWireResponse>({
  key: 11,
  name: 'JoinGroup',
  minVersion: 0,
  maxVersion: 9,
  flexibleFrom: 6,
  decode(r, v) {
    const flex = v >= 6;
    const groupId = r.string(flex);
    const sessionTimeoutMs = r.int32();
    const rebalanceTimeoutMs = v >= 1 ? r.int32() : sessionTimeoutMs;
    const memberId = r.string(flex);
    const groupInstanceId = v >= 5 ? r.nullableString(flex) : null;
    const protocolType = r.string(flex);
    const protocols = r.array(flex, (r) => {
      const name = r.string(flex);
      const metadata = r.bytes(flex);
      r.tags(flex);
      return { name, metadata };
    });
    const reason = v >= 8 ? r.nullableString(flex) : null;
    r.tags(flex);
    return {
      groupId,
      sessionTimeoutMs,
      rebalanceTimeoutMs,
      memberId,
      groupInstanceId,
      protocolType,
      protocols,
      reason,
    };
  },
  encode(w, v, res) {
    const flex = v >= 6;
    if (v >= 2) w.int32(0);
    w.int16(res.errorCode).int32(res.generationId);
    if (v >= 7) w.nullableString(res.protocolType, flex).nullableString(res.protocolName, flex);
    else w.string(res.protocolName ?? '', flex);
    w.string(res.leader, flex);
    if (v >= 9) w.bool(res.skipAssignment);
    w.string(res.memberId, flex);
    w.array(res.members, flex, (w, m) => {
      w.string(m.memberId, flex);
      if (v >= 5) w.nullableString(m.groupInstanceId, flex);
      w.bytes(m.metadata, flex).tags(flex);
    });
    w.tags(flex);
  },
  sizeHint: 1024,
});
