// DeleteTopics (key 20) v0-5.
import { defineApi } from '../api.ts';

export interface DeleteTopicsResponse {
  responses: { name: string; errorCode: number; errorMessage: string | null }[];
}

export const deleteTopics = defineApi<{ names: string[]; timeoutMs: number }, DeleteTopicsResponse>({
  key: 20,
  name: 'DeleteTopics',
  minVersion: 0,
  maxVersion: 5,
  flexibleFrom: 4,
  decode(r, v) {
    const flex = v >= 4;
    const names = r.array(flex, (r) => r.string(flex));
    const timeoutMs = r.int32();
    r.tags(flex);
    return { names, timeoutMs };
  },
  encode(w, v, res) {
    const flex = v >= 4;
    if (v >= 1) w.int32(0);
    w.array(res.responses, flex, (w, t) => {
      w.string(t.name, flex).int16(t.errorCode);
      if (v >= 5) w.nullableString(t.errorMessage, flex);
      w.tags(flex);
    });
    w.tags(flex);
  },
});
