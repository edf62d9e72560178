// Topic configs as Kafka names them: defaults, parsing/validation of string values, describing.
import { InvalidConfigError, TOPIC_CONFIG_NAMES, type TopicConfig } from './storage/api.ts';

export const KAFKA_DEFAULT_TOPIC_CONFIG: TopicConfig = {
  cleanupPolicy: 'delete',
  retentionMs: 604_800_000,
  retentionBytes: -1,
  segmentBytes: 1_073_741_824,
  segmentMs: 604_800_000,
  deleteRetentionMs: 86_400_000,
  minCompactionLagMs: 0,
  maxMessageBytes: 1_048_588,
  messageTimestampType: 'CreateTime',
};

/** Kafka topic configs this broker accepts but has no use for on a single node (not stored). */
export const IGNORED_TOPIC_CONFIGS = new Set([
  'compression.type',
  'min.insync.replicas',
  'unclean.leader.election.enable',
  'flush.messages',
  'flush.ms',
  'index.interval.bytes',
  'segment.index.bytes',
  'segment.jitter.ms',
  'preallocate',
  'file.delete.delay.ms',
  'min.cleanable.dirty.ratio',
  'max.compaction.lag.ms',
  'message.downconversion.enable',
  'message.format.version',
  'message.timestamp.difference.max.ms',
  'message.timestamp.before.max.ms',
  'message.timestamp.after.max.ms',
  'follower.replication.throttled.replicas',
  'leader.replication.throttled.replicas',
  'local.retention.ms',
  'local.retention.bytes',
  'remote.storage.enable',
]);

const CONFIG_TYPE_LONG = 5;
const CONFIG_TYPE_INT = 3;
const CONFIG_TYPE_STRING = 2;
const CONFIG_TYPE_LIST = 7;

export const TOPIC_CONFIG_TYPES: Record<keyof TopicConfig, number> = {
  cleanupPolicy: CONFIG_TYPE_LIST,
  retentionMs: CONFIG_TYPE_LONG,
  retentionBytes: CONFIG_TYPE_LONG,
  segmentBytes: CONFIG_TYPE_INT,
  segmentMs: CONFIG_TYPE_LONG,
  deleteRetentionMs: CONFIG_TYPE_LONG,
  minCompactionLagMs: CONFIG_TYPE_LONG,
  maxMessageBytes: CONFIG_TYPE_INT,
  messageTimestampType: CONFIG_TYPE_STRING,
};

export const TOPIC_CONFIG_DOCS: Record<keyof TopicConfig, string> = {
  cleanupPolicy: 'delete, compact or compact,delete',
  retentionMs: 'how long to keep a log segment before deleting it; -1 = forever',
  retentionBytes: 'maximum size of a partition before old segments are deleted; -1 = unbounded',
  segmentBytes: 'segment file size',
  segmentMs: 'time after which a segment is rolled even if not full',
  deleteRetentionMs: 'how long tombstones are retained by compaction',
  minCompactionLagMs: 'minimum time a message stays uncompacted',
  maxMessageBytes: 'largest record batch size allowed',
  messageTimestampType: 'CreateTime or LogAppendTime',
};

const KEY_TO_NAME = Object.fromEntries(Object.entries(TOPIC_CONFIG_NAMES).map(([n, k]) => [k, n])) as Record<
  keyof TopicConfig,
  string
>;

export function configName(key: keyof TopicConfig): string {
  return KEY_TO_NAME[key];
}

function parseLong(name: string, value: string, min: number): number {
  if (!/^-?\d+$/.test(value.trim()))
    throw new InvalidConfigError(`Invalid value ${value} for configuration ${name}: Not a number`);
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min)
    throw new InvalidConfigError(`Invalid value ${value} for configuration ${name}`);
  return n;
}

/** Parses one Kafka topic config; returns null for accepted-but-ignored names. Throws InvalidConfigError. */
export function parseTopicConfigEntry(name: string, value: string | null): Partial<TopicConfig> | null {
  if (IGNORED_TOPIC_CONFIGS.has(name)) return null;
  const key = TOPIC_CONFIG_NAMES[name];
  if (!key) throw new InvalidConfigError(`Unknown topic config name: ${name}`);
  if (value === null) throw new InvalidConfigError(`Null value for configuration ${name}`);
  switch (key) {
    case 'cleanupPolicy': {
      const parts = [
        ...new Set(
          value
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        ),
      ].sort();
      const v = parts.join(',');
      if (v === 'delete' || v === 'compact') return { cleanupPolicy: v };
      if (v === 'compact,delete') return { cleanupPolicy: 'compact,delete' };
      throw new InvalidConfigError(`Invalid value ${value} for configuration cleanup.policy`);
    }
    case 'messageTimestampType':
      if (value !== 'CreateTime' && value !== 'LogAppendTime') {
        throw new InvalidConfigError(`Invalid value ${value} for configuration message.timestamp.type`);
      }
      return { messageTimestampType: value };
    case 'retentionMs':
    case 'retentionBytes':
      return { [key]: parseLong(name, value, -1) };
    case 'segmentBytes':
      return { segmentBytes: parseLong(name, value, 14) };
    case 'maxMessageBytes':
      return { maxMessageBytes: parseLong(name, value, 0) };
    case 'segmentMs':
      return { segmentMs: parseLong(name, value, 1) };
    default:
      return { [key]: parseLong(name, value, 0) };
  }
}

export function parseTopicConfigs(entries: { name: string; value: string | null }[]): Partial<TopicConfig> {
  const out: Partial<TopicConfig> = {};
  for (const e of entries) Object.assign(out, parseTopicConfigEntry(e.name, e.value) ?? {});
  return out;
}

export function configValueString(v: TopicConfig[keyof TopicConfig]): string {
  return String(v);
}
