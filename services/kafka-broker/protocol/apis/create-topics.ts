// CreateTopics (key 19) v0-5.
import { defineApi } from '../api.ts';

export interface CreatableTopic {
  name: string;
  numPartitions: number;
  replicationFactor: number;
  assignments: { partitionIndex: number; brokerIds: number[] }[];
  configs: { name: string; value: string | null }[];
}
export interface CreateTopicsRequest {
  topics: CreatableTopic[];
  timeoutMs: number;
  validateOnly: boolean;
}
export interface CreatableTopicResult {
  name: string;
  errorCode: number;
  errorMessage: string | null;
  numPartitions: number;
  replicationFactor: number;
  configs:
    | { name: string; value: string | null; readOnly: boolean; configSource: number; isSensitive: boolean }[]
    | null;
}

export const createTopics = defineApi<CreateTopicsRequest, { topics: CreatableTopicResult[] }>({
  key: 19,
  name: 'CreateTopics',
  minVersion: 0,
  maxVersion: 5,
  flexibleFrom: 5,
  decode(r, v) {
    const flex = v >= 5;
    const topics = r.array(flex, (r) => {
      const name = r.string(flex);
      const numPartitions = r.int32();
      const replicationFactor = r.int16();
      const assignments = r.array(flex, (r) => {
        const partitionIndex = r.int32();
        const brokerIds = r.array(flex, (r) => r.int32());
        r.tags(flex);
        return { partitionIndex, brokerIds };
      });
      const configs = r.array(flex, (r) => {
        const name = r.string(flex);
        const value = r.nullableString(flex);
        r.tags(flex);
        return { name, value };
      });
      r.tags(flex);
      return { name, numPartitions, replicationFactor, assignments, configs };
    });
    const timeoutMs = r.int32();
    const validateOnly = v >= 1 ? r.bool() : false;
    r.tags(flex);
    return { topics, timeoutMs, validateOnly };
  },
  encode(w, v, res) {
    const flex = v >= 5;
    if (v >= 2) w.int32(0);
    w.array(res.topics, flex, (w, t) => {
      w.string(t.name, flex).int16(t.errorCode);
      if (v >= 1) w.nullableString(t.errorMessage, flex);
      if (v >= 5) {
        w.int32(t.numPartitions).int16(t.replicationFactor);
        w.nullableArray(t.configs, flex, (w, c) => {
          w.string(c.name, flex)
            .nullableString(c.value, flex)
            .bool(c.readOnly)
            .int8(c.configSource)
            .bool(c.isSensitive);
          w.tags(flex);
        });
      }
      w.tags(flex);
    });
    w.tags(flex);
  },
  sizeHint: 1024,
});
