// Heartbeat (key 12) v0-4.
import { defineApi } from '../api.ts';

export interface HeartbeatRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  groupInstanceId: string | null;
}

export const heartbeat = defineApi<HeartbeatRequest, { errorCode: number }>({
  key: 12,
  name: 'Heartbeat',
  minVersion: 0,
  maxVersion: 4,
  flexibleFrom: 4,
  decode(r, v) {
    const flex = v >= 4;
    const groupId = r.string(flex);
    const generationId = r.int32();
    const memberId = r.string(flex);
    const groupInstanceId = v >= 3 ? r.nullableString(flex) : null;
    r.tags(flex);
    return { groupId, generationId, memberId, groupInstanceId };
  },
  encode(w, v, res) {
    const flex = v >= 4;
    if (v >= 1) w.int32(0);
    w.int16(res.errorCode).tags(flex);
  },
});
