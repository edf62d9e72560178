// OffsetCommit (key 8) v2-8.
import { defineApi } from '../api.ts';
import type { OffsetCommitRequest, OffsetCommitResponse } from '../../groups/api.ts';

export const offsetCommit = defineApi<OffsetCommitRequest, OffsetCommitResponse>({
  key: 8,
  name: 'OffsetCommit',
  minVersion: 2,
  maxVersion: 8,
  flexibleFrom: 8,
  decode(r, v) {
    const flex = v >= 8;
    const groupId = r.string(flex);
    const generationId = r.int32();
    const memberId = r.string(flex);
    const groupInstanceId = v >= 7 ? r.nullableString(flex) : null;
    if (v <= 4) r.int64(); // retention_time_ms
    const topics = r.array(flex, (r) => {
      const name = r.string(flex);
      const partitions = r.array(flex, (r) => {
        const partition = r.int32();
        const offset = r.int64();
        const leaderEpoch = v >= 6 ? r.int32() : -1;
        const metadata = r.nullableString(flex);
        r.tags(flex);
        return { partition, offset, leaderEpoch, metadata };
      });
      r.tags(flex);
      return { name, partitions };
    });
    r.tags(flex);
    return { groupId, generationId, memberId, groupInstanceId, topics };
  },
  encode(w, v, res) {
    const flex = v >= 8;
    if (v >= 3) w.int32(0);
    w.array(res.topics, flex, (w, t) => {
      w.string(t.name, flex);
      w.array(t.partitions, flex, (w, p) => {
        w.int32(p.partition).int16(p.errorCode).tags(flex);
      });
      w.tags(flex);
    });
    w.tags(flex);
  },
});
