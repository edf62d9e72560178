// ListOffsets (key 2) v1-6.
import { defineApi } from '../api.ts';

export interface ListOffsetsRequest {
  isolationLevel: number;
  topics: { name: string; partitions: { index: number; timestamp: bigint }[] }[];
}
export interface ListOffsetsResponse {
  topics: {
    name: string;
    partitions: { index: number; errorCode: number; timestamp: bigint; offset: bigint; leaderEpoch: number }[];
  }[];
}

export const listOffsets = defineApi<ListOffsetsRequest, ListOffsetsResponse>({
  key: 2,
  name: 'ListOffsets',
  minVersion: 1,
  maxVersion: 6,
  flexibleFrom: 6,
  decode(r, v) {
    const flex = v >= 6;
    r.int32(); // replica_id
    const isolationLevel = v >= 2 ? r.int8() : 0;
    const topics = r.array(flex, (r) => {
      const name = r.string(flex);
      const partitions = r.array(flex, (r) => {
        const index = r.int32();
        if (v >= 4) r.int32(); // current_leader_epoch
        const timestamp = r.int64();
        r.tags(flex);
        return { index, timestamp };
      });
      r.tags(flex);
      return { name, partitions };
    });
    r.tags(flex);
    return { isolationLevel, topics };
  },
  encode(w, v, res) {
    const flex = v >= 6;
    if (v >= 2) w.int32(0);
    w.array(res.topics, flex, (w, t) => {
      w.string(t.name, flex);
      w.array(t.partitions, flex, (w, p) => {
        w.int32(p.index).int16(p.errorCode).int64(p.timestamp).int64(p.offset);
        if (v >= 4) w.int32(p.leaderEpoch);
        w.tags(flex);
      });
      w.tags(flex);
    });
    w.tags(flex);
  },
});
