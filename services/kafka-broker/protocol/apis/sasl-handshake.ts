// SaslHandshake (key 17) v0-1. This broker has no SASL: every mechanism is refused
// (UNSUPPORTED_SASL_MECHANISM with an empty list of enabled mechanisms).
import { defineApi } from '../api.ts';

export const saslHandshake = defineApi<{ mechanism: string }, { errorCode: number; mechanisms: string[] }>({
  key: 17,
  name: 'SaslHandshake',
  minVersion: 0,
  maxVersion: 1,
  flexibleFrom: 1 << 30,
  decode(r) {
    return { mechanism: r.string(false) };
  },
  encode(w, _v, res) {
    w.int16(res.errorCode).array(res.mechanisms, false, (w, m) => w.string(m, false));
  },
});
