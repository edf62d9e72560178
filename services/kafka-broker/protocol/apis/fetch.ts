// Fetch (key 1) v4-12 (v4 is the first version whose clients read record batch v2). Topics by name.
import { defineApi } from '../api.ts';

export interface FetchRequest {
  maxWaitMs: number;
  minBytes: number;
  maxBytes: number;
  isolationLevel: number;
  sessionId: number;
  sessionEpoch: number;
  topics: { name: string; partitions: { index: number; fetchOffset: bigint; maxBytes: number }[] }[];
}
export interface FetchPartitionResponse {
  index: number;
  errorCode: number;
  highWatermark: bigint;
  logStartOffset: bigint;
  /** stored batches, spliced into the response without copying */
  chunks: Buffer[];
  bytes: number;
}
export interface FetchResponse {
  errorCode: number;
  sessionId: number;
  topics: { name: string; partitions: FetchPartitionResponse[] }[];
}

export const fetch = defineApi<FetchRequest, FetchResponse>({
  key: 1,
  name: 'Fetch',
  minVersion: 4,
  maxVersion: 12,
  flexibleFrom: 12,
  decode(r, v) {
    const flex = v >= 12;
    r.int32(); // replica_id
    const maxWaitMs = r.int32();
    const minBytes = r.int32();
    const maxBytes = r.int32();
    const isolationLevel = r.int8();
    const sessionId = v >= 7 ? r.int32() : 0;
    const sessionEpoch = v >= 7 ? r.int32() : -1;
    const topics = r.array(flex, (r) => {
      const name = r.string(flex);
      const partitions = r.array(flex, (r) => {
        const index = r.int32();
        if (v >= 9) r.int32(); // current_leader_epoch
        const fetchOffset = r.int64();
        if (v >= 12) r.int32(); // last_fetched_epoch
        if (v >= 5) r.int64(); // log_start_offset (followers only)
        const maxBytes = r.int32();
        r.tags(flex);
        return { index, fetchOffset, maxBytes };
      });
      r.tags(flex);
      return { name, partitions };
    });
    if (v >= 7) {
      r.array(flex, (r) => {
        r.string(flex);
        r.array(flex, (r) => r.int32());
        r.tags(flex);
      });
    }
    if (v >= 11) r.string(flex); // rack_id
    r.tags(flex);
    return { maxWaitMs, minBytes, maxBytes, isolationLevel, sessionId, sessionEpoch, topics };
  },
  encode(w, v, res) {
    const flex = v >= 12;
    w.int32(0); // throttle_time_ms (v1+)
    if (v >= 7) w.int16(res.errorCode).int32(res.sessionId);
    w.array(res.topics, flex, (w, t) => {
      w.string(t.name, flex);
      w.array(t.partitions, flex, (w, p) => {
        w.int32(p.index).int16(p.errorCode).int64(p.highWatermark);
        w.int64(p.highWatermark); // last_stable_offset: no transactions, LSO = HW
        if (v >= 5) w.int64(p.logStartOffset);
        w.arrayLength(-1, flex); // aborted_transactions: null
        if (v >= 11) w.int32(-1); // preferred_read_replica
        if (flex) w.uvarint(p.bytes + 1);
        else w.int32(p.bytes);
        w.external(p.chunks);
        w.tags(flex);
      });
      w.tags(flex);
    });
    w.tags(flex);
  },
  sizeHint: 1024,
});
