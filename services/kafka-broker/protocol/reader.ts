// Bounds-checked reader over one request frame. Every read past the end throws a ProtocolError,
// which makes the server close that connection (never the process).

export class ProtocolError extends Error {}

const EMPTY = Buffer.alloc(0);

export class Reader {
  readonly buf: Buffer;
  offset: number;
  readonly end: number;

  constructor(buf: Buffer, offset = 0, end = buf.length) {
    this.buf = buf;
    this.offset = offset;
    this.end = end;
  }

  remaining(): number {
    return this.end - this.offset;
  }

  private need(n: number): number {
    const at = this.offset;
    if (n < 0 || at + n > this.end)
      throw new ProtocolError(`truncated: need ${n} bytes at ${at}, frame ends at ${this.end}`);
    this.offset = at + n;
    return at;
  }

  int8(): number {
    return this.buf.readInt8(this.need(1));
  }
  bool(): boolean {
    return this.buf[this.need(1)] !== 0;
  }
  int16(): number {
    return this.buf.readInt16BE(this.need(2));
  }
  int32(): number {
    return this.buf.readInt32BE(this.need(4));
  }
  uint32(): number {
    return this.buf.readUInt32BE(this.need(4));
  }
  int64(): bigint {
    return this.buf.readBigInt64BE(this.need(8));
  }
  uuid(): Buffer {
    const at = this.need(16);
    return this.buf.subarray(at, at + 16);
  }

  uvarint(): number {
    let value = 0;
    let shift = 0;
    for (;;) {
      if (this.offset >= this.end) throw new ProtocolError('truncated varint');
      const b = this.buf[this.offset++];
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
      shift += 7;
      if (shift > 28) throw new ProtocolError('varint too long');
    }
  }

  /** STRING / COMPACT_STRING (non-null) */
  string(flex: boolean): string {
    const s = this.nullableString(flex);
    if (s === null) throw new ProtocolError('null string where a non-null string is required');
    return s;
  }

  nullableString(flex: boolean): string | null {
    const len = flex ? this.uvarint() - 1 : this.int16();
    if (len < 0) return null;
    const at = this.need(len);
    return this.buf.toString('utf8', at, at + len);
  }

  /** BYTES / COMPACT_BYTES, zero-copy view into the frame */
  bytes(flex: boolean): Buffer {
    const b = this.nullableBytes(flex);
    return b ?? EMPTY;
  }

  nullableBytes(flex: boolean): Buffer | null {
    const len = flex ? this.uvarint() - 1 : this.int32();
    if (len < 0) return null;
    const at = this.need(len);
    return this.buf.subarray(at, at + len);
  }

  /** array length; -1 = null */
  arrayLength(flex: boolean): number {
    const n = flex ? this.uvarint() - 1 : this.int32();
    // each element takes at least one byte: a count larger than the rest of the frame is garbage
    if (n > this.remaining()) throw new ProtocolError(`array length ${n} exceeds frame`);
    return n < 0 ? -1 : n;
  }

  array<T>(flex: boolean, item: (r: Reader) => T): T[] {
    const n = this.arrayLength(flex);
    const out: T[] = [];
    for (let i = 0; i < n; i++) out.push(item(this));
    return out;
  }

  nullableArray<T>(flex: boolean, item: (r: Reader) => T): T[] | null {
    const n = this.arrayLength(flex);
    if (n < 0) return null;
    const out: T[] = [];
    for (let i = 0; i < n; i++) out.push(item(this));
    return out;
  }

  /** Reads a tagged-field section; known tags are handed to `onTag`, unknown ones skipped. */
  taggedFields(onTag?: (tag: number, r: Reader, size: number) => void): void {
    const n = this.uvarint();
    for (let i = 0; i < n; i++) {
      const tag = this.uvarint();
      const size = this.uvarint();
      const start = this.offset;
      this.need(size);
      if (onTag) {
        const sub = new Reader(this.buf, start, start + size);
        onTag(tag, sub, size);
      }
    }
  }

  /** tagged fields only when flexible */
  tags(flex: boolean): void {
    if (flex) this.taggedFields();
  }
}
