// DescribeCluster (key 60) v0-1 (flexible from v0).
import { defineApi } from '../api.ts';

export interface DescribeClusterResponse {
  errorCode: number;
  errorMessage: string | null;
  endpointType: number;
  clusterId: string;
  controllerId: number;
  brokers: { brokerId: number; host: string; port: number; rack: string | null }[];
}

export const describeCluster = defineApi<{ endpointType: number }, DescribeClusterResponse>({
  key: 60,
  name: 'DescribeCluster',
  minVersion: 0,
  maxVersion: 1,
  flexibleFrom: 0,
  decode(r, v) {
    r.bool(); // include_cluster_authorized_operations
    const endpointType = v >= 1 ? r.int8() : 1;
    r.tags(true);
    return { endpointType };
  },
  encode(w, v, res) {
    w.int32(0).int16(res.errorCode).nullableString(res.errorMessage, true);
    if (v >= 1) w.int8(res.endpointType);
    w.string(res.clusterId, true).int32(res.controllerId);
    w.array(res.brokers, true, (w, b) => {
      w.int32(b.brokerId).string(b.host, true).int32(b.port).nullableString(b.rack, true).tags(true);
    });
    w.int32(-2147483648).tags(true);
  },
});
