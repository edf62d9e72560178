// Metadata (key 3) v0-12.
import { defineApi } from '../api.ts';

export interface MetadataRequest {
  /** null = all topics */
  topics: { topicId: Buffer | null; name: string | null }[] | null;
  allowAutoTopicCreation: boolean;
}
export interface MetadataPartition {
  errorCode: number;
  partitionIndex: number;
  leaderId: number;
  leaderEpoch: number;
  replicaNodes: number[];
  isrNodes: number[];
  offlineReplicas: number[];
}
export interface MetadataTopic {
  errorCode: number;
  name: string | null;
  topicId: Buffer | null;
  isInternal: boolean;
  partitions: MetadataPartition[];
}
export interface MetadataResponse {
  brokers: { nodeId: number; host: string; port: number; rack: string | null }[];
  clusterId: string | null;
  controllerId: number;
  topics: MetadataTopic[];
}

const AUTHORIZED_OPS_UNKNOWN = -2147483648;

export const metadata = defineApi<MetadataRequest, MetadataResponse>({
  key: 3,
  name: 'Metadata',
  minVersion: 0,
  maxVersion: 12,
  flexibleFrom: 9,
  decode(r, v) {
    const flex = v >= 9;
    const topics = r.nullableArray(flex, (r) => {
      const topicId = v >= 10 ? r.uuid() : null;
      const name = v >= 10 ? r.nullableString(flex) : r.string(flex);
      r.tags(flex);
      return { topicId, name };
    });
    const allowAutoTopicCreation = v >= 4 ? r.bool() : true;
    if (v >= 8 && v <= 10) r.bool(); // include_cluster_authorized_operations
    if (v >= 8) r.bool(); // include_topic_authorized_operations
    r.tags(flex);
    // v0: an empty array means all topics
    return { topics: v === 0 && topics !== null && topics.length === 0 ? null : topics, allowAutoTopicCreation };
  },
  encode(w, v, res) {
    const flex = v >= 9;
    if (v >= 3) w.int32(0);
    w.array(res.brokers, flex, (w, b) => {
      w.int32(b.nodeId).string(b.host, flex).int32(b.port);
      if (v >= 1) w.nullableString(b.rack, flex);
      w.tags(flex);
    });
    if (v >= 2) w.nullableString(res.clusterId, flex);
    if (v >= 1) w.int32(res.controllerId);
    w.array(res.topics, flex, (w, t) => {
      w.int16(t.errorCode);
      if (v >= 12) w.nullableString(t.name, flex);
      else w.string(t.name ?? '', flex);
      if (v >= 10) w.uuid(t.topicId);
      if (v >= 1) w.bool(t.isInternal);
      w.array(t.partitions, flex, (w, p) => {
        w.int16(p.errorCode).int32(p.partitionIndex).int32(p.leaderId);
        if (v >= 7) w.int32(p.leaderEpoch);
        w.array(p.replicaNodes, flex, (w, n) => w.int32(n));
        w.array(p.isrNodes, flex, (w, n) => w.int32(n));
        if (v >= 5) w.array(p.offlineReplicas, flex, (w, n) => w.int32(n));
        w.tags(flex);
      });
      if (v >= 8) w.int32(AUTHORIZED_OPS_UNKNOWN);
      w.tags(flex);
    });
    if (v >= 8 && v <= 10) w.int32(AUTHORIZED_OPS_UNKNOWN);
    w.tags(flex);
  },
  sizeHint: 1024,
});
