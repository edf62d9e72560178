// A drop-in for kafkajs' record encoder (kafkajs/src/protocol/recordBatch/record/v0), byte for byte the
// same output. kafkajs builds every record through a fresh `Encoder` (a zero-filled 512-byte buffer, grown
// by copying for larger values), allocates a `Buffer` per varint and does 64-bit `Long` arithmetic for the
// timestamp delta: in a beacon worker that is most of kafkajs' share of the time per event. This one
// measures the record first and writes it once into a buffer of exactly its size.
//
// Record (v0, inside a RecordBatch v2):
//   Length => varint   Attributes => int8   TimestampDelta => varlong   OffsetDelta => varint
//   Key => varint-length bytes (-1 = null)   Value => varint-length bytes (-1 = null)
//   Headers => varint count, then per header: key varint-length string, value varint-length bytes
//
// The record batch around them (kafkajs/src/protocol/recordBatch/v0, uncompressed) likewise: kafkajs
// writes the batch body into a growing Encoder, copies it into a second one for the CRC header and into a
// third for the offset and length; `fastRecordBatch` writes the whole batch once into a buffer of its size.
//
// Inputs kafkajs itself treats oddly (keys or values that are neither strings nor Buffers, header values
// that are not strings or Buffers, a non-integer or huge timestamp delta, an offset delta outside int32)
// are left to kafkajs' own encoder: `encodeRecord` returns undefined for them.

import { createRequire } from 'node:module';
import { crc32c } from '@node-rs/crc32';

const require = createRequire(import.meta.url);

/** what kafkajs' record encoder returns, as far as its RecordBatch reads it (`buf` and `buffer`) */
export interface EncodedRecord {
  buf: Buffer;
  buffer: Buffer;
}

export interface RecordInput {
  offsetDelta?: number;
  timestampDelta?: number;
  key?: unknown;
  value?: unknown;
  headers?: Record<string, unknown>;
}

type Bytes = string | Buffer | null | undefined;

const isBytes = (v: unknown): v is Bytes =>
  v === null || v === undefined || typeof v === 'string' || Buffer.isBuffer(v);

/** bytes of an unsigned varint of a non-negative integer below 2^53 */
function sizeOfUnsigned(n: number): number {
  let bytes = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    bytes++;
  }
  return bytes;
}

/** zig-zag of a 32-bit integer, as an unsigned number */
const zigZag32 = (v: number) => ((v << 1) ^ (v >> 31)) >>> 0;
/** zig-zag of a safe integer of at most 52 bits of magnitude (exact in a double) */
const zigZag64 = (v: number) => (v >= 0 ? v * 2 : -v * 2 - 1);

function writeUnsigned(buf: Buffer, at: number, n: number): number {
  while (n >= 128) {
    buf[at++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[at++] = n;
  return at;
}

const byteLength = (v: string | Buffer) => (typeof v === 'string' ? Buffer.byteLength(v, 'utf8') : v.length);
const sizeOfBytes = (v: Bytes, len: number) =>
  v === null || v === undefined ? 1 : sizeOfUnsigned(zigZag32(len)) + len;

function writeBytes(buf: Buffer, at: number, v: Bytes, len: number): number {
  if (v === null || v === undefined) {
    buf[at] = 1; // zig-zag(-1)
    return at + 1;
  }
  at = writeUnsigned(buf, at, zigZag32(len));
  if (typeof v === 'string') buf.write(v, at, len, 'utf8');
  else v.copy(buf, at);
  return at + len;
}

const MAX_DELTA = 2 ** 51;

/** kafkajs' Record(...) output for the inputs it encodes plainly; undefined for the rest (see above) */
export function encodeRecord({
  offsetDelta = 0,
  timestampDelta = 0,
  key,
  value,
  headers = {},
}: RecordInput): EncodedRecord | undefined {
  if (!isBytes(key) || !isBytes(value)) return undefined;
  if (!Number.isSafeInteger(timestampDelta) || Math.abs(timestampDelta) > MAX_DELTA) return undefined;
  if (!Number.isInteger(offsetDelta) || offsetDelta !== (offsetDelta | 0)) return undefined;
  // headers in kafkajs' order: object keys, an array value expanding into one header per element
  const hk: string[] = [];
  const hv: (string | Buffer)[] = [];
  for (const k of Object.keys(headers)) {
    const v = headers[k];
    for (const one of Array.isArray(v) ? v : [v]) {
      if (typeof one !== 'string' && !Buffer.isBuffer(one)) return undefined;
      hk.push(k);
      hv.push(one);
    }
  }
  const keyLen = key === null || key === undefined ? 0 : byteLength(key);
  const valueLen = value === null || value === undefined ? 0 : byteLength(value);
  const hkLen = hk.map((k) => Buffer.byteLength(k, 'utf8'));
  const hvLen = hv.map(byteLength);
  const ts = zigZag64(timestampDelta);
  const od = zigZag32(offsetDelta);
  let body =
    1 +
    sizeOfUnsigned(ts) +
    sizeOfUnsigned(od) +
    sizeOfBytes(key, keyLen) +
    sizeOfBytes(value, valueLen) +
    sizeOfUnsigned(zigZag32(hk.length));
  for (let i = 0; i < hk.length; i++) body += sizeOfBytes(hk[i], hkLen[i]) + sizeOfBytes(hv[i], hvLen[i]);
  const lengthField = zigZag32(body);
  const buf = Buffer.allocUnsafe(sizeOfUnsigned(lengthField) + body);
  let at = writeUnsigned(buf, 0, lengthField);
  buf[at++] = 0; // attributes
  at = writeUnsigned(buf, at, ts);
  at = writeUnsigned(buf, at, od);
  at = writeBytes(buf, at, key, keyLen);
  at = writeBytes(buf, at, value, valueLen);
  at = writeUnsigned(buf, at, zigZag32(hk.length));
  for (let i = 0; i < hk.length; i++) {
    at = writeBytes(buf, at, hk[i], hkLen[i]);
    at = writeBytes(buf, at, hv[i], hvLen[i]);
  }
  return { buf, buffer: buf };
}

/** kafkajs' record encoder with this one in front, falling back to kafkajs' for the inputs it leaves */
export function fastRecordEncoder(original: (input: RecordInput) => unknown): (input: RecordInput) => unknown {
  const encoder = (input: RecordInput) => encodeRecord(input) ?? original(input);
  (encoder as { fastRecordEncoder?: true }).fastRecordEncoder = true;
  return encoder;
}

interface KafkajsLong {
  getHighBits(): number;
  getLowBits(): number;
}
interface LongStatics {
  fromValue(v: unknown): KafkajsLong;
  fromInt(v: number): KafkajsLong;
}

/** the arguments kafkajs' produce request passes to RecordBatch */
export interface RecordBatchInput {
  compression?: number;
  firstOffset?: unknown;
  firstTimestamp?: unknown;
  maxTimestamp?: unknown;
  partitionLeaderEpoch?: number;
  lastOffsetDelta?: number;
  transactional?: boolean;
  producerId?: unknown;
  producerEpoch?: number;
  firstSequence?: number;
  records?: { buffer?: unknown }[];
}

const MAGIC_BYTE = 2;
const TRANSACTIONAL_MASK = 16;
/** firstOffset, length, leader epoch, magic, CRC, attributes, last offset delta, two timestamps, producer id and epoch, first sequence, record count */
const BATCH_HEADER = 8 + 4 + 4 + 1 + 4 + 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4;
/** where the CRC-covered part starts (attributes) */
const CRC_FROM = 21;

/**
 * kafkajs' RecordBatch for uncompressed batches, written once into a buffer of the batch's size and handed
 * back as a kafkajs Encoder holding it (what the produce request reads: `size()`, `buf`, `buffer`). 64-bit
 * fields go through kafkajs' own Long, so every value kafkajs accepts is written as kafkajs writes it.
 * Compressed batches, and records that are not encoded buffers, go to kafkajs' own RecordBatch.
 */
export function fastRecordBatch(
  original: (input: RecordBatchInput) => Promise<unknown>,
): (input: RecordBatchInput) => Promise<unknown> {
  const Long = require('kafkajs/src/utils/long.js') as LongStatics;
  const Encoder = require('kafkajs/src/protocol/encoder.js') as { prototype: object };
  const batch = async (input: RecordBatchInput): Promise<unknown> => {
    const {
      compression = 0,
      firstOffset = Long.fromInt(0),
      firstTimestamp = Date.now(),
      maxTimestamp = Date.now(),
      partitionLeaderEpoch = 0,
      lastOffsetDelta = 0,
      transactional = false,
      producerId = Long.fromValue(-1),
      producerEpoch = 0,
      firstSequence = 0,
      records = [],
    } = input;
    if (compression !== 0) return original(input);
    let size = BATCH_HEADER;
    for (const r of records) {
      if (!Buffer.isBuffer(r?.buffer)) return original(input);
      size += (r.buffer as Buffer).length;
    }
    const buf = Buffer.allocUnsafe(size);
    const int64 = (v: unknown, at: number) => {
      const l = Long.fromValue(v);
      buf.writeInt32BE(l.getHighBits(), at);
      buf.writeInt32BE(l.getLowBits(), at + 4);
    };
    int64(firstOffset, 0);
    buf.writeInt32BE(size - 12, 8);
    buf.writeInt32BE(partitionLeaderEpoch, 12);
    buf.writeInt8(MAGIC_BYTE, 16);
    buf.writeInt16BE(compression | (transactional ? TRANSACTIONAL_MASK : 0), 21);
    buf.writeInt32BE(lastOffsetDelta, 23);
    int64(firstTimestamp, 27);
    int64(maxTimestamp, 35);
    int64(producerId, 43);
    buf.writeInt16BE(producerEpoch, 51);
    buf.writeInt32BE(firstSequence, 53);
    buf.writeInt32BE(records.length, 57);
    let at = BATCH_HEADER;
    for (const r of records) at += (r.buffer as Buffer).copy(buf, at);
    buf.writeUInt32BE(crc32c(buf.subarray(CRC_FROM)) >>> 0, 17);
    const encoder = Object.create(Encoder.prototype) as { buf: Buffer; offset: number };
    encoder.buf = buf;
    encoder.offset = size;
    return encoder;
  };
  (batch as { fastRecordBatch?: true }).fastRecordBatch = true;
  return batch;
}

/** kafkajs' protocol Decoder, as far as the record decoder reads it */
interface KafkajsDecoder {
  buffer: Buffer;
  offset: number;
  readInt8(): number;
  readVarInt(): number;
  readVarIntBytes(): Buffer | null;
  readVarIntArray<T>(reader: (d: KafkajsDecoder) => T): T[];
}

/** the batch fields kafkajs' record decoder reads */
export interface RecordBatchContext {
  firstOffset?: string;
  firstTimestamp?: string;
  magicByte?: number;
  isControlBatch?: boolean;
  timestampType?: number;
  maxTimestamp?: string;
}

type RecordDecoder = (decoder: KafkajsDecoder, batchContext?: RecordBatchContext) => unknown;

/** a decimal string of a safe integer, as kafkajs' Long prints int64 values */
const SAFE_DECIMAL = /^-?\d{1,15}$/;
const LOG_APPEND_TIME = 1;

/**
 * kafkajs' record decoder (kafkajs/src/protocol/recordBatch/record/v0/decoder.js) with the same result,
 * without its per-record 64-bit `Long` arithmetic (a BigInt per varlong byte, and a BigInt parsed from a
 * decimal string and printed again for the offset and for the timestamp of every record) and without
 * rebuilding the headers object once per header. Records whose numbers do not fit doubles exactly
 * (offsets or timestamps beyond 15 digits, timestamp deltas over 7 varint bytes) and the header key
 * `__proto__` go to kafkajs' own decoder, from the record's first byte.
 */
export function fastRecordDecoder(
  original: RecordDecoder,
  headerDecoder: (d: KafkajsDecoder) => { key: string; value: Buffer | null },
): RecordDecoder {
  const decode: RecordDecoder = (decoder, batchContext = {}) => {
    const start = decoder.offset;
    const {
      firstOffset,
      firstTimestamp,
      magicByte,
      isControlBatch = false,
      timestampType,
      maxTimestamp,
    } = batchContext;
    const appendTime = timestampType === LOG_APPEND_TIME && maxTimestamp;
    if (!SAFE_DECIMAL.test(String(firstOffset)) || (!appendTime && !SAFE_DECIMAL.test(String(firstTimestamp))))
      return original(decoder, batchContext);
    const attributes = decoder.readInt8();
    // zig-zag varlong of at most 7 bytes (49 bits: exact in a double)
    const buf = decoder.buffer;
    let at = decoder.offset;
    let raw = 0;
    let scale = 1;
    let byte: number;
    let n = 0;
    do {
      if (n === 7 || at >= buf.length) {
        decoder.offset = start;
        return original(decoder, batchContext);
      }
      byte = buf[at++];
      raw += (byte & 0x7f) * scale;
      scale *= 128;
      n++;
    } while (byte >= 0x80);
    decoder.offset = at;
    const timestampDelta = raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
    const timestamp = appendTime ? maxTimestamp : String(Number(firstTimestamp) + timestampDelta);
    const offset = String(Number(firstOffset) + decoder.readVarInt());
    const key = decoder.readVarIntBytes();
    const value = decoder.readVarIntBytes();
    const list = decoder.readVarIntArray(headerDecoder);
    // kafkajs folds the headers into a plain object: a repeated key becomes an array of its values
    const headers: Record<string, unknown> = {};
    for (const h of list) {
      if (h.key === '__proto__') {
        decoder.offset = start;
        return original(decoder, batchContext);
      }
      const prev = headers[h.key];
      headers[h.key] = prev === undefined ? h.value : Array.isArray(prev) ? prev.concat([h.value]) : [prev, h.value];
    }
    return {
      magicByte,
      attributes,
      timestamp,
      offset,
      key,
      value,
      headers,
      isControlRecord: isControlBatch,
      batchContext,
    };
  };
  (decode as { fastRecordDecoder?: true }).fastRecordDecoder = true;
  return decode;
}
