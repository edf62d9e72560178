// Kafka record batch (magic v2) framing, validation and record codec.
//
// Batch layout (DefaultRecordBatch), all integers big-endian:
//   0  baseOffset            int64   } "log overhead": not covered by the CRC
//   8  batchLength           int32   } (bytes after this field)
//   12 partitionLeaderEpoch  int32     not covered by the CRC either
//   16 magic                 int8      (= 2)
//   17 crc                   uint32    CRC-32C of bytes [21, end)
//   21 attributes            int16     bits 0-2 compression, 3 timestampType, 4 transactional, 5 control
//   23 lastOffsetDelta       int32
//   27 baseTimestamp         int64
//   35 maxTimestamp          int64
//   43 producerId            int64
//   51 producerEpoch         int16
//   53 baseSequence          int32
//   57 recordCount           int32
//   61 records               (compressed as one blob when the compression bits are set)
//
// Record layout (inside `records`, after decompression):
//   length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
//   keyLength varint (-1 = null), key, valueLength varint (-1 = null), value,
//   headerCount varint, headers [keyLength varint, key (utf8), valueLength varint, value]
//
// The hot path (append) only looks at the 61-byte header and the CRC: it never touches records,
// except on compacted topics where every record must carry a key.

import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { crc32c } from '@node-rs/crc32';

export const LOG_OVERHEAD = 12;
export const BATCH_HEADER_SIZE = 61;

export const OFF_BASE_OFFSET = 0;
export const OFF_LENGTH = 8;
export const OFF_LEADER_EPOCH = 12;
export const OFF_MAGIC = 16;
export const OFF_CRC = 17;
export const OFF_ATTRIBUTES = 21;
export const OFF_LAST_OFFSET_DELTA = 23;
export const OFF_BASE_TIMESTAMP = 27;
export const OFF_MAX_TIMESTAMP = 35;
export const OFF_PRODUCER_ID = 43;
export const OFF_PRODUCER_EPOCH = 51;
export const OFF_BASE_SEQUENCE = 53;
export const OFF_RECORD_COUNT = 57;

export const COMPRESSION_MASK = 0x07;
export const TIMESTAMP_TYPE_MASK = 0x08;
export const TRANSACTIONAL_MASK = 0x10;
export const CONTROL_MASK = 0x20;

export const Compression = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const;
export type CompressionName = keyof typeof Compression;

/** Kafka error codes produced by validation. */
export const ErrorCode = {
  NONE: 0,
  OFFSET_OUT_OF_RANGE: 1,
  CORRUPT_MESSAGE: 2,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  MESSAGE_TOO_LARGE: 10,
  UNSUPPORTED_FOR_MESSAGE_FORMAT: 43,
  OUT_OF_ORDER_SEQUENCE_NUMBER: 45,
  INVALID_PRODUCER_EPOCH: 47,
  KAFKA_STORAGE_ERROR: 56,
  INVALID_RECORD: 87,
} as const;

export interface BatchHeader {
  baseOffset: bigint;
  /** total size of the batch in bytes, log overhead included */
  size: number;
  partitionLeaderEpoch: number;
  magic: number;
  crc: number;
  attributes: number;
  lastOffsetDelta: number;
  baseTimestamp: bigint;
  maxTimestamp: bigint;
  producerId: bigint;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
}

export function compressionOf(attributes: number): number {
  return attributes & COMPRESSION_MASK;
}

export function isControl(attributes: number): boolean {
  return (attributes & CONTROL_MASK) !== 0;
}

export function lastOffsetOf(h: BatchHeader): bigint {
  return h.baseOffset + BigInt(h.lastOffsetDelta);
}

/** Parses the fixed header at `pos`. The caller guarantees `pos + BATCH_HEADER_SIZE <= buf.length`. */
export function readBatchHeader(buf: Buffer, pos = 0): BatchHeader {
  return {
    baseOffset: buf.readBigInt64BE(pos + OFF_BASE_OFFSET),
    size: buf.readInt32BE(pos + OFF_LENGTH) + LOG_OVERHEAD,
    partitionLeaderEpoch: buf.readInt32BE(pos + OFF_LEADER_EPOCH),
    magic: buf.readInt8(pos + OFF_MAGIC),
    crc: buf.readUInt32BE(pos + OFF_CRC),
    attributes: buf.readInt16BE(pos + OFF_ATTRIBUTES),
    lastOffsetDelta: buf.readInt32BE(pos + OFF_LAST_OFFSET_DELTA),
    baseTimestamp: buf.readBigInt64BE(pos + OFF_BASE_TIMESTAMP),
    maxTimestamp: buf.readBigInt64BE(pos + OFF_MAX_TIMESTAMP),
    producerId: buf.readBigInt64BE(pos + OFF_PRODUCER_ID),
    producerEpoch: buf.readInt16BE(pos + OFF_PRODUCER_EPOCH),
    baseSequence: buf.readInt32BE(pos + OFF_BASE_SEQUENCE),
    recordCount: buf.readInt32BE(pos + OFF_RECORD_COUNT),
  };
}

/** CRC-32C as stored in the header: over attributes .. end of batch. */
export function computeBatchCrc(buf: Buffer, pos: number, size: number): number {
  return crc32c(buf.subarray(pos + OFF_ATTRIBUTES, pos + size)) >>> 0;
}

export type FramingProblem = { errorCode: number; message: string };

/**
 * Checks framing of the batch starting at `pos` (length, magic, header sanity) and optionally its CRC.
 * Returns the parsed header, or a problem. Used both for produce validation and log recovery.
 */
export function checkBatchAt(buf: Buffer, pos: number, verifyCrc: boolean): BatchHeader | FramingProblem {
  const remaining = buf.length - pos;
  if (remaining < LOG_OVERHEAD) return corrupt(`truncated batch: ${remaining} bytes left at ${pos}`);
  // magic sits at byte 16 in every message format version (v0/v1 message sets too)
  if (remaining > OFF_MAGIC) {
    const magic = buf.readInt8(pos + OFF_MAGIC);
    if (magic === 0 || magic === 1) {
      return {
        errorCode: ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
        message: `message format v${magic} is not supported (magic 2 only)`,
      };
    }
    if (magic !== 2) return corrupt(`invalid magic ${magic} at ${pos}`);
  }
  const batchLength = buf.readInt32BE(pos + OFF_LENGTH);
  if (batchLength < BATCH_HEADER_SIZE - LOG_OVERHEAD) return corrupt(`invalid batch length ${batchLength} at ${pos}`);
  if (batchLength + LOG_OVERHEAD > remaining) {
    return corrupt(`truncated batch at ${pos}: needs ${batchLength + LOG_OVERHEAD} bytes, ${remaining} left`);
  }
  const h = readBatchHeader(buf, pos);
  if (verifyCrc && computeBatchCrc(buf, pos, h.size) !== h.crc) return corrupt(`CRC mismatch in batch at ${pos}`);
  return h;
}

export function isProblem<T extends object>(x: T | FramingProblem): x is FramingProblem {
  return (x as FramingProblem).errorCode !== undefined;
}

function corrupt(message: string): FramingProblem {
  return { errorCode: ErrorCode.CORRUPT_MESSAGE, message };
}

export interface ProducedBatch {
  /** position inside the produce buffer */
  position: number;
  header: BatchHeader;
}

/**
 * Validates a Produce request's `records` field: one or more complete v2 batches, back to back, each with a
 * valid CRC, a sane offset range, and at most `maxMessageBytes` bytes. Checks only headers (plus CRC).
 */
export function validateProducedBatches(records: Buffer, maxMessageBytes: number): ProducedBatch[] | FramingProblem {
  const out: ProducedBatch[] = [];
  let pos = 0;
  if (records.length === 0) return corrupt('empty record set');
  while (pos < records.length) {
    const h = checkBatchAt(records, pos, true);
    if (isProblem(h)) return h;
    if (h.size > maxMessageBytes) {
      return {
        errorCode: ErrorCode.MESSAGE_TOO_LARGE,
        message: `batch of ${h.size} bytes exceeds max.message.bytes ${maxMessageBytes}`,
      };
    }
    const codec = compressionOf(h.attributes);
    if (codec > Compression.zstd) return corrupt(`unknown compression type ${codec}`);
    if (h.recordCount <= 0 || h.lastOffsetDelta + 1 !== h.recordCount) {
      return invalid(`inconsistent batch: recordCount ${h.recordCount}, lastOffsetDelta ${h.lastOffsetDelta}`);
    }
    if (isControl(h.attributes)) return invalid('clients may not produce control batches');
    if (h.producerId >= 0n && (h.baseSequence < 0 || h.producerEpoch < 0)) {
      return invalid(`idempotent batch (producerId ${h.producerId}) without sequence/epoch`);
    }
    out.push({ position: pos, header: h });
    pos += h.size;
  }
  return out;
}

function invalid(message: string): FramingProblem {
  return { errorCode: ErrorCode.INVALID_RECORD, message };
}

/** Rewrites the baseOffset field (not covered by the CRC). */
export function setBaseOffset(buf: Buffer, pos: number, baseOffset: bigint): void {
  buf.writeBigInt64BE(baseOffset, pos + OFF_BASE_OFFSET);
}

/** Marks a batch as LogAppendTime with the given broker time and recomputes its CRC. */
export function setLogAppendTime(buf: Buffer, pos: number, size: number, nowMs: bigint): void {
  const attrs = buf.readInt16BE(pos + OFF_ATTRIBUTES);
  buf.writeInt16BE(attrs | TIMESTAMP_TYPE_MASK, pos + OFF_ATTRIBUTES);
  buf.writeBigInt64BE(nowMs, pos + OFF_MAX_TIMESTAMP);
  buf.writeUInt32BE(computeBatchCrc(buf, pos, size), pos + OFF_CRC);
}

// ---------------------------------------------------------------------------------------------------------
// Varints (zigzag, as in protobuf / Kafka ByteUtils)

export class ByteReader {
  buf: Buffer;
  pos: number;
  constructor(buf: Buffer, pos = 0) {
    this.buf = buf;
    this.pos = pos;
  }

  varint(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (this.pos >= this.buf.length) throw new RangeError('varint runs past the end of the buffer');
      const b = this.buf[this.pos++];
      if (shift < 28) result |= (b & 0x7f) << shift;
      else if (shift === 28) result |= (b & 0x0f) << 28;
      else throw new RangeError('varint too long');
      if ((b & 0x80) === 0) break;
      shift += 7;
    }
    return (result >>> 1) ^ -(result & 1);
  }

  varlong(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) throw new RangeError('varlong runs past the end of the buffer');
      const b = this.buf[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) break;
      shift += 7n;
      if (shift > 63n) throw new RangeError('varlong too long');
    }
    return (result >> 1n) ^ -(result & 1n);
  }

  bytes(len: number): Buffer {
    if (len < 0 || this.pos + len > this.buf.length) throw new RangeError('field runs past the end of the buffer');
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }

  nullableBytes(): Buffer | null {
    const len = this.varint();
    if (len < -1) throw new RangeError(`invalid length ${len}`);
    return len === -1 ? null : this.bytes(len);
  }
}

export function encodeVarint(value: number, out: number[]): void {
  let v = ((value << 1) ^ (value >> 31)) >>> 0;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
}

export function encodeVarlong(value: bigint, out: number[]): void {
  let v = BigInt.asUintN(64, (value << 1n) ^ (value >> 63n));
  while (v > 0x7fn) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
}

// ---------------------------------------------------------------------------------------------------------
// Records

export interface RecordHeader {
  key: string;
  value: Buffer | null;
}

export interface DecodedRecord {
  offsetDelta: number;
  timestampDelta: bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeader[];
  /** the record's complete encoding (length prefix included), for re-batching without re-encoding */
  raw: Buffer;
}

export class UnsupportedCompressionError extends Error {}

const gunzip = promisify(zlib.gunzip);
const gzip = promisify(zlib.gzip);
const zstdDecompress = promisify(zlib.zstdDecompress);
const zstdCompress = promisify(zlib.zstdCompress);

/** Decompressed `records` section of a batch. Snappy and LZ4 are not decoded (stored as sent). */
export async function recordsSection(batch: Buffer, h: BatchHeader): Promise<Buffer> {
  const body = batch.subarray(BATCH_HEADER_SIZE, h.size);
  switch (compressionOf(h.attributes)) {
    case Compression.none:
      return body;
    case Compression.gzip:
      return gunzip(body);
    case Compression.zstd:
      return zstdDecompress(body);
    default:
      throw new UnsupportedCompressionError(
        `compression codec ${compressionOf(h.attributes)} is not decoded by the broker`,
      );
  }
}

/** Can the broker look inside batches with these attributes? (none, gzip, zstd: yes; snappy, lz4: no) */
export function canDecode(attributes: number): boolean {
  const c = compressionOf(attributes);
  return c === Compression.none || c === Compression.gzip || c === Compression.zstd;
}

/** Decodes `count` records from an uncompressed records section. Throws RangeError on malformed data. */
export function decodeRecordsSection(section: Buffer, count: number): DecodedRecord[] {
  const out: DecodedRecord[] = new Array(count);
  const r = new ByteReader(section);
  for (let i = 0; i < count; i++) {
    const start = r.pos;
    const len = r.varint();
    if (len < 0 || r.pos + len > section.length) throw new RangeError(`record ${i} overruns the batch`);
    const end = r.pos + len;
    r.pos += 1; // record attributes (unused)
    const timestampDelta = r.varlong();
    const offsetDelta = r.varint();
    const key = r.nullableBytes();
    const value = r.nullableBytes();
    const headerCount = r.varint();
    const headers: RecordHeader[] = [];
    for (let j = 0; j < headerCount; j++) {
      const hk = r.nullableBytes();
      headers.push({ key: hk ? hk.toString('utf8') : '', value: r.nullableBytes() });
    }
    if (r.pos !== end) throw new RangeError(`record ${i} length mismatch`);
    out[i] = { offsetDelta, timestampDelta, key, value, headers, raw: section.subarray(start, end) };
  }
  if (r.pos !== section.length) throw new RangeError('trailing bytes after the last record');
  return out;
}

/** Decodes all records of a whole batch (decompressing gzip/zstd). */
export async function decodeBatchRecords(batch: Buffer): Promise<{ header: BatchHeader; records: DecodedRecord[] }> {
  const header = readBatchHeader(batch, 0);
  const section = await recordsSection(batch, header);
  return { header, records: decodeRecordsSection(section, header.recordCount) };
}

/**
 * Checks that every record of an uncompressed records section has a non-null key (compacted topics).
 * Walks the record framing only; returns an error message or null.
 */
export function findNullKey(section: Buffer, count: number): string | null {
  const r = new ByteReader(section);
  try {
    for (let i = 0; i < count; i++) {
      const len = r.varint();
      const end = r.pos + len;
      if (len < 0 || end > section.length) return `record ${i} overruns the batch`;
      r.pos += 1;
      r.varlong();
      r.varint();
      if (r.varint() < 0) return 'compacted topics require a non-null key on every record';
      r.pos = end;
    }
  } catch (err) {
    return `malformed record: ${(err as Error).message}`;
  }
  return null;
}

async function compress(codec: number, data: Buffer): Promise<Buffer> {
  switch (codec) {
    case Compression.none:
      return data;
    case Compression.gzip:
      return gzip(data);
    case Compression.zstd:
      return zstdCompress(data);
    default:
      throw new UnsupportedCompressionError(`cannot compress with codec ${codec}`);
  }
}

/**
 * Builds a batch from an existing batch's header and a subset of its records' raw encodings (compaction).
 * Keeps baseOffset, lastOffsetDelta, timestamps, producer fields and compression; records keep their
 * original offset deltas, so offsets are preserved and the batch's offset range still ends where it did.
 */
export async function rebuildBatch(original: Buffer, rawRecords: Buffer[]): Promise<Buffer> {
  const h = readBatchHeader(original, 0);
  const body = await compress(compressionOf(h.attributes), Buffer.concat(rawRecords));
  const out = Buffer.allocUnsafe(BATCH_HEADER_SIZE + body.length);
  original.copy(out, 0, 0, BATCH_HEADER_SIZE);
  body.copy(out, BATCH_HEADER_SIZE);
  out.writeInt32BE(out.length - LOG_OVERHEAD, OFF_LENGTH);
  out.writeInt32BE(rawRecords.length, OFF_RECORD_COUNT);
  out.writeUInt32BE(computeBatchCrc(out, 0, out.length), OFF_CRC);
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Encoder (used by tests, benchmarks and broker-internal writers such as the group coordinator)

export interface RecordInput {
  key?: Buffer | string | null;
  value?: Buffer | string | null;
  headers?: { key: string; value: Buffer | string | null }[];
  /** absolute timestamp; defaults to the batch's baseTimestamp */
  timestamp?: bigint | number;
}

export interface EncodeBatchOptions {
  baseOffset?: bigint;
  baseTimestamp?: bigint | number;
  producerId?: bigint;
  producerEpoch?: number;
  baseSequence?: number;
  compression?: CompressionName;
  partitionLeaderEpoch?: number;
  transactional?: boolean;
}

function toBuf(v: Buffer | string | null | undefined): Buffer | null {
  if (v === null || v === undefined) return null;
  return typeof v === 'string' ? Buffer.from(v) : v;
}

function pushBytes(out: number[], b: Buffer | null): void {
  if (b === null) {
    encodeVarint(-1, out);
    return;
  }
  encodeVarint(b.length, out);
  for (let i = 0; i < b.length; i++) out.push(b[i]);
}

/** Encodes one record (length prefix included). */
export function encodeRecord(rec: RecordInput, offsetDelta: number, baseTimestamp: bigint): Buffer {
  const body: number[] = [0];
  const ts = rec.timestamp === undefined ? baseTimestamp : BigInt(rec.timestamp);
  encodeVarlong(ts - baseTimestamp, body);
  encodeVarint(offsetDelta, body);
  pushBytes(body, toBuf(rec.key));
  pushBytes(body, toBuf(rec.value));
  const headers = rec.headers ?? [];
  encodeVarint(headers.length, body);
  for (const h of headers) {
    pushBytes(body, Buffer.from(h.key));
    pushBytes(body, toBuf(h.value));
  }
  const prefix: number[] = [];
  encodeVarint(body.length, prefix);
  return Buffer.from([...prefix, ...body]);
}

/** Encodes a v2 record batch (none/gzip/zstd). Records get consecutive offset deltas. */
export async function encodeRecordBatch(records: RecordInput[], opts: EncodeBatchOptions = {}): Promise<Buffer> {
  if (records.length === 0) throw new RangeError('a record batch needs at least one record');
  const baseTimestamp = BigInt(opts.baseTimestamp ?? Date.now());
  let maxTimestamp = baseTimestamp;
  const raw = records.map((r, i) => {
    if (r.timestamp !== undefined && BigInt(r.timestamp) > maxTimestamp) maxTimestamp = BigInt(r.timestamp);
    return encodeRecord(r, i, baseTimestamp);
  });
  const codec = Compression[opts.compression ?? 'none'];
  const body = await compress(codec, Buffer.concat(raw));
  const out = Buffer.alloc(BATCH_HEADER_SIZE + body.length);
  out.writeBigInt64BE(opts.baseOffset ?? 0n, OFF_BASE_OFFSET);
  out.writeInt32BE(out.length - LOG_OVERHEAD, OFF_LENGTH);
  out.writeInt32BE(opts.partitionLeaderEpoch ?? -1, OFF_LEADER_EPOCH);
  out.writeInt8(2, OFF_MAGIC);
  out.writeInt16BE(codec | (opts.transactional ? TRANSACTIONAL_MASK : 0), OFF_ATTRIBUTES);
  out.writeInt32BE(records.length - 1, OFF_LAST_OFFSET_DELTA);
  out.writeBigInt64BE(baseTimestamp, OFF_BASE_TIMESTAMP);
  out.writeBigInt64BE(maxTimestamp, OFF_MAX_TIMESTAMP);
  out.writeBigInt64BE(opts.producerId ?? -1n, OFF_PRODUCER_ID);
  out.writeInt16BE(
    opts.producerEpoch ?? (opts.producerId !== undefined && opts.producerId >= 0n ? 0 : -1),
    OFF_PRODUCER_EPOCH,
  );
  out.writeInt32BE(opts.baseSequence ?? -1, OFF_BASE_SEQUENCE);
  out.writeInt32BE(records.length, OFF_RECORD_COUNT);
  body.copy(out, BATCH_HEADER_SIZE);
  out.writeUInt32BE(computeBatchCrc(out, 0, out.length), OFF_CRC);
  return out;
}

/** Splits a buffer of whole batches (e.g. ReadResult chunks) into batch slices. Stops at a partial batch. */
export function splitBatches(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let pos = 0;
  while (pos + LOG_OVERHEAD <= buf.length) {
    const size = buf.readInt32BE(pos + OFF_LENGTH) + LOG_OVERHEAD;
    if (size < BATCH_HEADER_SIZE || pos + size > buf.length) break;
    out.push(buf.subarray(pos, pos + size));
    pos += size;
  }
  return out;
}
