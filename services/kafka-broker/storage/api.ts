// The contract between the broker's protocol layer (handlers) and its storage layer (the log).
// The protocol layer only ever talks to storage through these types; the storage layer owns
// everything on disk (segments, indexes, producer state, retention, compaction).

export type CleanupPolicy = 'delete' | 'compact' | 'compact,delete';

export interface TopicConfig {
  cleanupPolicy: CleanupPolicy;
  /** -1 = keep forever */
  retentionMs: number;
  /** per partition; -1 = unbounded */
  retentionBytes: number;
  segmentBytes: number;
  segmentMs: number;
  /** how long tombstones survive compaction */
  deleteRetentionMs: number;
  minCompactionLagMs: number;
  maxMessageBytes: number;
  messageTimestampType: 'CreateTime' | 'LogAppendTime';
}

/** Kafka config names (as DescribeConfigs/CreateTopics use them) mapped to TopicConfig keys. */
export const TOPIC_CONFIG_NAMES: Record<string, keyof TopicConfig> = {
  'cleanup.policy': 'cleanupPolicy',
  'retention.ms': 'retentionMs',
  'retention.bytes': 'retentionBytes',
  'segment.bytes': 'segmentBytes',
  'segment.ms': 'segmentMs',
  'delete.retention.ms': 'deleteRetentionMs',
  'min.compaction.lag.ms': 'minCompactionLagMs',
  'max.message.bytes': 'maxMessageBytes',
  'message.timestamp.type': 'messageTimestampType',
};

export interface TopicInfo {
  name: string;
  /** 16-byte topic UUID (Metadata v10+ / Fetch v13+) */
  topicId: Buffer;
  partitions: number;
  config: TopicConfig;
  internal: boolean;
  /** (added by storage) the subset of `config` set explicitly on the topic; the rest are defaults.
   *  Lets DescribeConfigs report isDefault / configSource. */
  configOverrides?: Partial<TopicConfig>;
}

export interface AppendResult {
  /** Kafka error code: 0 NONE, 2 CORRUPT_MESSAGE, 10 MESSAGE_TOO_LARGE, 45 OUT_OF_ORDER_SEQUENCE_NUMBER,
   *  47 INVALID_PRODUCER_EPOCH, 59 UNKNOWN_PRODUCER_ID, 87 INVALID_RECORD. A retried idempotent batch
   *  (same producerId/epoch/sequence range as one already stored) returns 0 with its ORIGINAL baseOffset.
   *  Storage also uses 3 UNKNOWN_TOPIC_OR_PARTITION (partition deleted), 43 UNSUPPORTED_FOR_MESSAGE_FORMAT
   *  (magic 0/1) and 56 KAFKA_STORAGE_ERROR (write/fsync failure; the partition then stays offline). */
  errorCode: number;
  errorMessage?: string;
  baseOffset: bigint;
  /** -1n unless the topic uses LogAppendTime */
  logAppendTimeMs: bigint;
  logStartOffset: bigint;
}

export interface ReadResult {
  /** 0 NONE, 1 OFFSET_OUT_OF_RANGE (storage also answers 3 UNKNOWN_TOPIC_OR_PARTITION when the partition
   *  was deleted while a caller still held it) */
  errorCode: number;
  /** whole record batches exactly as stored (base offset assigned), in order; the first one contains
   *  fetchOffset (it may start before it: clients skip records below the offset they asked for). */
  chunks: Buffer[];
  bytes: number;
  highWatermark: bigint;
  logStartOffset: bigint;
}

export interface PartitionStore {
  readonly topic: string;
  readonly partition: number;
  /** `records` is the Produce request's `records` field: one or more v2 record batches.
   *  Validates framing and CRC-32C, assigns offsets, applies idempotent-producer sequence checks,
   *  and resolves only once the data is durable under the store's fsync policy.
   *  (storage note) base offsets are written into `records` in place: pass a buffer nobody else appends. */
  append(records: Buffer): Promise<AppendResult>;
  /** Reads whole batches starting at the batch that contains fetchOffset, up to maxBytes; at least one
   *  whole batch is returned even when it is larger than maxBytes (KIP-74). Memory use is bounded by
   *  maxBytes plus one batch. */
  read(fetchOffset: bigint, maxBytes: number): Promise<ReadResult>;
  /** next offset to be assigned (= high watermark on a single replica) */
  highWatermark(): bigint;
  logStartOffset(): bigint;
  /** first offset whose batch max timestamp >= ts, or null when none (ListOffsets by timestamp) */
  offsetForTimestamp(ts: bigint): Promise<{ offset: bigint; timestamp: bigint } | null>;
  /** DeleteRecords: advance the log start offset */
  deleteRecordsBefore(offset: bigint): Promise<bigint>;
  /** called after each successful append (used by fetch long polling); returns an unsubscribe fn */
  onAppend(listener: () => void): () => void;
}

export class TopicExistsError extends Error {}
export class UnknownTopicError extends Error {}
export class InvalidConfigError extends Error {}
// (added by storage) more specific failures of the admin operations:
/** illegal topic name → INVALID_TOPIC_EXCEPTION (17) */
export class InvalidTopicError extends Error {}
/** partition count <= 0, or createPartitions not increasing the count → INVALID_PARTITIONS (37) */
export class InvalidPartitionsError extends Error {}
/** deleteRecordsBefore beyond the high watermark → OFFSET_OUT_OF_RANGE (1) */
export class OffsetOutOfRangeError extends Error {}

export interface LogStoreOptions {
  dataDir: string;
  /** 'always' = fsync before acknowledging each append (default); a number = group commit every N ms */
  fsync: 'always' | number;
  defaultTopicConfig?: Partial<TopicConfig>;
  /** how often retention and compaction run; default 30 s */
  maintenanceIntervalMs?: number;
  /** (added by storage) idle idempotent producers are forgotten after this long; default 1 day (Kafka's
   *  producer.id.expiration.ms) */
  producerIdExpirationMs?: number;
  /** (added by storage) budget for the in-memory indexes of sealed segments; default 64 MiB */
  indexCacheBytes?: number;
  /** (added by storage) pino-compatible logger for recovery and maintenance events */
  logger?: {
    info(obj: object, msg?: string): void;
    warn(obj: object, msg?: string): void;
    error(obj: object, msg?: string): void;
  };
}

export interface LogStore {
  listTopics(): TopicInfo[];
  getTopic(name: string): TopicInfo | undefined;
  createTopic(name: string, partitions: number, config?: Partial<TopicConfig>, internal?: boolean): Promise<TopicInfo>;
  deleteTopic(name: string): Promise<void>;
  createPartitions(name: string, totalCount: number): Promise<void>;
  alterTopicConfig(name: string, config: Partial<TopicConfig>): Promise<TopicInfo>;
  partition(topic: string, partition: number): PartitionStore | undefined;
  /** run retention and compaction now (also runs on a timer) */
  runMaintenance(nowMs?: number): Promise<void>;
  close(): Promise<void>;
}
