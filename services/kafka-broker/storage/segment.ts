// One log segment: `<base>.log` (batches exactly as on the wire after offset assignment), plus its sparse
// `.index` and `.timeindex`. The active (last) segment keeps its indexes in memory and appends index
// entries to the files only once the log bytes they point at are durable (after an fsync), so an entry in
// an index file always points at data that reached the disk: recovery can trust the last entry that
// verifies and re-scan only the tail behind it. Sealed segments load their indexes lazily through a
// bounded LRU (IndexCache) and rebuild them from the log when they are missing or damaged.

import fs from 'node:fs/promises';
import path from 'node:path';
import { offsetFileName, readAt, writeAt } from './fs-util.ts';
import { OffsetIndex, TimeIndex } from './indexes.ts';
import {
  BATCH_HEADER_SIZE,
  type BatchHeader,
  computeBatchCrc,
  LOG_OVERHEAD,
  lastOffsetOf,
  OFF_LENGTH,
  OFF_MAGIC,
  readBatchHeader,
} from './record-batch.ts';

/** bytes of log between two offset index entries */
export const INDEX_INTERVAL_BYTES = 4096;
const SCAN_BLOCK = 256 * 1024;
const MAX_REL = 0x7fffffff;

export interface ScannedBatch {
  position: number;
  header: BatchHeader;
  /** the whole batch, when the scanner was asked for data or CRC checks */
  data: Buffer | null;
}

/**
 * Sequential reader of batches in [start, end) of a log file, reading in large blocks. Stops at the end or
 * at the first framing/CRC problem (then `problem` says why and `position` is where valid data ends).
 */
export class BatchScanner {
  position: number;
  problem: string | null = null;
  private readonly fh: fs.FileHandle;
  private readonly end: number;
  private readonly wantData: boolean;
  private readonly verifyCrc: boolean;
  private readonly blockSize: number;
  private block: Buffer = Buffer.alloc(0);
  private blockStart = 0;

  constructor(
    fh: fs.FileHandle,
    start: number,
    end: number,
    opts: { data?: boolean; crc?: boolean; blockSize?: number } = {},
  ) {
    this.fh = fh;
    this.blockSize = opts.blockSize ?? SCAN_BLOCK;
    this.position = start;
    this.end = end;
    this.verifyCrc = opts.crc ?? false;
    this.wantData = (opts.data ?? false) || this.verifyCrc;
  }

  private async ensure(need: number): Promise<number> {
    const off = this.position - this.blockStart;
    if (off >= 0 && off + need <= this.block.length) return off;
    const len = Math.min(Math.max(this.blockSize, need), this.end - this.position);
    this.block = await readAt(this.fh, this.position, len);
    this.blockStart = this.position;
    return this.block.length >= need ? 0 : -1;
  }

  async next(): Promise<ScannedBatch | null> {
    if (this.position >= this.end || this.problem) return null;
    const left = this.end - this.position;
    if (left < BATCH_HEADER_SIZE) return this.fail(`truncated batch header (${left} bytes)`);
    let off = await this.ensure(BATCH_HEADER_SIZE);
    if (off < 0) return this.fail('short read');
    const size = this.block.readInt32BE(off + OFF_LENGTH) + LOG_OVERHEAD;
    const magic = this.block.readInt8(off + OFF_MAGIC);
    if (magic !== 2 || size < BATCH_HEADER_SIZE)
      return this.fail(`invalid batch header (magic ${magic}, size ${size})`);
    if (size > left) return this.fail(`truncated batch (${size} bytes declared, ${left} present)`);
    let data: Buffer | null = null;
    if (this.wantData) {
      off = await this.ensure(size);
      if (off < 0) return this.fail('short read');
      data = this.block.subarray(off, off + size);
    }
    const header = readBatchHeader(this.block, off);
    if (this.verifyCrc && data && computeBatchCrc(data, 0, size) !== header.crc) return this.fail('CRC mismatch');
    const position = this.position;
    this.position += size;
    return { position, header, data };
  }

  private fail(problem: string): null {
    this.problem = problem;
    return null;
  }
}

/** Bounded LRU of the in-memory indexes of sealed segments. */
export class IndexCache {
  private readonly maxBytes: number;
  private bytes = 0;
  private readonly entries = new Map<Segment, number>();

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  touch(seg: Segment, size: number): void {
    const prev = this.entries.get(seg);
    if (prev !== undefined) {
      this.entries.delete(seg);
      this.bytes -= prev;
    }
    this.entries.set(seg, size);
    this.bytes += size;
    for (const [s, b] of this.entries) {
      if (this.bytes <= this.maxBytes || s === seg) break;
      this.entries.delete(s);
      this.bytes -= b;
      s.dropIndexes();
    }
  }

  forget(seg: Segment): void {
    const prev = this.entries.get(seg);
    if (prev !== undefined) {
      this.entries.delete(seg);
      this.bytes -= prev;
    }
  }
}

export class Segment {
  readonly dir: string;
  readonly baseOffset: bigint;
  readonly fh: fs.FileHandle;
  /** bytes written (the active segment grows; appends update it only after the write completed) */
  size: number;
  /** largest batch max timestamp in the segment, -1n when unknown or none */
  maxTimestamp = -1n;
  /** offset after the last batch written to this segment (known for the active segment) */
  nextOffset: bigint;
  /** wall-clock base for segment.ms rolling */
  rollBaseMs = Date.now();

  private offsetIndex: OffsetIndex | null = null;
  private timeIndex: TimeIndex | null = null;
  private readonly cache: IndexCache;
  private bytesSinceIndex = 0;
  private lastBatchRel = 0;

  // active segment only: open index files and how many entries they hold
  private indexFh: fs.FileHandle | null = null;
  /** set once seal() completed: no more appends (a failed seal leaves the segment active) */
  sealed = false;
  private timeIndexFh: fs.FileHandle | null = null;
  private indexPersisted = 0;
  private timeIndexPersisted = 0;
  private indexIo: Promise<void> = Promise.resolve();

  private refs = 0;
  private retired = false;
  /** set while compaction swaps this segment's files: rebuilt indexes must then not be written to disk */
  private filesFrozen = false;
  private closed = false;

  private constructor(dir: string, baseOffset: bigint, fh: fs.FileHandle, size: number, cache: IndexCache) {
    this.dir = dir;
    this.baseOffset = baseOffset;
    this.fh = fh;
    this.size = size;
    this.nextOffset = baseOffset;
    this.cache = cache;
  }

  static paths(dir: string, baseOffset: bigint, suffix = '') {
    return {
      log: path.join(dir, offsetFileName(baseOffset, '.log') + suffix),
      index: path.join(dir, offsetFileName(baseOffset, '.index') + suffix),
      timeindex: path.join(dir, offsetFileName(baseOffset, '.timeindex') + suffix),
    };
  }

  get files() {
    return Segment.paths(this.dir, this.baseOffset);
  }

  get isActive(): boolean {
    return this.indexFh !== null;
  }

  /** Creates a new empty active segment (replacing any stale files of the same name). */
  static async createActive(dir: string, baseOffset: bigint, cache: IndexCache): Promise<Segment> {
    const p = Segment.paths(dir, baseOffset);
    const fh = await fs.open(p.log, 'w+');
    const seg = new Segment(dir, baseOffset, fh, 0, cache);
    seg.offsetIndex = new OffsetIndex();
    seg.timeIndex = new TimeIndex(undefined, 12);
    try {
      seg.indexFh = await fs.open(p.index, 'w+');
      seg.timeIndexFh = await fs.open(p.timeindex, 'w+');
    } catch (err) {
      // (a full disk) nothing of the new segment is kept open; a retry creates it afresh ('w+')
      await Promise.all([fh.close(), seg.indexFh?.close()].map((c) => c?.catch(() => undefined)));
      throw err;
    }
    return seg;
  }

  /** Opens an existing segment as sealed (indexes loaded lazily). */
  static async openSealed(dir: string, baseOffset: bigint, cache: IndexCache, suffix = ''): Promise<Segment> {
    const p = Segment.paths(dir, baseOffset, suffix);
    const fh = await fs.open(p.log, 'r+');
    const st = await fh.stat();
    return new Segment(dir, baseOffset, fh, st.size, cache);
  }

  rel(offset: bigint): number {
    return Number(offset - this.baseOffset);
  }

  // ----- reference counting: readers retain a segment so retention/compaction cannot close it under them

  retain(): void {
    this.refs++;
  }

  release(): void {
    this.refs--;
    if (this.refs === 0 && this.retired) void this.closeFiles();
  }

  /** Removes the segment from service: files are closed once the last reader releases it. */
  retire(): Promise<void> {
    this.retired = true;
    this.cache.forget(this);
    return this.refs === 0 ? this.closeFiles() : Promise.resolve();
  }

  async closeFiles(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.indexIo.catch(() => undefined);
    await this.fh.close().catch(() => undefined);
    await this.indexFh?.close().catch(() => undefined);
    await this.timeIndexFh?.close().catch(() => undefined);
    this.indexFh = null;
    this.timeIndexFh = null;
  }

  freezeFiles(): void {
    this.filesFrozen = true;
  }

  async unlinkFiles(): Promise<void> {
    const p = this.files;
    await Promise.all([p.log, p.index, p.timeindex].map((f) => fs.rm(f, { force: true })));
  }

  // ----- indexes

  dropIndexes(): void {
    if (this.isActive) return;
    this.offsetIndex = null;
    this.timeIndex = null;
  }

  /** Loads (or rebuilds) the indexes of a sealed segment. */
  async indexes(): Promise<{ offsets: OffsetIndex; times: TimeIndex }> {
    if (this.offsetIndex && this.timeIndex) {
      if (!this.isActive) this.cache.touch(this, this.offsetIndex.byteLength + this.timeIndex.byteLength);
      return { offsets: this.offsetIndex, times: this.timeIndex };
    }
    const p = this.files;
    const [idxData, timeData] = await Promise.all([readOptional(p.index), readOptional(p.timeindex)]);
    let offsets = idxData ? OffsetIndex.load(idxData, this.size) : null;
    let times = timeData ? TimeIndex.load(timeData, MAX_REL) : null;
    const damaged =
      !offsets ||
      !times ||
      offsets.count * 8 !== idxData!.length ||
      times.count * 12 !== timeData!.length ||
      (this.size > INDEX_INTERVAL_BYTES * 2 && offsets.count === 0) ||
      (this.size > 0 && times.count === 0);
    if (damaged) {
      const rebuilt = await this.rebuildIndexes();
      offsets = rebuilt.offsets;
      times = rebuilt.times;
      if (!this.filesFrozen && !this.retired) {
        await Promise.all([fs.writeFile(p.index, offsets.slice(0)), fs.writeFile(p.timeindex, times.slice(0))]);
      }
    }
    this.offsetIndex = offsets!;
    this.timeIndex = times!;
    if (times!.count > 0) this.maxTimestamp = times!.lastTimestamp;
    this.cache.touch(this, offsets!.byteLength + times!.byteLength);
    return { offsets: offsets!, times: times! };
  }

  /** The segment's largest timestamp (loads the time index when not known yet). */
  async largestTimestamp(): Promise<bigint> {
    if (this.maxTimestamp < 0n && this.size > 0) await this.indexes();
    return this.maxTimestamp;
  }

  /** Scans the whole segment and builds both indexes (also used for compaction output). */
  private async rebuildIndexes(): Promise<{ offsets: OffsetIndex; times: TimeIndex }> {
    const builder = new IndexBuilder(this.baseOffset);
    const scanner = new BatchScanner(this.fh, 0, this.size);
    for (let b = await scanner.next(); b; b = await scanner.next()) builder.add(b.header, b.position);
    builder.seal();
    return { offsets: builder.offsets, times: builder.times };
  }

  /** Records index entries for a batch just written at `position` of the active segment. */
  onBatchAppended(h: BatchHeader, position: number): void {
    const rel = this.rel(h.baseOffset);
    if (this.bytesSinceIndex >= INDEX_INTERVAL_BYTES) {
      this.offsetIndex!.append(rel, position);
      // (max timestamp of all earlier batches, the previous batch): see the time index invariant
      this.timeIndex!.maybeAppend(this.maxTimestamp, this.lastBatchRel);
      this.bytesSinceIndex = 0;
    }
    this.bytesSinceIndex += h.size;
    if (h.maxTimestamp > this.maxTimestamp) this.maxTimestamp = h.maxTimestamp;
    this.lastBatchRel = rel;
    this.nextOffset = lastOffsetOf(h) + 1n;
  }

  /**
   * Appends to the index files the entries that point below `nextOffsetLimit` (data known to be durable).
   * Index files are not fsynced here: they are rebuildable, and an entry only ever points at durable data.
   */
  persistIndexes(nextOffsetLimit: bigint): Promise<void> {
    const run = async () => {
      if (!this.indexFh || !this.timeIndexFh || this.closed) return;
      const limit = this.rel(nextOffsetLimit);
      const oi = this.offsetIndex!;
      const ti = this.timeIndex!;
      // time entries first: an offset entry must never be persisted without the time entries before it
      let t = ti.count;
      while (t > this.timeIndexPersisted && ti.relAt(t - 1) >= limit) t--;
      if (t > this.timeIndexPersisted) {
        await writeAt(
          this.timeIndexFh,
          ti.buf.subarray(this.timeIndexPersisted * 12, t * 12),
          this.timeIndexPersisted * 12,
        );
        this.timeIndexPersisted = t;
      }
      let n = oi.count;
      while (n > this.indexPersisted && oi.relAt(n - 1) >= limit) n--;
      if (n > this.indexPersisted) {
        await writeAt(this.indexFh, oi.buf.subarray(this.indexPersisted * 8, n * 8), this.indexPersisted * 8);
        this.indexPersisted = n;
      }
    };
    const p = this.indexIo.then(run);
    this.indexIo = p.catch(() => undefined);
    return p;
  }

  /**
   * Turns the active segment into a sealed one: fsync the log, write the final time index entry (so the
   * last entry holds the segment's max timestamp) and all index entries, fsync and close the index files.
   */
  async seal(): Promise<void> {
    if (this.sealed) return;
    await this.fh.datasync();
    this.timeIndex!.maybeAppend(this.maxTimestamp, this.lastBatchRel);
    await this.persistIndexes(this.nextOffset);
    await this.indexIo;
    await this.indexFh?.sync();
    await this.timeIndexFh?.sync();
    await this.indexFh?.close();
    await this.timeIndexFh?.close();
    this.indexFh = null;
    this.timeIndexFh = null;
    this.sealed = true;
    this.cache.touch(this, this.offsetIndex!.byteLength + this.timeIndex!.byteLength);
  }

  /**
   * Recovery of the last segment after a restart: finds the last index entry that points at a valid batch,
   * re-validates (framing + CRC) everything after it, truncates a torn or garbled tail, rebuilds the index
   * tail, and reopens the segment as active. Returns the number of bytes truncated.
   */
  async recoverAsActive(): Promise<number> {
    const p = this.files;
    const [idxData, timeData] = await Promise.all([readOptional(p.index), readOptional(p.timeindex)]);
    const offsets = idxData ? OffsetIndex.load(idxData, this.size) : new OffsetIndex();
    const times = timeData ? TimeIndex.load(timeData, MAX_REL) : new TimeIndex(undefined, 12);
    // walk index entries backwards to the last one that points at a batch with the expected offset and CRC
    let start = 0;
    let keep = 0;
    for (let e = offsets.count - 1; e >= 0; e--) {
      const pos = offsets.positionAt(e);
      if (await this.validBatchAt(pos, this.baseOffset + BigInt(offsets.relAt(e)))) {
        start = pos;
        keep = e + 1;
        break;
      }
    }
    offsets.truncateTo(keep);
    times.truncateToRel(keep > 0 ? offsets.relAt(keep - 1) + 1 : 0);
    this.maxTimestamp = times.lastTimestamp;
    this.offsetIndex = offsets;
    this.timeIndex = times;
    this.bytesSinceIndex = 0;
    const scanner = new BatchScanner(this.fh, start, this.size, { crc: true });
    let last: BatchHeader | null = null;
    for (let b = await scanner.next(); b; b = await scanner.next()) {
      this.onBatchAppended(b.header, b.position);
      last = b.header;
    }
    if (last === null && start > 0) throw new Error('index entry verified but no batch scanned'); // unreachable
    const truncated = this.size - scanner.position;
    if (truncated > 0) {
      await this.fh.truncate(scanner.position);
      await this.fh.datasync();
      this.size = scanner.position;
    }
    if (last === null) this.nextOffset = this.baseOffset;
    // segment.ms rolls relative to the first batch's timestamp, like Kafka (bounded by now)
    if (this.size >= BATCH_HEADER_SIZE) {
      const first = readBatchHeader(await readAt(this.fh, 0, BATCH_HEADER_SIZE), 0);
      const ts = Number(first.maxTimestamp);
      this.rollBaseMs = ts > 0 && ts <= Date.now() ? ts : Date.now();
    }
    // rewrite the index files from the verified in-memory state
    this.indexFh = await fs.open(p.index, 'w+');
    this.timeIndexFh = await fs.open(p.timeindex, 'w+');
    this.indexPersisted = 0;
    this.timeIndexPersisted = 0;
    await this.persistIndexes(this.nextOffset);
    return truncated;
  }

  private async validBatchAt(pos: number, expectedBase: bigint): Promise<boolean> {
    if (pos + BATCH_HEADER_SIZE > this.size) return false;
    const head = await readAt(this.fh, pos, BATCH_HEADER_SIZE);
    if (head.length < BATCH_HEADER_SIZE || head.readInt8(OFF_MAGIC) !== 2) return false;
    const h = readBatchHeader(head, 0);
    if (h.baseOffset !== expectedBase || h.size < BATCH_HEADER_SIZE || pos + h.size > this.size) return false;
    const whole = await readAt(this.fh, pos, h.size);
    return whole.length === h.size && computeBatchCrc(whole, 0, h.size) === h.crc;
  }

  /** File position to start scanning for `offset` (a batch at or before the one containing it). */
  async lookupPosition(offset: bigint): Promise<number> {
    if (offset <= this.baseOffset) return 0;
    const { offsets } = await this.indexes();
    return offsets.lookup(Math.min(this.rel(offset), MAX_REL));
  }

  /** File position to start scanning for the first batch with max timestamp >= ts. */
  async lookupTimestamp(ts: bigint): Promise<number> {
    const { offsets, times } = await this.indexes();
    const rel = times.lastBefore(ts);
    return rel < 0 ? 0 : offsets.lookup(rel);
  }
}

/** Builds offset and time indexes for a sequence of batches (index rebuilds, compaction output). */
export class IndexBuilder {
  readonly offsets = new OffsetIndex();
  readonly times = new TimeIndex(undefined, 12);
  private readonly base: bigint;
  private bytesSince = 0;
  private maxTs = -1n;
  private lastRel = 0;

  constructor(base: bigint) {
    this.base = base;
  }

  add(h: BatchHeader, position: number): void {
    const rel = Number(h.baseOffset - this.base);
    if (this.bytesSince >= INDEX_INTERVAL_BYTES) {
      this.offsets.append(rel, position);
      this.times.maybeAppend(this.maxTs, this.lastRel);
      this.bytesSince = 0;
    }
    this.bytesSince += h.size;
    if (h.maxTimestamp > this.maxTs) this.maxTs = h.maxTimestamp;
    this.lastRel = rel;
  }

  seal(): void {
    this.times.maybeAppend(this.maxTs, this.lastRel);
  }
}

async function readOptional(file: string): Promise<Buffer | null> {
  try {
    return await fs.readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
