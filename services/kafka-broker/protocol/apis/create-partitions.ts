// CreatePartitions (key 37) v0-2.
import { defineApi } from '../api.ts';

export interface CreatePartitionsRequest {
  topics: { name: string; count: number }[];
  timeoutMs: number;
  validateOnly: boolean;
}
export interface CreatePartitionsResponse {
  results: { name: string; errorCode: number; errorMessage: string | null }[];
}

export const createPartitions = defineApi<CreatePartitionsRequest, CreatePartitionsResponse>({
  key: 37,
  name: 'CreatePartitions',
  minVersion: 0,
  maxVersion: 2,
  flexibleFrom: 2,
  decode(r, v) {
    const flex = v >= 2;
    const topics = r.array(flex, (r) => {
      const name = r.string(flex);
      const count = r.int32();
      r.nullableArray(flex, (r) => {
        r.array(flex, (r) => r.int32());
        r.tags(flex);
      });
      r.tags(flex);
      return { name, count };
    });
    const timeoutMs = r.int32();
    const validateOnly = r.bool();
    r.tags(flex);
    return { topics, timeoutMs, validateOnly };
  },
  encode(w, v, res) {
    const flex = v >= 2;
    w.int32(0);
    w.array(res.results, flex, (w, t) => {
      w.string(t.name, flex).int16(t.errorCode).nullableString(t.errorMessage, flex).tags(flex);
    });
    w.tags(flex);
  },
});
