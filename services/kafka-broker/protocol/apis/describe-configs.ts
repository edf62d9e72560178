// DescribeConfigs (key 32) v0-4.
import { defineApi } from '../api.ts';

export interface DescribeConfigsRequest {
  resources: { resourceType: number; resourceName: string; configurationKeys: string[] | null }[];
  includeSynonyms: boolean;
  includeDocumentation: boolean;
}
export interface DescribedConfig {
  name: string;
  value: string | null;
  readOnly: boolean;
  isDefault: boolean;
  /** 1 DYNAMIC_TOPIC_CONFIG, 4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG */
  configSource: number;
  isSensitive: boolean;
  synonyms: { name: string; value: string | null; source: number }[];
  /** 1 BOOLEAN 2 STRING 3 INT 4 SHORT 5 LONG 6 DOUBLE 7 LIST */
  configType: number;
  documentation: string | null;
}
export interface DescribeConfigsResult {
  errorCode: number;
  errorMessage: string | null;
  resourceType: number;
  resourceName: string;
  configs: DescribedConfig[];
}

export const describeConfigs = defineApi<DescribeConfigsRequest, { results: DescribeConfigsResult[] }>({
  key: 32,
  name: 'DescribeConfigs',
  minVersion: 0,
  maxVersion: 4,
  flexibleFrom: 4,
  decode(r, v) {
    const flex = v >= 4;
    const resources = r.array(flex, (r) => {
      const resourceType = r.int8();
      const resourceName = r.string(flex);
      const configurationKeys = r.nullableArray(flex, (r) => r.string(flex));
      r.tags(flex);
      return { resourceType, resourceName, configurationKeys };
    });
    const includeSynonyms = v >= 1 ? r.bool() : false;
    const includeDocumentation = v >= 3 ? r.bool() : false;
    r.tags(flex);
    return { resources, includeSynonyms, includeDocumentation };
  },
  encode(w, v, res) {
    const flex = v >= 4;
    w.int32(0);
    w.array(res.results, flex, (w, t) => {
      w.int16(t.errorCode).nullableString(t.errorMessage, flex).int8(t.resourceType).string(t.resourceName, flex);
      w.array(t.configs, flex, (w, c) => {
        w.string(c.name, flex).nullableString(c.value, flex).bool(c.readOnly);
        if (v === 0) w.bool(c.isDefault);
        else w.int8(c.configSource);
        w.bool(c.isSensitive);
        if (v >= 1) {
          w.array(c.synonyms, flex, (w, s) => {
            w.string(s.name, flex).nullableString(s.value, flex).int8(s.source).tags(flex);
          });
        }
        if (v >= 3) w.int8(c.configType).nullableString(c.documentation, flex);
        w.tags(flex);
      });
      w.tags(flex);
    });
    w.tags(flex);
  },
  sizeHint: 4096,
});
