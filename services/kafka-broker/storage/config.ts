// Topic configuration: Kafka's defaults and validation.

import { type CleanupPolicy, InvalidConfigError, type TopicConfig } from './api.ts';

export const KAFKA_DEFAULT_TOPIC_CONFIG: TopicConfig = {
  cleanupPolicy: 'delete',
  retentionMs: 7 * 24 * 3600 * 1000,
  retentionBytes: -1,
  segmentBytes: 1024 * 1024 * 1024,
  segmentMs: 7 * 24 * 3600 * 1000,
  deleteRetentionMs: 24 * 3600 * 1000,
  minCompactionLagMs: 0,
  maxMessageBytes: 1048588,
  messageTimestampType: 'CreateTime',
};

const INT32_MAX = 0x7fffffff;

type Check = (v: unknown) => string | null;

const int =
  (min: number, max = Number.MAX_SAFE_INTEGER): Check =>
  (v) =>
    typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max
      ? null
      : `must be an integer in [${min}, ${max}]`;

const CHECKS: Record<keyof TopicConfig, Check> = {
  cleanupPolicy: (v) =>
    v === 'delete' || v === 'compact' || v === 'compact,delete'
      ? null
      : `must be one of delete, compact, compact,delete`,
  retentionMs: int(-1),
  retentionBytes: int(-1),
  // Kafka's minimum segment size is 14 bytes; positions in the index are int32
  segmentBytes: int(14, INT32_MAX),
  segmentMs: int(1),
  deleteRetentionMs: int(0),
  minCompactionLagMs: int(0),
  maxMessageBytes: int(0, INT32_MAX),
  messageTimestampType: (v) =>
    v === 'CreateTime' || v === 'LogAppendTime' ? null : 'must be CreateTime or LogAppendTime',
};

/** Normalizes spellings Kafka accepts (e.g. "delete,compact", spaces) before validation. */
export function normalizeCleanupPolicy(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  const parts = new Set(
    v
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
  if (parts.size === 1 && (parts.has('delete') || parts.has('compact'))) return [...parts][0] as CleanupPolicy;
  if (parts.size === 2 && parts.has('delete') && parts.has('compact')) return 'compact,delete';
  return v;
}

/**
 * Validates a partial config (unknown keys, types, ranges) and returns a normalized copy. Keys whose value
 * is `undefined` are kept as `undefined` (meaning "reset to default" for alterTopicConfig).
 */
export function validateConfig(cfg: Partial<TopicConfig> | undefined): Partial<TopicConfig> {
  const out: Record<string, unknown> = {};
  if (!cfg) return out;
  for (const [key, raw] of Object.entries(cfg)) {
    const check = CHECKS[key as keyof TopicConfig];
    if (!check) throw new InvalidConfigError(`unknown topic config '${key}'`);
    if (raw === undefined) {
      out[key] = undefined;
      continue;
    }
    const value = key === 'cleanupPolicy' ? normalizeCleanupPolicy(raw) : raw;
    const problem = check(value);
    if (problem)
      throw new InvalidConfigError(`invalid value ${JSON.stringify(raw)} for topic config '${key}': ${problem}`);
    out[key] = value;
  }
  return out as Partial<TopicConfig>;
}

export function resolveConfig(defaults: TopicConfig, overrides: Partial<TopicConfig>): TopicConfig {
  const out = { ...defaults };
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

export function hasPolicy(cfg: TopicConfig, policy: 'delete' | 'compact'): boolean {
  return cfg.cleanupPolicy.split(',').includes(policy);
}
