// OffsetFetch (key 9) v1-7 (single group per request).
import { defineApi } from '../api.ts';
import type { OffsetFetchRequest, OffsetFetchResponse } from '../../groups/api.ts';

export const offsetFetch = defineApi<OffsetFetchRequest, OffsetFetchResponse>({
  key: 9,
  name: 'OffsetFetch',
  minVersion: 1,
  maxVersion: 7,
  flexibleFrom: 6,
  decode(r, v) {
    const flex = v >= 6;
    const groupId = r.string(flex);
    const topics = r.nullableArray(flex, (r) => {
      const name = r.string(flex);
      const partitions = r.array(flex, (r) => r.int32());
      r.tags(flex);
      return { name, partitions };
    });
    if (v >= 7) r.bool(); // require_stable: no transactions, offsets are always stable
    r.tags(flex);
    return { groupId, topics };
  },
  encode(w, v, res) {
    const flex = v >= 6;
    if (v >= 3) w.int32(0);
    w.array(res.topics, flex, (w, t) => {
      w.string(t.name, flex);
      w.array(t.partitions, flex, (w, p) => {
        w.int32(p.partition).int64(p.offset);
        if (v >= 5) w.int32(p.leaderEpoch);
        w.nullableString(p.metadata, flex).int16(p.errorCode).tags(flex);
      });
      w.tags(flex);
    });
    if (v >= 2) w.int16(res.errorCode);
    w.tags(flex);
  },
  sizeHint: 1024,
});
