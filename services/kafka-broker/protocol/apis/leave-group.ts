// LeaveGroup (key 13) v0-5 (v3+ batches members).
import { defineApi } from '../api.ts';

export interface LeaveGroupRequest {
  groupId: string;
  members: { memberId: string; groupInstanceId: string | null }[];
}
export interface LeaveGroupResponse {
  errorCode: number;
  members: { memberId: string; groupInstanceId: string | null; errorCode: number }[];
}

export const leaveGroup = defineApi<LeaveGroupRequest, LeaveGroupResponse>({
  key: 13,
  name: 'LeaveGroup',
  minVersion: 0,
  maxVersion: 5,
  flexibleFrom: 4,
  decode(r, v) {
    const flex = v >= 4;
    const groupId = r.string(flex);
    let members: LeaveGroupRequest['members'];
    if (v < 3) {
      members = [{ memberId: r.string(flex), groupInstanceId: null }];
    } else {
      members = r.array(flex, (r) => {
        const memberId = r.string(flex);
        const groupInstanceId = r.nullableString(flex);
        if (v >= 5) r.nullableString(flex); // reason
        r.tags(flex);
        return { memberId, groupInstanceId };
      });
    }
    r.tags(flex);
    return { groupId, members };
  },
  encode(w, v, res) {
    const flex = v >= 4;
    if (v >= 1) w.int32(0);
    // before v3 there is a single member: surface its error when the group-level code is NONE
    const single = v < 3 && res.errorCode === 0 && res.members[0] ? res.members[0].errorCode : res.errorCode;
    w.int16(v < 3 ? single : res.errorCode);
    if (v >= 3) {
      w.array(res.members, flex, (w, m) => {
        w.string(m.memberId, flex).nullableString(m.groupInstanceId, flex).int16(m.errorCode).tags(flex);
      });
    }
    w.tags(flex);
  },
});
