// The contracts of the stream-processing runtime.
//
// A processor is a small strategy (parse → transform → rows per table); the runtime owns everything
// that must be done once and right: fetching per partition, Avro decoding through the registry, the
// DLQ, event-id deduplication, deterministic batch boundaries, ClickHouse inserts with
// insert_deduplication_token, committing offsets only after the write, metrics. The Kafka client sits
// behind `ConsumerClient` (services/common/kafka/) so another client library can be swapped in.
import type { Redis } from 'ioredis';
import type { Db } from '../../clickhouse/client.ts';
import type { Logger } from '../../services/common/logger.ts';
import type { TopicKey } from '../../schemas/topics.ts';
import type { ProcessorLedger } from './claims.ts';
import type { LedgerEntry, LedgerLookup } from './ledger.ts';
import type { ConsumerClient, ConsumerClientOptions } from '../../services/common/kafka/client.ts';

// ------------------------------------------------------------------ the Kafka side

// the consumer-group client and its batches are the Kafka access layer's (services/common/kafka/client.ts)
export type {
  ConsumerClient,
  ConsumerClientOptions,
  SourceBatch,
  SourceMessage,
} from '../../services/common/kafka/client.ts';

// ------------------------------------------------------------------ the processor side

export interface Position {
  topic: string;
  partition: number;
  offset: bigint;
}

export interface Decoded<T> {
  value: T;
  position: Position;
  /** broker timestamp, ms (for a tombstone: the time the producer gave the delete) */
  brokerTime: number;
  /** true when the message was a tombstone (no value) turned into `value` by `parseTombstone` */
  tombstone?: boolean;
}

/** Rows for one table, in the order they are written. */
export interface TableWrite {
  /** logical table name (the runtime maps it to the live or shadow physical table) */
  table: string;
  rows: object[];
}

export interface ProcessContext {
  db: Db;
  redis: Redis;
  logger: Logger;
  /** logical → physical table name (`x` or `x__shadow` during a replay) */
  table(name: string): string;
  /** Redis key namespace for processor state (differs between live and each replay) */
  stateKey(...parts: (string | number)[]): string;
  /** true during a replay into shadow tables (no side effects such as notifications) */
  replay: boolean;
  /**
   * a break for the event loop once this processor's synchronous work has run for a time slice
   * (runtime/util.ts timeSlicer), else undefined: `const b = ctx.slice(); if (b) await b;` inside long loops
   */
  slice(): Promise<void> | undefined;
  /**
   * For keyed state Redis has no record of (lost in a FLUSHALL, a fresh instance, an eviction — or a new
   * id): the processor's `ledger` rows of these ids at their latest log position before this chunk, keyed
   * `<store_id>:<id>`; ids never applied are absent. One query per call. Set by the runtime for every
   * chunk of a processor with a `ledger` (runtime/ledger.ts); absent otherwise.
   */
  ledgerRows?(items: LedgerLookup[]): Promise<Map<string, LedgerEntry>>;
}

export interface ProcessResult {
  writes: TableWrite[];
  /** runs after every write returned and before the offsets are committed (state saves, notifications) */
  afterWrite?: () => Promise<void>;
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; reason: string };

/** A table a replay rebuilds: written directly, or filled by a materialized view from another one. */
export interface ProcessorTables {
  /** tables the processor inserts into */
  written: string[];
  /** materialized views fed by a written table: the view and its target table */
  views: { view: string; target: string }[];
  /** per table (written and view targets): how replay compares live and shadow per store and day */
  compare: Record<string, CompareSpec>;
}

export interface CompareSpec {
  /** the time column whose UTC day groups the comparison */
  day: string;
  /** the aggregate compared (e.g. `count()`, `sum(sessions)`) */
  measure: string;
  /** read the table with FINAL (ReplacingMergeTree: compare the merged latest state, whatever parts
   *  the background merges have or have not collapsed yet). `*_raw` tables are always read so. */
  final?: boolean;
}

export interface Processor<T> {
  name: string;
  topic: TopicKey;
  tables: ProcessorTables;
  /**
   * How long the broker may hold a live fetch for more data: `fresh` (default) waits STREAMS_LINGER_MS,
   * `batched` STREAMS_BATCHED_LINGER_MS — for a high-rate topic whose rows cost one ClickHouse insert per
   * chunk and whose readers can wait a little longer (request events: every read API request is one).
   */
  fetch?: 'fresh' | 'batched';
  /** validate a decoded Avro value (zod); a failure sends the message to the DLQ with the reason */
  parse(value: unknown): ParseResult<T>;
  /**
   * Turn a tombstone (a message without a value: null or zero bytes, i.e. a delete on a compacted
   * topic) into a value from its record key. A failure sends the message to the DLQ with the reason.
   * Without this hook every tombstone goes to the DLQ (`empty: message has no value`).
   */
  parseTombstone?(key: Buffer | null): ParseResult<T>;
  /** key for duplicate suppression (event_id, order_id…); undefined = never a duplicate. Never asked
   *  for tombstones: a delete is not a repeat of its key's upsert, and applying it twice is harmless */
  dedupKey?(value: T): string | undefined;
  /**
   * hours a claim of `dedupKey` must outlive its first write when that is shorter than
   * STREAMS_DEDUP_HORIZON_HOURS: ids made by our own services, which repeat only through a producer's
   * retries within seconds, not through a client resending hours later. Each claim holds Redis memory
   * for 1–1.5× the horizon, one per message. Default: STREAMS_DEDUP_HORIZON_HOURS.
   */
  dedupHorizonHours?: number;
  /** where the ids of `dedupKey` (or of the processor's keyed state) are stored with their log position;
   *  consulted only where Redis lost what it knew: its dedup claims (streams/runtime/claims.ts), so a
   *  client retry still counts once, and keyed state it has no record of (`ctx.ledgerRows`) */
  ledger?: ProcessorLedger;
  /** turn one chunk (duplicates removed) into rows; a chunk may hold several partitions' messages, each
   *  in its partition's order (`position`), so per-key state must follow each message's own partition */
  process(batch: Decoded<T>[], ctx: ProcessContext): Promise<ProcessResult>;
}

/** A value that can never be decoded (bad framing, bad Avro, unknown schema id): goes to the DLQ.
 *  Any other decoder error (registry unreachable, 5xx) is transient: the chunk is retried instead. */
export class UndecodableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UndecodableError';
  }
}

/** Decodes a Kafka value (Confluent framing + Avro via the registry) into the topic's reader schema. */
export interface ValueDecoder {
  /** the value at once when the writer schema is known, else a promise of it (a registry look-up);
   *  a failure is thrown or rejected (UndecodableError: poison; anything else: transient) */
  decode(buf: Buffer, topic: string): unknown;
}

export interface RuntimeDeps {
  db: Db;
  redis: Redis;
  logger: Logger;
  decoder: ValueDecoder;
  /** physical topic name for a topic key */
  topicName(key: TopicKey): string;
  createClient(opts: ConsumerClientOptions): ConsumerClient;
  /** produces DLQ records (idempotent producer) */
  dlq: DlqSink;
}

export interface DlqRecord {
  topic: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, string>;
}

export interface DlqSink {
  send(records: DlqRecord[]): Promise<void>;
}
