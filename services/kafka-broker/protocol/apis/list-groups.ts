// ListGroups (key 16) v0-4.
import { defineApi } from '../api.ts';

export interface ListGroupsResponse {
  errorCode: number;
  groups: { groupId: string; protocolType: string; groupState: string }[];
}

export const listGroups = defineApi<{ statesFilter: string[] }, ListGroupsResponse>({
  key: 16,
  name: 'ListGroups',
  minVersion: 0,
  maxVersion: 4,
  flexibleFrom: 3,
  decode(r, v) {
    const flex = v >= 3;
    const statesFilter = v >= 4 ? r.array(flex, (r) => r.string(flex)) : [];
    r.tags(flex);
    return { statesFilter };
  },
  encode(w, v, res) {
    const flex = v >= 3;
    if (v >= 1) w.int32(0);
    w.int16(res.errorCode);
    w.array(res.groups, flex, (w, g) => {
      w.string(g.groupId, flex).string(g.protocolType, flex);
      if (v >= 4) w.string(g.groupState, flex);
      w.tags(flex);
    });
    w.tags(flex);
  },
});
