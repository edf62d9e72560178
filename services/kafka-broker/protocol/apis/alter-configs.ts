// AlterConfigs (key 33) v0-2 and IncrementalAlterConfigs (key 44) v0-1.
import { defineApi } from '../api.ts';

/** operation: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT; AlterConfigs replaces the whole set (operation -1) */
export interface AlterConfigsRequest {
  resources: {
    resourceType: number;
    resourceName: string;
    configs: { name: string; operation: number; value: string | null }[];
  }[];
  validateOnly: boolean;
}
export interface AlterConfigsResponse {
  responses: { errorCode: number; errorMessage: string | null; resourceType: number; resourceName: string }[];
}

function decodeWith(incremental: boolean) {
  return (r: import('../reader.ts').Reader, v: number): AlterConfigsRequest => {
    const flex = incremental ? v >= 1 : v >= 2;
    const resources = r.array(flex, (r) => {
      const resourceType = r.int8();
      const resourceName = r.string(flex);
      const configs = r.array(flex, (r) => {
        const name = r.string(flex);
        const operation = incremental ? r.int8() : -1;
        const value = r.nullableString(flex);
        r.tags(flex);
        return { name, operation, value };
      });
      r.tags(flex);
      return { resourceType, resourceName, configs };
    });
    const validateOnly = r.bool();
    r.tags(flex);
    return { resources, validateOnly };
  };
}

function encodeWith(incremental: boolean) {
  return (w: import('../writer.ts').Writer, v: number, res: AlterConfigsResponse): void => {
    const flex = incremental ? v >= 1 : v >= 2;
    w.int32(0);
    w.array(res.responses, flex, (w, t) => {
      w.int16(t.errorCode)
        .nullableString(t.errorMessage, flex)
        .int8(t.resourceType)
        .string(t.resourceName, flex)
        .tags(flex);
    });
    w.tags(flex);
  };
}

export const alterConfigs = defineApi<AlterConfigsRequest, AlterConfigsResponse>({
  key: 33,
  name: 'AlterConfigs',
  minVersion: 0,
  maxVersion: 2,
  flexibleFrom: 2,
  decode: decodeWith(false),
  encode: encodeWith(false),
});

export const incrementalAlterConfigs = defineApi<AlterConfigsRequest, AlterConfigsResponse>({
  key: 44,
  name: 'IncrementalAlterConfigs',
  minVersion: 0,
  maxVersion: 1,
  flexibleFrom: 1,
  decode: decodeWith(true),
  encode: encodeWith(true),
});
