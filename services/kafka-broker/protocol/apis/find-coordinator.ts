// FindCoordinator (key 10) v0-4 (v4 batches coordinator keys).
import { defineApi } from '../api.ts';

export interface FindCoordinatorRequest {
  keyType: number;
  keys: string[];
}
export interface Coordinator {
  key: string;
  nodeId: number;
  host: string;
  port: number;
  errorCode: number;
  errorMessage: string | null;
}
export interface FindCoordinatorResponse {
  coordinators: Coordinator[];
}

export const findCoordinator = defineApi<FindCoordinatorRequest, FindCoordinatorResponse>({
  key: 10,
  name: 'FindCoordinator',
  minVersion: 0,
  maxVersion: 4,
  flexibleFrom: 3,
  decode(r, v) {
    const flex = v >= 3;
    let keys: string[] = [];
    if (v < 4) keys = [r.string(flex)];
    const keyType = v >= 1 ? r.int8() : 0;
    if (v >= 4) keys = r.array(flex, (r) => r.string(flex));
    r.tags(flex);
    return { keyType, keys };
  },
  encode(w, v, res) {
    const flex = v >= 3;
    if (v >= 1) w.int32(0);
    if (v < 4) {
      const c = res.coordinators[0];
      w.int16(c.errorCode);
      if (v >= 1) w.nullableString(c.errorMessage, flex);
      w.int32(c.nodeId).string(c.host, flex).int32(c.port);
    } else {
      w.array(res.coordinators, flex, (w, c) => {
        w.string(c.key, flex).int32(c.nodeId).string(c.host, flex).int32(c.port);
        w.int16(c.errorCode).nullableString(c.errorMessage, flex).tags(flex);
      });
    }
    w.tags(flex);
  },
});
