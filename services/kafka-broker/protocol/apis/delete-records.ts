// DeleteRecords (key 21) v0-2.
import { defineApi } from '../api.ts';

export interface DeleteRecordsRequest {
  topics: { name: string; partitions: { index: number; offset: bigint }[] }[];
  timeoutMs: number;
}
export interface DeleteRecordsResponse {
  topics: { name: string; partitions: { index: number; lowWatermark: bigint; errorCode: number }[] }[];
}

export const deleteRecords = defineApi<DeleteRecordsRequest, DeleteRecordsResponse>({
  key: 21,
  name: 'DeleteRecords',
  minVersion: 0,
  maxVersion: 2,
  flexibleFrom: 2,
  decode(r, v) {
    const flex = v >= 2;
    const topics = r.array(flex, (r) => {
      const name = r.string(flex);
      const partitions = r.array(flex, (r) => {
        const index = r.int32();
        const offset = r.int64();
        r.tags(flex);
        return { index, offset };
      });
      r.tags(flex);
      return { name, partitions };
    });
    const timeoutMs = r.int32();
    r.tags(flex);
    return { topics, timeoutMs };
  },
  encode(w, v, res) {
    const flex = v >= 2;
    w.int32(0);
    w.array(res.topics, flex, (w, t) => {
      w.string(t.name, flex);
      w.array(t.partitions, flex, (w, p) => {
        w.int32(p.index).int64(p.lowWatermark).int16(p.errorCode).tags(flex);
      });
      w.tags(flex);
    });
    w.tags(flex);
  },
});
