// Sparse per-segment indexes, held in growable buffers and persisted as flat files (Kafka's layout):
//   .index      8-byte entries  [relativeOffset int32][position int32]   strictly increasing in both
//   .timeindex 12-byte entries  [timestamp int64][relativeOffset int32]  strictly increasing timestamps
// A time index entry (T, o) means: every batch up to and including the one at relative offset o has a
// max timestamp <= T. Entries are only ever appended; loading keeps the longest valid prefix, so a torn
// or stale tail costs a longer scan, never a wrong answer.

abstract class EntryBuffer {
  buf: Buffer;
  count = 0;
  abstract readonly entrySize: number;

  constructor(initial?: Buffer, entrySize = 8) {
    this.buf = initial ?? Buffer.alloc(entrySize * 64);
  }

  protected reserve(): number {
    const need = (this.count + 1) * this.entrySize;
    if (need > this.buf.length) {
      const grown = Buffer.alloc(Math.max(this.buf.length * 2, need));
      this.buf.copy(grown, 0, 0, this.count * this.entrySize);
      this.buf = grown;
    }
    return this.count * this.entrySize;
  }

  /** bytes of entries [from, count) for appending to the file */
  slice(fromEntry: number): Buffer {
    return this.buf.subarray(fromEntry * this.entrySize, this.count * this.entrySize);
  }

  get byteLength(): number {
    return this.count * this.entrySize;
  }

  truncateTo(count: number): void {
    this.count = Math.min(this.count, count);
  }
}

export class OffsetIndex extends EntryBuffer {
  readonly entrySize = 8;

  /** Loads entries from file bytes, keeping the longest valid prefix (positions below `logSize`). */
  static load(data: Buffer, logSize: number): OffsetIndex {
    const idx = new OffsetIndex(Buffer.from(data), 8);
    const n = Math.floor(data.length / 8);
    let prevRel = -1;
    let prevPos = -1;
    let valid = 0;
    for (let i = 0; i < n; i++) {
      const rel = data.readInt32BE(i * 8);
      const pos = data.readInt32BE(i * 8 + 4);
      if (rel <= prevRel || pos <= prevPos || pos >= logSize || rel < 0) break;
      prevRel = rel;
      prevPos = pos;
      valid++;
    }
    idx.count = valid;
    if (idx.buf.length === 0) idx.buf = Buffer.alloc(8 * 64);
    return idx;
  }

  append(relOffset: number, position: number): void {
    if (this.count > 0 && relOffset <= this.relAt(this.count - 1)) return;
    const at = this.reserve();
    this.buf.writeInt32BE(relOffset, at);
    this.buf.writeInt32BE(position, at + 4);
    this.count++;
  }

  relAt(i: number): number {
    return this.buf.readInt32BE(i * 8);
  }

  positionAt(i: number): number {
    return this.buf.readInt32BE(i * 8 + 4);
  }

  /** index of the last entry with relOffset <= rel, or -1 */
  floorEntry(rel: number): number {
    let lo = 0;
    let hi = this.count - 1;
    let ans = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.relAt(mid) <= rel) {
        ans = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return ans;
  }

  /** file position of a batch at or before the batch containing relative offset `rel` */
  lookup(rel: number): number {
    const e = this.floorEntry(rel);
    return e < 0 ? 0 : this.positionAt(e);
  }

  /** drop entries at or beyond `position` */
  truncateToPosition(position: number): void {
    while (this.count > 0 && this.positionAt(this.count - 1) >= position) this.count--;
  }
}

export class TimeIndex extends EntryBuffer {
  readonly entrySize = 12;

  static load(data: Buffer, maxRel: number): TimeIndex {
    const idx = new TimeIndex(Buffer.from(data), 12);
    const n = Math.floor(data.length / 12);
    let prevTs = -(2n ** 63n);
    let prevRel = -1;
    let valid = 0;
    for (let i = 0; i < n; i++) {
      const ts = data.readBigInt64BE(i * 12);
      const rel = data.readInt32BE(i * 12 + 8);
      if (ts <= prevTs || rel < prevRel || rel < 0 || rel > maxRel) break;
      prevTs = ts;
      prevRel = rel;
      valid++;
    }
    idx.count = valid;
    if (idx.buf.length === 0) idx.buf = Buffer.alloc(12 * 64);
    return idx;
  }

  get lastTimestamp(): bigint {
    return this.count === 0 ? -1n : this.tsAt(this.count - 1);
  }

  /** appends (ts, rel) if ts is larger than the last entry's timestamp */
  maybeAppend(ts: bigint, relOffset: number): boolean {
    if (ts < 0n || (this.count > 0 && ts <= this.lastTimestamp)) return false;
    const at = this.reserve();
    this.buf.writeBigInt64BE(ts, at);
    this.buf.writeInt32BE(relOffset, at + 8);
    this.count++;
    return true;
  }

  tsAt(i: number): bigint {
    return this.buf.readBigInt64BE(i * 12);
  }

  relAt(i: number): number {
    return this.buf.readInt32BE(i * 12 + 8);
  }

  /** relative offset of the last entry whose timestamp is < ts (all batches up to it are older), or -1 */
  lastBefore(ts: bigint): number {
    let lo = 0;
    let hi = this.count - 1;
    let ans = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.tsAt(mid) < ts) {
        ans = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return ans < 0 ? -1 : this.relAt(ans);
  }

  truncateToRel(maxRelExclusive: number): void {
    while (this.count > 0 && this.relAt(this.count - 1) >= maxRelExclusive) this.count--;
  }
}
