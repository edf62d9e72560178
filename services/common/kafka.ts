// kafkajs wiring shared by every producer and consumer: one place maps kafkajs logs to pino and sets the
// delivery defaults (idempotent producer, acks=all).
import './kafkajs-grouping.ts'; // before kafkajs loads
import { createRequire } from 'node:module';
import { crc32c } from '@node-rs/crc32';
import { Kafka, type KafkaConfig, logLevel, type Producer, type ProducerConfig } from 'kafkajs';
import {
  fastRecordBatch,
  fastRecordDecoder,
  fastRecordEncoder,
  type RecordBatchInput,
  type RecordInput,
} from './kafkajs-record.ts';
import type { Logger } from './logger.ts';

const require = createRequire(import.meta.url);

/**
 * kafkajs computes the record-batch CRC-32C of every produce request in JavaScript (a table loop over every
 * byte: ≈ 6 % of an intake worker's time). kafkajs 2.2.4 loads its record-batch encoder lazily and takes
 * the checksum function from `protocol/recordBatch/crc32C`; registering the native implementation
 * (@node-rs/crc32, the one the broker verifies with) under that module id before the first produce swaps it
 * in. Same function, same values: the broker rejects a batch whose CRC does not match, so every produce in
 * the test suite checks it. If kafkajs already loaded the encoder, or its layout changed, nothing is
 * swapped and the JavaScript CRC stays.
 */
function useNativeCrc32c(): void {
  if (nativeCrc32cTried) return;
  nativeCrc32cTried = true;
  let id: string;
  try {
    id = require.resolve('kafkajs/src/protocol/recordBatch/crc32C/index.js');
  } catch {
    return;
  }
  if (require.cache[id]) return;
  const encoder = require.resolve('kafkajs/src/protocol/recordBatch/v0/index.js');
  if (require.cache[encoder]) return;
  require.cache[id] = {
    id,
    filename: id,
    loaded: true,
    exports: nativeCrc32c,
    children: [],
    paths: [],
  } as unknown as NodeJS.Module;
}
let nativeCrc32cTried = false;

/** Whether kafkajs' record-batch encoder computes its CRC-32C natively (see useNativeCrc32c). */
export function kafkajsCrc32cIsNative(): boolean {
  const id = require.resolve('kafkajs/src/protocol/recordBatch/crc32C/index.js');
  return require.cache[id]?.exports === nativeCrc32c;
}
const nativeCrc32c = (buffer: Buffer): number => crc32c(buffer) >>> 0;

/**
 * kafkajs encodes every produced record through a fresh zero-filled Encoder, a Buffer per varint and Long
 * arithmetic, and copies each batch three times (kafkajs-record.ts); the produce request (v3) takes its
 * encoders from `protocol/recordBatch/record/v0` and `protocol/recordBatch/v0`, loaded lazily on the first
 * produce. Replacing them before then puts the exact-size encoders in front (kafkajs' own ones still handle
 * the inputs the fast ones leave). Same bytes: tested against kafkajs' encoders, and the broker verifies
 * every batch's CRC.
 */
function useFastRecordEncoder(): void {
  if (fastRecordTried) return;
  fastRecordTried = true;
  let id: string;
  let produce: string;
  try {
    id = require.resolve('kafkajs/src/protocol/recordBatch/record/v0/index.js');
    produce = require.resolve('kafkajs/src/protocol/requests/produce/v3/request.js');
  } catch {
    return;
  }
  if (require.cache[produce]) return;
  const original = require(id) as (input: RecordInput) => unknown;
  const cached = require.cache[id];
  if (cached) cached.exports = fastRecordEncoder(original);
  // the batch module's exports object is shared with the fetch decoder (MAGIC_BYTE): replace the one function
  const batch = require('kafkajs/src/protocol/recordBatch/v0/index.js') as {
    RecordBatch: (input: RecordBatchInput) => Promise<unknown>;
  };
  batch.RecordBatch = fastRecordBatch(batch.RecordBatch);
}
let fastRecordTried = false;

/** Whether kafkajs' produce request encodes records and batches with kafkajs-record.ts (see useFastRecordEncoder). */
export function kafkajsRecordEncoderIsFast(): boolean {
  const record = require.cache[require.resolve('kafkajs/src/protocol/recordBatch/record/v0/index.js')]?.exports as
    | { fastRecordEncoder?: true }
    | undefined;
  const batch = require.cache[require.resolve('kafkajs/src/protocol/recordBatch/v0/index.js')]?.exports as
    | { RecordBatch?: { fastRecordBatch?: true } }
    | undefined;
  return record?.fastRecordEncoder === true && batch?.RecordBatch?.fastRecordBatch === true;
}

/**
 * On the consuming side kafkajs decodes every fetched record with 64-bit `Long` arithmetic (kafkajs-record.ts,
 * fastRecordDecoder); its record-batch decoder takes the record decoder from `protocol/recordBatch/record/v0/decoder`
 * when it first loads (on the first fetch). Replaced before then, like the encoders; same results, tested
 * against kafkajs' decoder.
 */
function useFastRecordDecoder(): void {
  if (fastDecoderTried) return;
  fastDecoderTried = true;
  let id: string;
  let batchDecoder: string;
  try {
    id = require.resolve('kafkajs/src/protocol/recordBatch/record/v0/decoder.js');
    batchDecoder = require.resolve('kafkajs/src/protocol/recordBatch/v0/decoder.js');
  } catch {
    return;
  }
  if (require.cache[batchDecoder]) return;
  const original = require(id) as Parameters<typeof fastRecordDecoder>[0];
  const header = require('kafkajs/src/protocol/recordBatch/header/v0/decoder.js') as Parameters<
    typeof fastRecordDecoder
  >[1];
  const cached = require.cache[id];
  if (cached) cached.exports = fastRecordDecoder(original, header);
}
let fastDecoderTried = false;

/** Whether kafkajs' fetch responses decode records with kafkajs-record.ts (see useFastRecordDecoder). */
export function kafkajsRecordDecoderIsFast(): boolean {
  const id = require.resolve('kafkajs/src/protocol/recordBatch/record/v0/decoder.js');
  return (require.cache[id]?.exports as { fastRecordDecoder?: true } | undefined)?.fastRecordDecoder === true;
}

/**
 * kafkajs 2.2.4's request queue re-arms its pending-requests check after every check, even with nothing
 * pending and no throttling, and then with a negative delay that Node turns into 1 ms: every broker
 * connection of every client polls a thousand times a second for as long as it is open (kafkajs issues
 * #1556, #1704, #1751; Node ≥ 24 also warns about the negative delay). In this app that is dozens of
 * connections (producers, each processor's consumer, admin, the workers' producers) waking the event loop
 * and the kernel tens of thousands of times a second. The check is scheduled here only when a request is
 * pending (after the throttle, or kafkajs' 10 ms interval) or while the broker throttles; otherwise
 * nothing is armed, and kafkajs still checks the queue when a request is pushed and whenever an in-flight
 * request completes. A prototype method swap, so it holds for every connection of the process.
 */
const CHECK_PENDING_REQUESTS_INTERVAL = 10;
interface RequestQueueLike {
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  pending: unknown[];
  checkPendingRequests(): void;
}
function scheduleCheckPendingRequests(this: RequestQueueLike): void {
  if (this.throttleCheckTimeoutId) return;
  let scheduleAt = this.throttledUntil - Date.now();
  if (this.pending.length > 0) scheduleAt = scheduleAt > 0 ? scheduleAt : CHECK_PENDING_REQUESTS_INTERVAL;
  else if (scheduleAt <= 0) return;
  this.throttleCheckTimeoutId = setTimeout(() => {
    this.throttleCheckTimeoutId = null;
    this.checkPendingRequests();
  }, scheduleAt);
}

function stopIdlePolling(): void {
  if (idlePollingStopped) return;
  idlePollingStopped = true;
  try {
    const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as {
      prototype: { scheduleCheckPendingRequests: unknown };
    };
    RequestQueue.prototype.scheduleCheckPendingRequests = scheduleCheckPendingRequests;
  } catch {
    // kafkajs moved the module: its own scheduling stays
  }
}
let idlePollingStopped = false;

/** Whether kafkajs' request queues schedule their checks with the function above (see stopIdlePolling). */
export function kafkajsIdlePollingStopped(): boolean {
  const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as {
    prototype: { scheduleCheckPendingRequests: unknown };
  };
  return RequestQueue.prototype.scheduleCheckPendingRequests === scheduleCheckPendingRequests;
}

export function createKafka(
  brokers: string[],
  clientId: string,
  logger: Logger,
  extra: Partial<KafkaConfig> = {},
): Kafka {
  stopIdlePolling();
  useNativeCrc32c();
  useFastRecordEncoder();
  useFastRecordDecoder();
  return new Kafka({
    clientId,
    brokers,
    connectionTimeout: 3_000,
    requestTimeout: 30_000,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2_000 },
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ namespace, level, log }) => {
        const { message, ...rest } = log;
        const fields = { kafkajs: namespace, ...rest };
        if (level <= logLevel.ERROR) logger.error(fields, message);
        else if (level === logLevel.WARN) logger.warn(fields, message);
        else logger.debug(fields, message);
      },
    ...extra,
  });
}

/** An idempotent producer: acks=all is forced by kafkajs when idempotent is set. */
export function createIdempotentProducer(kafka: Kafka, extra: Partial<ProducerConfig> = {}): Producer {
  return kafka.producer({ idempotent: true, maxInFlightRequests: 5, allowAutoTopicCreation: false, ...extra });
}
