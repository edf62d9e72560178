// DeleteGroups (key 42) v0-2.
import { defineApi } from '../api.ts';

export const deleteGroups = defineApi<{ groups: string[] }, { results: { groupId: string; errorCode: number }[] }>({
  key: 42,
  name: 'DeleteGroups',
  minVersion: 0,
  maxVersion: 2,
  flexibleFrom: 2,
  decode(r, v) {
    const flex = v >= 2;
    const groups = r.array(flex, (r) => r.string(flex));
    r.tags(flex);
    return { groups };
  },
  encode(w, v, res) {
    const flex = v >= 2;
    w.int32(0);
    w.array(res.results, flex, (w, g) => {
      w.string(g.groupId, flex).int16(g.errorCode).tags(flex);
    });
    w.tags(flex);
  },
});
