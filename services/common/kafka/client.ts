// The platform's view of Kafka: what a producer and a consumer-group client do, independent of the client
// library. The kafkajs adapter (kafkajs/) implements both; nothing outside services/common/kafka/
// imports kafkajs.

// ------------------------------------------------------------------ producing

/** One record to produce. `partition` forces a partition; `keyHash` (murmur2.ts keyHash of the key) saves
 *  the partitioner hashing the key again. */
export interface ProducedRecord {
  topic: string;
  key?: Buffer | string | null;
  value: Buffer | string | null;
  partition?: number;
  keyHash?: number;
  headers?: Record<string, Buffer | string>;
  /** ms since the epoch, as a string (the record's timestamp; default: now) */
  timestamp?: string;
}

export interface SendOptions {
  /** how long Kafka may take to acknowledge (also the broker-side produce timeout) */
  timeoutMs?: number;
}

/** Sends records; the promise resolves once Kafka acknowledged every one of them (acks=all) and rejects
 *  when it did not. `ProduceQueue` (services/beacon/produce-queue.ts) is one in front of another. */
export interface ProducerClient {
  send(records: ProducedRecord[], opts?: SendOptions): Promise<void>;
  /** connect now (send connects when it has to; this warms the connection at start) */
  connect(): Promise<void>;
  /** send what is queued, then disconnect */
  close(): Promise<void>;
}

/** Where a send's records landed: per topic and partition, the offset of the first of them. */
export interface ProducedBatch {
  topic: string;
  partition: number;
  /** int64 offset as a decimal string */
  baseOffset: string;
}

/** A ProducerClient that also tells where the records landed (the store-config writer, the schema registry). */
export interface LocatingProducerClient extends ProducerClient {
  sendLocated(records: ProducedRecord[], opts?: SendOptions): Promise<ProducedBatch[]>;
}

// ------------------------------------------------------------------ consuming

export interface SourceMessage {
  /** int64 offset as a decimal string (kafkajs convention) */
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  /** broker timestamp, ms since the epoch, as a string */
  timestamp: string;
  headers: Record<string, Buffer | string | undefined>;
}

/** One fetched run of messages of one partition, in offset order. */
export interface SourceBatch {
  topic: string;
  partition: number;
  highWatermark: string;
  messages: SourceMessage[];
  /** advance the fetch position past `offset` (does not commit) */
  resolve(offset: string): void;
  /** commit `nextOffset` (the offset of the next message to read) for this partition */
  commit(nextOffset: string): Promise<void>;
  /** false once the consumer is stopping or the partition was revoked/sought: do not write more */
  isActive(): boolean;
  heartbeat(): Promise<void>;
}

/** how long a consumer's fetch after an empty one waits for the first message (ConsumerClientOptions.idleWaitMs) */
export const IDLE_FETCH_WAIT_MS = 1_000;

export interface ConsumerClientOptions {
  groupId: string;
  topics: string[];
  /** where a group without committed offsets starts */
  fromBeginning: boolean;
  /** broker-side linger: a fetch waits up to this long for `minBytes` */
  lingerMs: number;
  minBytes?: number;
  /**
   * after a fetch that found nothing, the next waits up to this long for any message (a long poll that
   * answers at the first append) instead of polling every `lingerMs`; unset = every fetch lingers
   */
  idleWaitMs?: number;
  maxBytesPerPartition?: number;
  sessionTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  /** `start`: partitions handled at the same time (default 1); `startFetches` hands over every batch of a
   *  fetch at once, and the handler decides */
  partitionsConsumedConcurrently?: number;
  /** move the fetch position past every message of a batch once the handler returned (default false:
   *  the handler calls `resolve`) */
  autoResolve?: boolean;
  /** the client stopped on an error; `restart` = it restarts itself */
  onCrash?: (err: Error, restart: boolean) => void;
}

/** A Kafka consumer-group client: batches per partition, offsets committed only when asked. */
export interface ConsumerClient {
  start(onBatch: (batch: SourceBatch) => Promise<void>): Promise<void>;
  /**
   * Like `start`, but the handler gets the non-empty partition batches of one fetch response together, in
   * one call (a fetch returns every assigned partition that has data). A batch whose siblings do not all
   * arrive within a moment (the consumer stopping, a partition revoked) is handed over with those that did.
   */
  startFetches(onFetch: (batches: SourceBatch[]) => Promise<void>): Promise<void>;
  stop(): Promise<void>;
  pause(): void;
  resume(): void;
  /** committed offsets of the group per partition (-1 = none) */
  committed(topic: string): Promise<Map<number, bigint>>;
  /** current high watermarks per partition */
  highWatermarks(topic: string): Promise<Map<number, bigint>>;
  /** current low and high watermarks per partition */
  watermarks(topic: string): Promise<Map<number, { low: bigint; high: bigint }>>;
}

export type ConsumerClientFactory = (opts: ConsumerClientOptions) => ConsumerClient;
