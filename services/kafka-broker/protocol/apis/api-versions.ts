// ApiVersions (key 18) v0-3. The response header is always v0 (KIP-511), even for v3.
import { defineApi } from '../api.ts';

export interface ApiVersionsRequest {
  clientSoftwareName: string | null;
  clientSoftwareVersion: string | null;
}
export interface ApiVersionsResponse {
  errorCode: number;
  apiKeys: { apiKey: number; minVersion: number; maxVersion: number }[];
}

export const apiVersions = defineApi<ApiVersionsRequest, ApiVersionsResponse>({
  key: 18,
  name: 'ApiVersions',
  minVersion: 0,
  maxVersion: 3,
  flexibleFrom: 3,
  decode(r, v) {
    if (v < 3) return { clientSoftwareName: null, clientSoftwareVersion: null };
    const clientSoftwareName = r.string(true);
    const clientSoftwareVersion = r.string(true);
    r.tags(true);
    return { clientSoftwareName, clientSoftwareVersion };
  },
  encode(w, v, res) {
    const flex = v >= 3;
    w.int16(res.errorCode);
    w.array(res.apiKeys, flex, (w, k) => {
      w.int16(k.apiKey).int16(k.minVersion).int16(k.maxVersion).tags(flex);
    });
    if (v >= 1) w.int32(0); // throttle_time_ms
    w.tags(flex);
  },
  sizeHint: 512,
});
