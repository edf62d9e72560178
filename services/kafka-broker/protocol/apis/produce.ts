// Produce (key 0) v3-9: record batch v2 only (v3 is the first version carrying it).
import { defineApi } from '../api.ts';

export interface ProduceRequest {
  transactionalId: string | null;
  acks: number;
  timeoutMs: number;
  topics: { name: string; partitions: { index: number; records: Buffer | null }[] }[];
}
export interface ProducePartitionResponse {
  index: number;
  errorCode: number;
  baseOffset: bigint;
  logAppendTimeMs: bigint;
  logStartOffset: bigint;
  errorMessage: string | null;
}
export interface ProduceResponse {
  topics: { name: string; partitions: ProducePartitionResponse[] }[];
}

export const produce = defineApi<ProduceRequest, ProduceResponse>({
  key: 0,
  name: 'Produce',
  minVersion: 3,
  maxVersion: 9,
  flexibleFrom: 9,
  decode(r, v) {
    const flex = v >= 9;
    const transactionalId = r.nullableString(flex);
    const acks = r.int16();
    const timeoutMs = r.int32();
    const topics = r.array(flex, (r) => {
      const name = r.string(flex);
      const partitions = r.array(flex, (r) => {
        const index = r.int32();
        const records = r.nullableBytes(flex);
        r.tags(flex);
        return { index, records };
      });
      r.tags(flex);
      return { name, partitions };
    });
    r.tags(flex);
    return { transactionalId, acks, timeoutMs, topics };
  },
  encode(w, v, res) {
    const flex = v >= 9;
    w.array(res.topics, flex, (w, t) => {
      w.string(t.name, flex);
      w.array(t.partitions, flex, (w, p) => {
        w.int32(p.index).int16(p.errorCode).int64(p.baseOffset).int64(p.logAppendTimeMs);
        if (v >= 5) w.int64(p.logStartOffset);
        if (v >= 8) {
          w.arrayLength(0, flex); // record_errors
          w.nullableString(p.errorMessage, flex);
        }
        w.tags(flex);
      });
      w.tags(flex);
    });
    w.int32(0); // throttle_time_ms
    w.tags(flex);
  },
});
