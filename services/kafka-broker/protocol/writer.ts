// Response encoder: writes into one preallocated buffer (grown by doubling when a response is larger
// than estimated) and can splice in external buffers (stored record batches) without copying them.
// finish() returns the frame as a list of buffers, size prefix included, ready for a corked write.

export class Writer {
  private buf: Buffer;
  private pos: number;
  /** start of the part of `buf` not yet emitted as a segment */
  private segStart = 0;
  private readonly parts: Buffer[] = [];
  private externalBytes = 0;

  constructor(initialSize = 256) {
    this.buf = Buffer.allocUnsafe(Math.max(16, initialSize));
    this.pos = 4; // size prefix, patched in finish()
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  int8(v: number): this {
    this.ensure(1);
    this.buf.writeInt8(v, this.pos);
    this.pos += 1;
    return this;
  }
  bool(v: boolean): this {
    this.ensure(1);
    this.buf[this.pos++] = v ? 1 : 0;
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
  int64(v: bigint): this {
    this.ensure(8);
    this.buf.writeBigInt64BE(v, this.pos);
    this.pos += 8;
    return this;
  }
  uuid(v: Buffer | null | undefined): this {
    this.ensure(16);
    if (v && v.length === 16) v.copy(this.buf, this.pos);
    else this.buf.fill(0, this.pos, this.pos + 16);
    this.pos += 16;
    return this;
  }
  uvarint(v: number): this {
    this.ensure(5);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.pos++] = v;
    return this;
  }

  string(v: string, flex: boolean): this {
    return this.nullableString(v, flex);
  }
  nullableString(v: string | null | undefined, flex: boolean): this {
    if (v === null || v === undefined) {
      return flex ? this.uvarint(0) : this.int16(-1);
    }
    const len = Buffer.byteLength(v);
    if (flex) this.uvarint(len + 1);
    else this.int16(len);
    this.ensure(len);
    this.pos += this.buf.write(v, this.pos, 'utf8');
    return this;
  }
  bytes(v: Buffer, flex: boolean): this {
    return this.nullableBytes(v, flex);
  }
  nullableBytes(v: Buffer | null | undefined, flex: boolean): this {
    if (v === null || v === undefined) return flex ? this.uvarint(0) : this.int32(-1);
    if (flex) this.uvarint(v.length + 1);
    else this.int32(v.length);
    this.ensure(v.length);
    v.copy(this.buf, this.pos);
    this.pos += v.length;
    return this;
  }
  arrayLength(n: number, flex: boolean): this {
    return flex ? this.uvarint(n + 1) : this.int32(n);
  }
  array<T>(items: readonly T[], flex: boolean, item: (w: Writer, v: T) => void): this {
    this.arrayLength(items.length, flex);
    for (const v of items) item(this, v);
    return this;
  }
  nullableArray<T>(items: readonly T[] | null | undefined, flex: boolean, item: (w: Writer, v: T) => void): this {
    if (items === null || items === undefined) return flex ? this.uvarint(0) : this.int32(-1);
    return this.array(items, flex, item);
  }
  /** empty tagged-field section when flexible */
  tags(flex: boolean): this {
    if (flex) {
      this.ensure(1);
      this.buf[this.pos++] = 0;
    }
    return this;
  }
  /** tagged-field section with the given (tag, encoded value) pairs, sorted by tag */
  taggedFields(fields: { tag: number; write: (w: Writer) => void }[]): this {
    this.uvarint(fields.length);
    for (const f of fields) {
      const sub = new Writer(64);
      f.write(sub);
      const body = sub.finishBody();
      this.uvarint(f.tag).uvarint(body.length);
      this.raw(body);
    }
    return this;
  }
  raw(v: Buffer): this {
    this.ensure(v.length);
    v.copy(this.buf, this.pos);
    this.pos += v.length;
    return this;
  }

  /** Splice in buffers without copying (record batches read from the log). */
  external(chunks: readonly Buffer[]): this {
    if (chunks.length === 0) return this;
    if (this.pos > this.segStart) this.parts.push(this.buf.subarray(this.segStart, this.pos));
    for (const c of chunks) {
      this.parts.push(c);
      this.externalBytes += c.length;
    }
    this.segStart = this.pos;
    return this;
  }

  /** The frame: size prefix + everything written. */
  finish(): Buffer[] {
    if (this.pos > this.segStart) this.parts.push(this.buf.subarray(this.segStart, this.pos));
    let total = -4;
    for (const p of this.parts) total += p.length;
    // parts[0] always starts at offset 0 of the buffer that held the size prefix
    this.parts[0].writeInt32BE(total, 0);
    return this.parts;
  }

  /** Everything written after the (unused) size prefix, as one buffer; no external chunks allowed. */
  finishBody(): Buffer {
    if (this.parts.length > 0 || this.externalBytes > 0) throw new Error('finishBody with external chunks');
    return this.buf.subarray(4, this.pos);
  }
}
