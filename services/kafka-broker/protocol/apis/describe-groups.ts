// DescribeGroups (key 15) v0-5.
import { defineApi } from '../api.ts';
import type { DescribedGroup } from '../../groups/api.ts';

export const describeGroups = defineApi<{ groups: string[] }, { groups: DescribedGroup[] }>({
  key: 15,
  name: 'DescribeGroups',
  minVersion: 0,
  maxVersion: 5,
  flexibleFrom: 5,
  decode(r, v) {
    const flex = v >= 5;
    const groups = r.array(flex, (r) => r.string(flex));
    if (v >= 3) r.bool(); // include_authorized_operations
    r.tags(flex);
    return { groups };
  },
  encode(w, v, res) {
    const flex = v >= 5;
    if (v >= 1) w.int32(0);
    w.array(res.groups, flex, (w, g) => {
      w.int16(g.errorCode).string(g.groupId, flex).string(g.groupState, flex);
      w.string(g.protocolType, flex).string(g.protocolData, flex);
      w.array(g.members, flex, (w, m) => {
        w.string(m.memberId, flex);
        if (v >= 4) w.nullableString(m.groupInstanceId, flex);
        w.string(m.clientId, flex).string(m.clientHost, flex);
        w.bytes(m.memberMetadata, flex).bytes(m.memberAssignment, flex).tags(flex);
      });
      if (v >= 3) w.int32(-2147483648);
      w.tags(flex);
    });
    w.tags(flex);
  },
  sizeHint: 1024,
});
