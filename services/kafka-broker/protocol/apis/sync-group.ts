// SyncGroup (key 14) v0-5.
import { defineApi } from '../api.ts';
import type { SyncGroupRequest, SyncGroupResponse } from '../../groups/api.ts';

export const syncGroup = defineApi<SyncGroupRequest, SyncGroupResponse>({
  key: 14,
  name: 'SyncGroup',
  minVersion: 0,
  maxVersion: 5,
  flexibleFrom: 4,
  decode(r, v) {
    const flex = v >= 4;
    const groupId = r.string(flex);
    const generationId = r.int32();
    const memberId = r.string(flex);
    const groupInstanceId = v >= 3 ? r.nullableString(flex) : null;
    const protocolType = v >= 5 ? r.nullableString(flex) : null;
    const protocolName = v >= 5 ? r.nullableString(flex) : null;
    const assignments = r.array(flex, (r) => {
      const memberId = r.string(flex);
      const assignment = r.bytes(flex);
      r.tags(flex);
      return { memberId, assignment };
    });
    r.tags(flex);
    return { groupId, generationId, memberId, groupInstanceId, protocolType, protocolName, assignments };
  },
  encode(w, v, res) {
    const flex = v >= 4;
    if (v >= 1) w.int32(0);
    w.int16(res.errorCode);
    if (v >= 5) w.nullableString(res.protocolType, flex).nullableString(res.protocolName, flex);
    w.bytes(res.assignment, flex).tags(flex);
  },
});
