// kafkajs wiring shared by every producer and consumer: one place maps kafkajs logs to pino and sets the
// delivery defaults (idempotent producer, acks=all).
import './kafkajs-grouping.ts'; // before kafkajs loads
import { createRequire } from 'node:module';
import { crc32c } from '@node-rs/crc32';
import { Kafka, type KafkaConfig, logLevel, type Producer, type ProducerConfig } from 'kafkajs';
import { fastRecordBatch, fastRecordDecoder, fastRecordEncoder, type RecordBatchInput, type RecordInput } from './kafkajs-record.ts';
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
  require.cache[id] = { id, filename: id, loaded: true, exports: nativeCrc32c, children: [], paths: [] } as unknown as NodeJS.Module;
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
  const batch = require('kafkajs/src/protocol/recordBatch/v0/index.js') as { RecordBatch: (input: RecordBatchInput) => Promise<unknown> };
  batch.RecordBatch = fastRecordBatch(batch.RecordBatch);
}
let fastRecordTried = false;

/** Whether kafkajs' produce request encodes records and batches with kafkajs-record.ts (see useFastRecordEncoder). */
export function kafkajsRecordEncoderIsFast(): boolean {
  const record = require.cache[require.resolve('kafkajs/src/protocol/recordBatch/record/v0/index.js')]?.exports as { fastRecordEncoder?: true } | undefined;
  const batch = require.cache[require.resolve('kafkajs/src/protocol/recordBatch/v0/index.js')]?.exports as { RecordBatch?: { fastRecordBatch?: true } } | undefined;
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
  const header = require('kafkajs/src/protocol/recordBatch/header/v0/decoder.js') as Parameters<typeof fastRecordDecoder>[1];
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
 * kafkajs 2.2.4 arms its request-queue timer with a negative delay when nothing is throttled, which Node
 * ≥ 24 reports as a TimeoutNegativeWarning on every client (the timer fires after 1 ms, as kafkajs
 * expects). Drop exactly that warning; every other warning still reaches Node's default handlers.
 */
function muteKafkajsTimerWarning(): void {
  if (kafkajsTimerWarningMuted) return;
  kafkajsTimerWarningMuted = true;
  const handlers = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (w) => {
    if (w.name === 'TimeoutNegativeWarning') return;
    for (const h of handlers) h(w);
  });
}
let kafkajsTimerWarningMuted = false;

export function createKafka(brokers: string[], clientId: string, logger: Logger, extra: Partial<KafkaConfig> = {}): Kafka {
  muteKafkajsTimerWarning();
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
    logCreator: () => ({ namespace, level, log }) => {
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
