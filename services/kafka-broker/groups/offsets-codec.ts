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

import {
  decodeBatchRecords,
  encodeRecordBatch,
  isControl,
  lastOffsetOf,
  readBatchHeader,
  splitBatches,
} from '../storage/record-batch.ts';

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
    members.push({
      memberId,
      groupInstanceId,
      clientId,
      clientHost,
      rebalanceTimeoutMs,
      sessionTimeoutMs,
      subscription,
      assignment,
    });
  }
  return { protocolType, generationId, protocolName, leaderId, currentStateTimestamp, members };
}

// ---------------------------------------------------------------------------------------------
// v2 record batches: framing and the record codec are the storage layer's (storage/record-batch.ts)

export interface BatchRecord {
  key: Buffer;
  /** null = tombstone */
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

/** Uncompressed magic-2 batches (no producer id) of at most ~maxBatchBytes each, concatenated. */
export async function encodeRecordBatches(
  records: BatchRecord[],
  timestampMs: number,
  maxBatchBytes = 512 * 1024,
): Promise<Buffer> {
  const groups: BatchRecord[][] = [];
  let current: BatchRecord[] = [];
  let size = 0;
  for (const rec of records) {
    const recSize = rec.key.length + (rec.value?.length ?? 0) + 16;
    if (current.length > 0 && size + recSize > maxBatchBytes) {
      groups.push(current);
      current = [];
      size = 0;
    }
    current.push(rec);
    size += recSize;
  }
  if (current.length > 0) groups.push(current);
  const ts = BigInt(Math.trunc(timestampMs));
  const out = await Promise.all(groups.map((g) => encodeRecordBatch(g, { baseTimestamp: ts })));
  return out.length === 1 ? out[0] : Buffer.concat(out);
}

/** Parses the whole batches in `buf` (e.g. one ReadResult chunk); a trailing partial batch is ignored. */
export async function decodeRecordBatches(buf: Buffer): Promise<DecodedBatch[]> {
  const out: DecodedBatch[] = [];
  for (const slice of splitBatches(buf)) {
    const h = readBatchHeader(slice, 0);
    if (h.magic !== 2) continue;
    const batch: DecodedBatch = {
      baseOffset: h.baseOffset,
      lastOffset: lastOffsetOf(h),
      isControl: isControl(h.attributes),
      records: [],
    };
    if (!batch.isControl) {
      const { records } = await decodeBatchRecords(slice);
      batch.records = records.map((r) => ({
        offset: h.baseOffset + BigInt(r.offsetDelta),
        timestamp: h.baseTimestamp + r.timestampDelta,
        key: r.key,
        value: r.value,
      }));
    }
    out.push(batch);
  }
  return out;
}
