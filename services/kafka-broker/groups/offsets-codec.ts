// Encoding of the coordinator's records in the internal `__consumer_offsets` topic, plus a minimal
// v2 record-batch writer/reader for them.
//
// Record keys/values follow the layout of Apache Kafka's own __consumer_offsets records (big-endian,
// int16 version prefix, int16-length strings, int32-length bytes, int32-count arrays):
//   offset commit key   (version 1): group string, topic string, partition int32
//   group metadata key  (version 2): group string
//   offset commit value (version 3): offset int64, leaderEpoch int32, metadata string, commitTimestamp int64
//   group metadata value(version 3): protocolType string, generation int32, protocol string?, leader string?,
//       currentStateTimestamp int64, members [memberId, groupInstanceId?, clientId, clientHost,
//       rebalanceTimeout int32, sessionTimeout int32, subscription bytes, assignment bytes]
// A null value (tombstone) deletes the key; the topic is compacted.

import * as zlib from 'node:zlib';
import { crc32c } from '@node-rs/crc32';

// ---------------------------------------------------------------------------------------------
// Keys and values

export interface OffsetKey {
  type: 'offset';
  group: string;
  topic: string;
  partition: number;
}

export interface GroupKey {
  type: 'group';
  group: string;
}

export interface OffsetValue {
  offset: bigint;
  leaderEpoch: number;
  metadata: string;
  commitTimestamp: number;
}

export interface GroupMemberValue {
  memberId: string;
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  rebalanceTimeoutMs: number;
  sessionTimeoutMs: number;
  subscription: Buffer;
  assignment: Buffer;
}

export interface GroupValue {
  protocolType: string;
  generationId: number;
  protocolName: string | null;
  leaderId: string | null;
  currentStateTimestamp: number;
  members: GroupMemberValue[];
}

class Writer {
  private buf: Buffer;
  private pos = 0;
  constructor(initial = 64) {
    this.buf = Buffer.allocUnsafe(initial);
  }
  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }
  int8(v: number): this {
    this.ensure(1);
    this.buf.writeInt8(v, this.pos);
    this.pos += 1;
    return this;
  }
  int16(v: number): this {
    this.ensure(2);
    this.buf.writeInt16BE(v, this.pos);
    this.pos += 2;
    return this;
  }
  int32(v: number): this {
    this.ensure(4);
    this.buf.writeInt32BE(v, this.pos);
    this.pos += 4;
    return this;
  }
  uint32(v: number): this {
    this.ensure(4);
    this.buf.writeUInt32BE(v >>> 0, this.pos);
    this.pos += 4;
    return this;
  }
  int64(v: bigint): this {
    this.ensure(8);
    this.buf.writeBigInt64BE(v, this.pos);
    this.pos += 8;
    return this;
  }
  raw(b: Uint8Array): this {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }
  string(s: string): this {
    const b = Buffer.from(s, 'utf8');
    if (b.length > 0x7fff) throw new RangeError('string too long');
    return this.int16(b.length).raw(b);
  }
  nullableString(s: string | null): this {
    return s === null ? this.int16(-1) : this.string(s);
  }
  bytes(b: Buffer): this {
    return this.int32(b.length).raw(b);
  }
  /** zigzag varint (int32 / safe-integer range) */
  varint(v: number): this {
    // zigzag on a JS number without 32-bit overflow: values we write are small
    let z = v >= 0 ? v * 2 : -v * 2 - 1;
    this.ensure(10);
    while (z >= 0x80) {
      this.buf[this.pos++] = (z % 0x80) | 0x80;
      z = Math.floor(z / 0x80);
    }
    this.buf[this.pos++] = z;
    return this;
  }
  get length(): number {
    return this.pos;
  }
  result(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

class Reader {
  pos = 0;
  private readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }
  private need(n: number): void {
    if (this.pos + n > this.buf.length) throw new RangeError('buffer underflow');
  }
  int8(): number {
    this.need(1);
    const v = this.buf.readInt8(this.pos);
    this.pos += 1;
    return v;
  }
  int16(): number {
    this.need(2);
    const v = this.buf.readInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  int32(): number {
    this.need(4);
    const v = this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  int64(): bigint {
    this.need(8);
    const v = this.buf.readBigInt64BE(this.pos);
    this.pos += 8;
    return v;
  }
  raw(n: number): Buffer {
    this.need(n);
    const v = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }
  nullableString(): string | null {
    const len = this.int16();
    if (len < 0) return null;
    return this.raw(len).toString('utf8');
  }
  string(): string {
    return this.nullableString() ?? '';
  }
  bytes(): Buffer {
    const len = this.int32();
    if (len < 0) return Buffer.alloc(0);
    return Buffer.from(this.raw(len));
  }
  varint(): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      this.need(1);
      const b = this.buf[this.pos++];
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) {
        // zigzag decode
        return result % 2 === 0 ? result / 2 : -(result + 1) / 2;
      }
      mul *= 0x80;
    }
    throw new RangeError('varint too long');
  }
  get remaining(): number {
    return this.buf.length - this.pos;
  }
}

export function encodeOffsetKey(group: string, topic: string, partition: number): Buffer {
  return new Writer().int16(1).string(group).string(topic).int32(partition).result();
}

export function encodeGroupKey(group: string): Buffer {
  return new Writer().int16(2).string(group).result();
}

export function decodeKey(buf: Buffer): OffsetKey | GroupKey | null {
  const r = new Reader(buf);
  const version = r.int16();
  if (version === 0 || version === 1) {
    const group = r.string();
    const topic = r.string();
    const partition = r.int32();
    return { type: 'offset', group, topic, partition };
  }
  if (version === 2) return { type: 'group', group: r.string() };
  return null;
}

export function encodeOffsetValue(v: OffsetValue): Buffer {
  return new Writer()
    .int16(3)
    .int64(v.offset)
    .int32(v.leaderEpoch)
    .string(v.metadata)
    .int64(BigInt(Math.trunc(v.commitTimestamp)))
    .result();
}

export function decodeOffsetValue(buf: Buffer): OffsetValue {
  const r = new Reader(buf);
  const version = r.int16();
  const offset = r.int64();
  const leaderEpoch = version >= 3 ? r.int32() : -1;
  const metadata = r.string();
  const commitTimestamp = Number(r.int64());
  return { offset, leaderEpoch, metadata, commitTimestamp };
}

export function encodeGroupValue(v: GroupValue): Buffer {
  const w = new Writer(256)
    .int16(3)
    .string(v.protocolType)
    .int32(v.generationId)
    .nullableString(v.protocolName)
    .nullableString(v.leaderId)
    .int64(BigInt(Math.trunc(v.currentStateTimestamp)))
    .int32(v.members.length);
  for (const m of v.members) {
    w.string(m.memberId)
      .nullableString(m.groupInstanceId)
      .string(m.clientId)
      .string(m.clientHost)
      .int32(m.rebalanceTimeoutMs)
      .int32(m.sessionTimeoutMs)
      .bytes(m.subscription)
      .bytes(m.assignment);
  }
  return w.result();
}

export function decodeGroupValue(buf: Buffer): GroupValue {
  const r = new Reader(buf);
  const version = r.int16();
  const protocolType = r.string();
  const generationId = r.int32();
  const protocolName = r.nullableString();
  const leaderId = r.nullableString();
  const currentStateTimestamp = version >= 2 ? Number(r.int64()) : -1;
  const n = r.int32();
  const members: GroupMemberValue[] = [];
  for (let i = 0; i < n; i++) {
    const memberId = r.string();
    const groupInstanceId = version >= 3 ? r.nullableString() : null;
    const clientId = r.string();
    const clientHost = r.string();
    const sessionFirst = version === 0;
    let rebalanceTimeoutMs: number;
    let sessionTimeoutMs: number;
    if (sessionFirst) {
      sessionTimeoutMs = r.int32();
      rebalanceTimeoutMs = sessionTimeoutMs;
    } else {
      rebalanceTimeoutMs = r.int32();
      sessionTimeoutMs = r.int32();
    }
    const subscription = r.bytes();
    const assignment = r.bytes();
    members.push({ memberId, groupInstanceId, clientId, clientHost, rebalanceTimeoutMs, sessionTimeoutMs, subscription, assignment });
  }
  return { protocolType, generationId, protocolName, leaderId, currentStateTimestamp, members };
}

// ---------------------------------------------------------------------------------------------
// v2 record batches

export interface BatchRecord {
  key: Buffer | null;
  value: Buffer | null;
}

export interface DecodedRecord {
  offset: bigint;
  timestamp: bigint;
  key: Buffer | null;
  value: Buffer | null;
}

export interface DecodedBatch {
  baseOffset: bigint;
  lastOffset: bigint;
  isControl: boolean;
  records: DecodedRecord[];
}

const RECORDS_OFFSET = 61; // size of the v2 batch header
const CRC_OFFSET = 17;
const ATTRIBUTES_OFFSET = 21;

/** One uncompressed magic-2 batch (CreateTime, no producer id), base offset 0 (the log assigns it). */
export function encodeRecordBatch(records: BatchRecord[], timestampMs: number): Buffer {
  if (records.length === 0) throw new RangeError('empty batch');
  const body = new Writer(256);
  for (let i = 0; i < records.length; i++) {
    const rec = records[i];
    const r = new Writer(64);
    r.int8(0); // attributes
    r.varint(0); // timestamp delta
    r.varint(i); // offset delta
    if (rec.key === null) r.varint(-1);
    else r.varint(rec.key.length).raw(rec.key);
    if (rec.value === null) r.varint(-1);
    else r.varint(rec.value.length).raw(rec.value);
    r.varint(0); // headers
    body.varint(r.length).raw(r.result());
  }
  const ts = BigInt(Math.trunc(timestampMs));
  const w = new Writer(RECORDS_OFFSET + body.length);
  w.int64(0n) // base offset
    .int32(RECORDS_OFFSET - 12 + body.length) // batch length (after this field)
    .int32(-1) // partition leader epoch
    .int8(2) // magic
    .uint32(0) // crc placeholder
    .int16(0) // attributes
    .int32(records.length - 1) // last offset delta
    .int64(ts) // base timestamp
    .int64(ts) // max timestamp
    .int64(-1n) // producer id
    .int16(-1) // producer epoch
    .int32(-1) // base sequence
    .int32(records.length)
    .raw(body.result());
  const out = w.result();
  out.writeUInt32BE(crc32c(out.subarray(ATTRIBUTES_OFFSET)) >>> 0, CRC_OFFSET);
  return out;
}

/** Splits records into batches of at most ~maxBatchBytes each and concatenates them. */
export function encodeRecordBatches(records: BatchRecord[], timestampMs: number, maxBatchBytes = 512 * 1024): Buffer {
  const out: Buffer[] = [];
  let current: BatchRecord[] = [];
  let size = 0;
  for (const rec of records) {
    const recSize = (rec.key?.length ?? 0) + (rec.value?.length ?? 0) + 16;
    if (current.length > 0 && size + recSize > maxBatchBytes) {
      out.push(encodeRecordBatch(current, timestampMs));
      current = [];
      size = 0;
    }
    current.push(rec);
    size += recSize;
  }
  if (current.length > 0) out.push(encodeRecordBatch(current, timestampMs));
  return out.length === 1 ? out[0] : Buffer.concat(out);
}

function decompress(codec: number, data: Buffer): Buffer {
  switch (codec) {
    case 0:
      return data;
    case 1:
      return zlib.gunzipSync(data);
    case 4: {
      const z = zlib as unknown as { zstdDecompressSync?: (b: Buffer) => Buffer };
      if (typeof z.zstdDecompressSync === 'function') return z.zstdDecompressSync(data);
      throw new Error('zstd is not supported by this Node.js');
    }
    default:
      throw new Error(`unsupported compression codec ${codec} in __consumer_offsets`);
  }
}

/** Parses the whole v2 batches in `buf` (a trailing partial batch is ignored). */
export function decodeRecordBatches(buf: Buffer): DecodedBatch[] {
  const batches: DecodedBatch[] = [];
  let pos = 0;
  while (pos + RECORDS_OFFSET <= buf.length) {
    const baseOffset = buf.readBigInt64BE(pos);
    const batchLength = buf.readInt32BE(pos + 8);
    const end = pos + 12 + batchLength;
    if (batchLength < RECORDS_OFFSET - 12 || end > buf.length) break;
    const magic = buf.readInt8(pos + 16);
    if (magic !== 2) {
      pos = end;
      continue;
    }
    const attributes = buf.readInt16BE(pos + ATTRIBUTES_OFFSET);
    const lastOffsetDelta = buf.readInt32BE(pos + 23);
    const baseTimestamp = buf.readBigInt64BE(pos + 27);
    const count = buf.readInt32BE(pos + 57);
    const isControl = (attributes & 0x20) !== 0;
    const records: DecodedRecord[] = [];
    const data = decompress(attributes & 0x07, buf.subarray(pos + RECORDS_OFFSET, end));
    const r = new Reader(data);
    for (let i = 0; i < count && r.remaining > 0; i++) {
      const len = r.varint();
      const start = r.pos;
      r.int8(); // attributes
      const tsDelta = r.varint();
      const offsetDelta = r.varint();
      const keyLen = r.varint();
      const key = keyLen < 0 ? null : Buffer.from(r.raw(keyLen));
      const valueLen = r.varint();
      const value = valueLen < 0 ? null : Buffer.from(r.raw(valueLen));
      r.pos = start + len; // skip headers
      records.push({ offset: baseOffset + BigInt(offsetDelta), timestamp: baseTimestamp + BigInt(tsDelta), key, value });
    }
    batches.push({ baseOffset, lastOffset: baseOffset + BigInt(lastOffsetDelta), isControl, records });
    pos = end;
  }
  return batches;
}
