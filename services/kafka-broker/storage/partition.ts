// One partition's log: `<dataDir>/<topic>-<partition>/` holding segments, producer-state snapshots,
// `log-start-offset` and `cleaner-checkpoint`.
//
// Appends are serialized per partition (a FIFO queue); the fsync is NOT part of the serialized section:
// with fsync 'always' each append queues a waiter and a per-partition group-commit loop fsyncs once for
// every append that completed its write meanwhile, so concurrent producers share fsyncs. The high
// watermark (the readable end) only covers data that is durable under the policy: fsynced data with
// 'always', written data with an interval (acks then mean "in the OS page cache").
//
// Maintenance (retention, compaction, segment deletion after DeleteRecords) is serialized on a second
// queue, so it never holds up appends; it only touches sealed segments, and readers pin the segments they
// read (reference counts), so swapped or deleted segment files are closed only after the last reader.

import fs from 'node:fs/promises';
import path from 'node:path';
import type { AppendResult, PartitionStore, ReadResult, TopicConfig } from './api.ts';
import { OffsetOutOfRangeError } from './api.ts';
import { addSegmentToMap, cleanSegment, type OffsetMap, Yielder } from './compaction.ts';
import { hasPolicy } from './config.ts';
import { fsyncDir, readAt, SerialQueue, writeAt, writeFileAtomic } from './fs-util.ts';
import { type ProducerEntry, ProducerStateManager } from './producer-state.ts';
import {
  type BatchHeader,
  BATCH_HEADER_SIZE,
  canDecode,
  Compression,
  compressionOf,
  decodeRecordsSection,
  ErrorCode,
  findNullKey,
  isProblem,
  lastOffsetOf,
  LOG_OVERHEAD,
  OFF_LENGTH,
  type ProducedBatch,
  recordsSection,
  setBaseOffset,
  setLogAppendTime,
  TIMESTAMP_TYPE_MASK,
  validateProducedBatches,
} from './record-batch.ts';
import { BatchScanner, type IndexCache, Segment } from './segment.ts';

const INT32_MAX = 0x7fffffff;
/** upper bound on distinct keys held by one compaction pass (~100 bytes each) */
const MAX_COMPACTION_KEYS = 500_000;
/** Kafka's min.cleanable.dirty.ratio default: clean when at least half the cleanable bytes are new */
const MIN_CLEANABLE_DIRTY_RATIO = 0.5;
/** producer snapshots kept per partition */
const SNAPSHOTS_KEPT = 2;

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface PartitionContext {
  topic: string;
  partition: number;
  dir: string;
  config: () => TopicConfig;
  fsync: 'always' | number;
  cache: IndexCache;
  logger: Logger;
  producerIdExpirationMs: number;
}

interface SyncWaiter {
  seg: Segment;
  endOffset: bigint;
  resolve: () => void;
  reject: (err: Error) => void;
}

interface AppendOutcome {
  result: AppendResult;
  /** resolves when the appended (or duplicate) data is durable */
  durable: Promise<void> | null;
}

class ClosedError extends Error {}

export class Partition implements PartitionStore {
  readonly topic: string;
  readonly partition: number;
  readonly dir: string;
  private readonly ctx: PartitionContext;

  private segments: Segment[] = [];
  /** log end offset: next offset to assign */
  private leo = 0n;
  /** readable end: everything below is durable under the fsync policy */
  private hw = 0n;
  private logStart = 0n;
  private readonly producers = new ProducerStateManager();
  private readonly appendQueue = new SerialQueue();
  private readonly maintenanceQueue = new SerialQueue();
  private readonly checkpointQueue = new SerialQueue();
  private readonly listeners = new Set<() => void>();
  private failure: Error | null = null;
  private closed = false;

  // group commit ('always')
  private syncWaiters: SyncWaiter[] = [];
  private syncLoop: Promise<void> | null = null;
  // interval flushing
  private flushing: Promise<void> | null = null;
  private syncedSize = 0;
  private syncedSegment: Segment | null = null;

  // compaction progress
  private cleanedUpTo = 0n;
  private tombstoneExpiryMs: number | null = null;

  private constructor(ctx: PartitionContext) {
    this.ctx = ctx;
    this.topic = ctx.topic;
    this.partition = ctx.partition;
    this.dir = ctx.dir;
  }

  private get active(): Segment {
    return this.segments[this.segments.length - 1];
  }

  // =========================================================================================== recovery

  static async open(ctx: PartitionContext): Promise<Partition> {
    const p = new Partition(ctx);
    await p.load();
    return p;
  }

  private async load(): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true });
    const names = await fs.readdir(this.dir);
    const bases: bigint[] = [];
    const present = new Set(names);
    for (const n of names) {
      // leftovers of an interrupted compaction or atomic write: the originals are intact
      if (n.endsWith('.cleaned') || n.endsWith('.tmp')) await fs.rm(path.join(this.dir, n), { force: true });
      else if (/^\d{20}\.log$/.test(n)) bases.push(BigInt(n.slice(0, 20)));
      else if (/^\d{20}\.(index|timeindex)$/.test(n) && !present.has(`${n.slice(0, 20)}.log`)) {
        await fs.rm(path.join(this.dir, n), { force: true });
      }
    }
    bases.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const checkpoint = await this.readLogStartCheckpoint();
    if (bases.length === 0) {
      this.segments = [await Segment.createActive(this.dir, checkpoint ?? 0n, this.ctx.cache)];
      await fsyncDir(this.dir);
    } else {
      for (const b of bases) this.segments.push(await Segment.openSealed(this.dir, b, this.ctx.cache));
      const truncated = await this.active.recoverAsActive();
      if (truncated > 0) {
        this.ctx.logger.warn(
          { topic: this.topic, partition: this.partition, segment: this.active.files.log, bytes: truncated },
          'log recovery: truncated an invalid tail',
        );
      }
    }
    this.leo = this.active.nextOffset;
    if (this.active.size === 0) this.leo = this.active.baseOffset;
    this.hw = this.leo;
    this.syncedSegment = this.active;
    this.syncedSize = this.active.size;
    this.logStart = this.segments[0].baseOffset;
    // DeleteRecords may have moved the start inside the first segment (never beyond the log end)
    if (checkpoint !== null && checkpoint > this.logStart) this.logStart = checkpoint;
    if (this.logStart > this.leo) this.logStart = this.leo;
    await this.rebuildProducerState();
    await this.readCleanerCheckpoint();
  }

  /** newest valid snapshot at or below the log end, then the batches logged after it */
  private async rebuildProducerState(): Promise<void> {
    const snap = await this.producers.loadLatestSnapshot(this.dir, this.leo);
    const from = snap ?? this.segments[0].baseOffset;
    if (from >= this.leo) return;
    await this.forEachBatchFrom(from, (h) => {
      if (h.baseOffset >= from) this.producers.replay(h);
    });
  }

  /** Calls `fn` for the header of every batch whose offsets reach `from` or beyond. */
  private async forEachBatchFrom(from: bigint, fn: (h: BatchHeader) => void): Promise<void> {
    for (let i = 0; i < this.segments.length; i++) {
      const seg = this.segments[i];
      const next = this.segments[i + 1];
      if (next && next.baseOffset <= from) continue;
      const scanner = new BatchScanner(seg.fh, await seg.lookupPosition(from), seg.size);
      for (let b = await scanner.next(); b; b = await scanner.next()) {
        if (lastOffsetOf(b.header) >= from) fn(b.header);
      }
    }
  }

  private async readLogStartCheckpoint(): Promise<bigint | null> {
    try {
      const text = (await fs.readFile(path.join(this.dir, 'log-start-offset'), 'utf8')).trim();
      return /^\d+$/.test(text) ? BigInt(text) : null;
    } catch {
      return null;
    }
  }

  private persistLogStart(): Promise<void> {
    return this.checkpointQueue.run(() =>
      writeFileAtomic(path.join(this.dir, 'log-start-offset'), `${this.logStart}\n`),
    );
  }

  private async readCleanerCheckpoint(): Promise<void> {
    try {
      const j = JSON.parse(await fs.readFile(path.join(this.dir, 'cleaner-checkpoint'), 'utf8'));
      this.cleanedUpTo = BigInt(j.cleanedUpTo);
      this.tombstoneExpiryMs = typeof j.tombstoneExpiryMs === 'number' ? j.tombstoneExpiryMs : null;
    } catch {
      this.cleanedUpTo = 0n;
      this.tombstoneExpiryMs = null;
    }
  }

  // ============================================================================================= append

  /** Note: offsets (and LogAppendTime timestamps) are written into `records` in place. */
  async append(records: Buffer): Promise<AppendResult> {
    if (this.closed) return this.errorResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'partition is closed or deleted');
    const cfg = this.ctx.config();
    const batches = validateProducedBatches(records, cfg.maxMessageBytes);
    if (isProblem(batches)) return this.errorResult(batches.errorCode, batches.message);
    if (hasPolicy(cfg, 'compact')) {
      const problem = await findNullKeyInBatches(records, batches);
      if (problem) return this.errorResult(ErrorCode.INVALID_RECORD, problem);
    }
    let outcome: AppendOutcome;
    try {
      outcome = await this.appendQueue.run(() => this.appendLocked(records, batches, cfg));
    } catch (err) {
      if (err instanceof ClosedError) return this.errorResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, err.message);
      throw err;
    }
    if (outcome.durable) {
      try {
        await outcome.durable;
      } catch (err) {
        return this.errorResult(ErrorCode.KAFKA_STORAGE_ERROR, `fsync failed: ${(err as Error).message}`);
      }
    }
    return outcome.result;
  }

  private errorResult(errorCode: number, errorMessage: string): AppendResult {
    return { errorCode, errorMessage, baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset: this.logStart };
  }

  private async appendLocked(records: Buffer, batches: ProducedBatch[], cfg: TopicConfig): Promise<AppendOutcome> {
    if (this.closed) throw new ClosedError('partition is closed or deleted');
    if (this.failure) {
      return {
        result: this.errorResult(ErrorCode.KAFKA_STORAGE_ERROR, `log is offline: ${this.failure.message}`),
        durable: null,
      };
    }
    const now = Date.now();
    // 1. idempotent producer checks against the current state, staged so a rejected request changes nothing
    const staged = new Map<bigint, ProducerEntry>();
    let next = this.leo;
    for (const { header: h } of batches) {
      if (h.producerId >= 0n) {
        const entry = staged.get(h.producerId) ?? this.producers.producers.get(h.producerId);
        const check = ProducerStateManager.check(entry, h);
        if (check.kind === 'duplicate') {
          // a retry of a batch we already have: answer with its original offset, append nothing
          return {
            result: {
              errorCode: 0,
              baseOffset: check.meta.baseOffset,
              logAppendTimeMs: -1n,
              logStartOffset: this.logStart,
            },
            durable: this.durableUpTo(check.meta.lastOffset + 1n),
          };
        }
        if (check.kind === 'error') return { result: this.errorResult(check.errorCode, check.message), durable: null };
        staged.set(h.producerId, ProducerStateManager.advance(entry, { ...h, baseOffset: next }, now));
      }
      next += BigInt(h.lastOffsetDelta) + 1n;
    }
    // 2. roll the segment when this append would overflow it (size, age, or int32 relative offsets)
    // (a sealed active segment is a roll that failed half-way: its successor is still to be created)
    if (this.active.sealed || this.shouldRoll(records.length, next, cfg, now)) {
      try {
        await this.roll();
      } catch (err) {
        // a full disk: the active segment stays active (a failed seal) or sealed awaiting its successor;
        // this append is refused and the next one tries the roll again, so the log comes back by itself
        this.ctx.logger.warn(
          { err, topic: this.topic, partition: this.partition },
          'segment roll failed; the next append retries it',
        );
        return {
          result: this.errorResult(ErrorCode.KAFKA_STORAGE_ERROR, `segment roll failed: ${(err as Error).message}`),
          durable: null,
        };
      }
    }
    // 3. assign offsets (the baseOffset field is outside the CRC); LogAppendTime rewrites timestamps + CRC
    const logAppendTime = cfg.messageTimestampType === 'LogAppendTime';
    let offset = this.leo;
    for (const b of batches) {
      setBaseOffset(records, b.position, offset);
      b.header.baseOffset = offset;
      if (logAppendTime) {
        setLogAppendTime(records, b.position, b.header.size, BigInt(now));
        b.header.maxTimestamp = BigInt(now);
        b.header.attributes |= TIMESTAMP_TYPE_MASK;
      }
      offset += BigInt(b.header.lastOffsetDelta) + 1n;
    }
    // 4. write
    const seg = this.active;
    const position = seg.size;
    try {
      await writeAt(seg.fh, records, position);
    } catch (err) {
      await this.undoPartialWrite(seg, position, err as Error);
      return {
        result: this.errorResult(ErrorCode.KAFKA_STORAGE_ERROR, `write failed: ${(err as Error).message}`),
        durable: null,
      };
    }
    seg.size += records.length;
    for (const b of batches) seg.onBatchAppended(b.header, position + b.position);
    const baseOffset = this.leo;
    this.leo = offset;
    for (const [id, e] of staged) this.producers.producers.set(id, e);
    const result: AppendResult = {
      errorCode: 0,
      baseOffset,
      logAppendTimeMs: logAppendTime ? BigInt(now) : -1n,
      logStartOffset: this.logStart,
    };
    if (this.ctx.fsync === 'always') return { result, durable: this.requestSync(seg, offset) };
    this.advanceHw(offset);
    return { result, durable: null };
  }

  private shouldRoll(bytes: number, nextOffset: bigint, cfg: TopicConfig, now: number): boolean {
    const seg = this.active;
    if (seg.size === 0) return false;
    return (
      seg.size + bytes > cfg.segmentBytes ||
      seg.size + bytes > INT32_MAX ||
      now - seg.rollBaseMs > cfg.segmentMs ||
      nextOffset - 1n - seg.baseOffset > BigInt(INT32_MAX)
    );
  }

  /** Seals the active segment (fsync + indexes) and starts a new one at the log end offset. */
  private async roll(): Promise<void> {
    const old = this.active;
    await old.seal(); // a no-op when an earlier roll sealed it and failed to create the next segment
    const seg = await Segment.createActive(this.dir, this.leo, this.ctx.cache);
    await fsyncDir(this.dir);
    this.segments.push(seg);
    this.syncedSegment = seg;
    this.syncedSize = 0;
    // everything in the sealed segment is durable now
    this.advanceHw(this.leo);
    // the producer snapshot only shortens recovery (which replays the batches logged after the newest
    // snapshot): failing to write one, on a full disk, must not take the log offline
    try {
      await this.producers.writeSnapshot(this.dir, this.leo);
      await ProducerStateManager.pruneSnapshots(this.dir, SNAPSHOTS_KEPT);
    } catch (err) {
      this.ctx.logger.warn(
        { err, topic: this.topic, partition: this.partition },
        'producer snapshot not written at segment roll (the next roll or a clean close writes one)',
      );
    }
  }

  private async undoPartialWrite(seg: Segment, position: number, err: Error): Promise<void> {
    this.ctx.logger.error({ err, topic: this.topic, partition: this.partition }, 'log write failed');
    try {
      await seg.fh.truncate(position);
    } catch (truncErr) {
      this.setFailed(truncErr as Error);
    }
  }

  private setFailed(err: Error): void {
    if (!this.failure)
      this.ctx.logger.error({ err, topic: this.topic, partition: this.partition }, 'log taken offline');
    this.failure = err;
  }

  private advanceHw(offset: bigint): void {
    if (offset <= this.hw) return;
    this.hw = offset;
    for (const l of this.listeners) {
      try {
        l();
      } catch (err) {
        this.ctx.logger.warn({ err }, 'onAppend listener threw');
      }
    }
  }

  // ------------------------------------------------------------------ durability (group commit)

  /** Resolves once everything below `endOffset` is durable. */
  private durableUpTo(endOffset: bigint): Promise<void> | null {
    if (this.ctx.fsync !== 'always' || endOffset <= this.hw) return null;
    return this.requestSync(this.active, this.leo);
  }

  private requestSync(seg: Segment, endOffset: bigint): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.syncWaiters.push({ seg, endOffset, resolve, reject });
      if (!this.syncLoop) this.syncLoop = this.runSyncLoop();
    });
  }

  /**
   * One fsync per round covers every write that completed before the round started; writes completing
   * during an fsync wait for the next round. Yielding one macrotask first lets appends that arrive in the
   * same tick (several connections, several partitions of one request) share the first fsync.
   */
  private async runSyncLoop(): Promise<void> {
    await new Promise<void>((r) => setImmediate(r));
    try {
      while (this.syncWaiters.length > 0) {
        const round = this.syncWaiters;
        this.syncWaiters = [];
        const segs = new Set(round.map((w) => w.seg));
        let end = 0n;
        for (const w of round) if (w.endOffset > end) end = w.endOffset;
        try {
          if (this.failure) throw this.failure;
          // a segment sealed (or closed) meanwhile was fsynced by seal(): nothing left to do for it
          for (const s of segs) if (s.isActive) await s.fh.datasync();
        } catch (err) {
          this.setFailed(err as Error);
          for (const w of round) w.reject(err as Error);
          continue;
        }
        this.advanceHw(end);
        for (const w of round) w.resolve();
        for (const s of segs) s.persistIndexes(end).catch((err) => this.indexWriteFailed(err));
      }
    } finally {
      this.syncLoop = null;
    }
  }

  private indexWriteFailed(err: unknown): void {
    // not fatal: indexes are rebuilt on recovery; the log itself is fine
    this.ctx.logger.warn({ err, topic: this.topic, partition: this.partition }, 'index write failed');
  }

  /** Interval mode: fsync what was written since the last flush. Also used on close. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    const run = async () => {
      const seg = this.active;
      const size = seg.size;
      const next = this.leo;
      if ((seg === this.syncedSegment && size === this.syncedSize) || !seg.isActive) return;
      try {
        await seg.fh.datasync();
      } catch (err) {
        this.setFailed(err as Error);
        return;
      }
      if (seg === this.active) {
        this.syncedSegment = seg;
        this.syncedSize = size;
      }
      await seg.persistIndexes(next).catch((err) => this.indexWriteFailed(err));
    };
    this.flushing = run().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  // =============================================================================================== read

  highWatermark(): bigint {
    return this.hw;
  }

  logStartOffset(): bigint {
    return this.logStart;
  }

  onAppend(listener: () => void): () => void {
    const l = () => listener();
    this.listeners.add(l);
    return () => {
      this.listeners.delete(l);
    };
  }

  /** Segments from the one that may contain `offset` to the end, pinned until `release`. */
  private pinFrom(offset: bigint): Segment[] {
    let lo = 0;
    let hi = this.segments.length - 1;
    let idx = 0;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.segments[mid].baseOffset <= offset) {
        idx = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    const pinned = this.segments.slice(idx);
    for (const s of pinned) s.retain();
    return pinned;
  }

  async read(fetchOffset: bigint, maxBytes: number): Promise<ReadResult> {
    const hw = this.hw;
    const logStartOffset = this.logStart;
    const empty: ReadResult = { errorCode: 0, chunks: [], bytes: 0, highWatermark: hw, logStartOffset };
    // a store reference kept across a topic deletion
    if (this.closed) return { ...empty, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION };
    if (fetchOffset < logStartOffset || fetchOffset > hw) return { ...empty, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE };
    if (fetchOffset === hw) return empty;
    const pinned = this.pinFrom(fetchOffset);
    try {
      for (const seg of pinned) {
        const r = await readSegment(seg, fetchOffset, maxBytes, hw);
        if (r === 'end') return empty;
        if (r) return { ...empty, chunks: [r], bytes: r.length };
      }
      return empty;
    } finally {
      for (const s of pinned) s.release();
    }
  }

  async offsetForTimestamp(ts: bigint): Promise<{ offset: bigint; timestamp: bigint } | null> {
    if (this.closed) return null;
    const hw = this.hw;
    const start = this.logStart;
    const pinned = this.pinFrom(start);
    try {
      for (const seg of pinned) {
        const largest = seg === this.active ? seg.maxTimestamp : await seg.largestTimestamp();
        if (largest < ts) continue;
        const scanner = new BatchScanner(seg.fh, await seg.lookupTimestamp(ts), seg.size, { data: true });
        for (let b = await scanner.next(); b; b = await scanner.next()) {
          const h = b.header;
          if (h.baseOffset >= hw) return null;
          if (lastOffsetOf(h) < start || h.maxTimestamp < ts) continue;
          const found = await firstRecordAtOrAfter(b.data!, h, ts, start);
          if (found) return found;
        }
      }
      return null;
    } finally {
      for (const s of pinned) s.release();
    }
  }

  // ======================================================================================== maintenance

  async deleteRecordsBefore(offset: bigint): Promise<bigint> {
    if (offset > this.hw) throw new OffsetOutOfRangeError(`offset ${offset} is beyond the high watermark ${this.hw}`);
    if (offset <= this.logStart) return this.logStart;
    this.logStart = offset;
    await this.persistLogStart();
    // whole segments below the new start go asynchronously, behind any running maintenance
    void this.maintenanceQueue
      .run(() => this.deleteSegmentsBelowLogStart())
      .catch((err) => this.maintenanceFailed(err));
    return this.logStart;
  }

  private maintenanceFailed(err: unknown): void {
    this.ctx.logger.error({ err, topic: this.topic, partition: this.partition }, 'log maintenance failed');
  }

  /** Retention, compaction, producer expiry. Serialized with other maintenance of this partition. */
  maintain(nowMs: number): Promise<void> {
    return this.maintenanceQueue.run(async () => {
      if (this.closed) return;
      const cfg = this.ctx.config();
      if (hasPolicy(cfg, 'delete')) await this.applyRetention(cfg, nowMs);
      await this.deleteSegmentsBelowLogStart();
      if (hasPolicy(cfg, 'compact')) await this.compact(cfg, nowMs);
      this.producers.expire(nowMs, this.ctx.producerIdExpirationMs);
    });
  }

  private async applyRetention(cfg: TopicConfig, nowMs: number): Promise<void> {
    let deleted = false;
    if (cfg.retentionMs >= 0) {
      while (this.segments.length > 1 && !this.closed) {
        const seg = this.segments[0];
        let ts = await seg.largestTimestamp();
        if (ts < 0n) ts = BigInt(Math.floor((await seg.fh.stat()).mtimeMs));
        if (BigInt(nowMs) - ts <= BigInt(cfg.retentionMs)) break;
        await this.deleteOldestSegment();
        deleted = true;
      }
    }
    if (cfg.retentionBytes >= 0) {
      let excess = this.segments.reduce((n, s) => n + s.size, 0) - cfg.retentionBytes;
      while (this.segments.length > 1 && excess >= this.segments[0].size && !this.closed) {
        excess -= this.segments[0].size;
        await this.deleteOldestSegment();
        deleted = true;
      }
    }
    if (deleted) {
      this.ctx.logger.info(
        { topic: this.topic, partition: this.partition, logStartOffset: this.logStart },
        'retention deleted segments',
      );
    }
  }

  private async deleteSegmentsBelowLogStart(): Promise<void> {
    while (this.segments.length > 1 && this.segments[1].baseOffset <= this.logStart && !this.closed) {
      await this.deleteOldestSegment();
    }
  }

  /** Drops the first segment (never the active one) and advances the log start offset past it. */
  private async deleteOldestSegment(): Promise<void> {
    const seg = this.segments[0];
    const nextBase = this.segments[1].baseOffset;
    if (nextBase > this.logStart) {
      this.logStart = nextBase;
      await this.persistLogStart();
    }
    this.segments.shift();
    void seg.retire();
    await seg.unlinkFiles();
  }

  /**
   * One cleaning pass over the cleanable range: sealed segments whose newest data is older than
   * min.compaction.lag.ms. Builds the key map from the part not cleaned yet (bounded in size), then
   * rewrites every segment of the range that loses records, swapping files atomically. Runs only when
   * there is new data to clean or a retained tombstone has become removable.
   */
  private async compact(cfg: TopicConfig, nowMs: number): Promise<void> {
    const horizon = BigInt(nowMs - cfg.minCompactionLagMs);
    const cleanable: Segment[] = [];
    for (const seg of this.segments.slice(0, -1)) {
      if ((await seg.largestTimestamp()) > horizon) break;
      cleanable.push(seg);
    }
    if (cleanable.length === 0) return;
    const endOf = (seg: Segment) => this.segments[this.segments.indexOf(seg) + 1].baseOffset;
    let end = endOf(cleanable[cleanable.length - 1]);
    let dirtyBytes = 0;
    let totalBytes = 0;
    for (const seg of cleanable) {
      totalBytes += seg.size;
      if (endOf(seg) > this.cleanedUpTo) dirtyBytes += seg.size;
    }
    // every pass re-reads the whole cleanable range, so wait until enough of it is new (or a tombstone
    // is due); an all-empty dirty range still advances the checkpoint
    const dirty = this.cleanedUpTo < end && (dirtyBytes === 0 || dirtyBytes >= totalBytes * MIN_CLEANABLE_DIRTY_RATIO);
    const tombstonesDue = this.tombstoneExpiryMs !== null && this.tombstoneExpiryMs <= nowMs;
    if (!dirty && !tombstonesDue) return;

    const y = new Yielder();
    const map: OffsetMap = new Map();
    for (let i = 0; i < cleanable.length; i++) {
      if (endOf(cleanable[i]) <= this.cleanedUpTo) continue;
      await addSegmentToMap(cleanable[i], map, y);
      if (map.size > MAX_COMPACTION_KEYS && i < cleanable.length - 1) {
        cleanable.length = i + 1; // clean up to here now, the rest next pass
        end = endOf(cleanable[i]);
        break;
      }
    }
    let tombstoneExpiryMs: number | null = null;
    let rewritten = 0;
    for (const seg of cleanable) {
      if (this.closed || !this.segments.includes(seg)) return;
      const outcome = await cleanSegment(seg, map, { nowMs, deleteRetentionMs: cfg.deleteRetentionMs }, y);
      if (outcome.tombstoneExpiryMs !== null) {
        tombstoneExpiryMs =
          tombstoneExpiryMs === null
            ? outcome.tombstoneExpiryMs
            : Math.min(tombstoneExpiryMs, outcome.tombstoneExpiryMs);
      }
      if (outcome.changed) {
        await this.swapInCleaned(seg, outcome.maxTimestamp);
        rewritten++;
      }
    }
    this.cleanedUpTo = end;
    this.tombstoneExpiryMs = tombstoneExpiryMs;
    await writeFileAtomic(
      path.join(this.dir, 'cleaner-checkpoint'),
      JSON.stringify({ cleanedUpTo: end.toString(), tombstoneExpiryMs }),
    );
    if (rewritten > 0) {
      this.ctx.logger.info(
        { topic: this.topic, partition: this.partition, segments: rewritten, cleanedUpTo: end.toString() },
        'compacted',
      );
    }
  }

  /**
   * Replaces a sealed segment's files with the `.cleaned` ones. Order matters for crash safety: the old
   * indexes go first (a missing index is rebuilt from whatever log is there), then the atomic rename of
   * the log, then the new indexes; leftover `.cleaned` files are discarded on open.
   */
  private async swapInCleaned(seg: Segment, maxTimestamp: bigint): Promise<void> {
    const p = seg.files;
    const c = Segment.paths(this.dir, seg.baseOffset, '.cleaned');
    seg.freezeFiles();
    await fs.rm(p.index, { force: true });
    await fs.rm(p.timeindex, { force: true });
    await fs.rename(c.log, p.log);
    await fs.rename(c.index, p.index);
    await fs.rename(c.timeindex, p.timeindex);
    await fsyncDir(this.dir);
    const fresh = await Segment.openSealed(this.dir, seg.baseOffset, this.ctx.cache);
    fresh.maxTimestamp = maxTimestamp;
    const idx = this.segments.indexOf(seg);
    if (idx >= 0) this.segments[idx] = fresh;
    else void fresh.retire();
    void seg.retire();
  }

  // ============================================================================================ closing

  /** Flushes everything, writes a producer snapshot and closes the files. */
  async close(opts: { discard?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.appendQueue.idle();
    await this.maintenanceQueue.idle();
    await this.checkpointQueue.idle();
    while (this.syncLoop) await this.syncLoop;
    if (this.flushing) await this.flushing;
    if (!opts.discard && !this.failure) {
      try {
        const seg = this.active;
        await seg.fh.datasync();
        await seg.persistIndexes(this.leo);
        await this.producers.writeSnapshot(this.dir, this.leo);
        await ProducerStateManager.pruneSnapshots(this.dir, SNAPSHOTS_KEPT);
      } catch (err) {
        this.ctx.logger.error({ err, topic: this.topic, partition: this.partition }, 'error while closing the log');
      }
    }
    this.listeners.clear();
    await Promise.all(this.segments.map((s) => s.retire()));
  }
}

// ------------------------------------------------------------------------------------------- helpers

/** Finds the null-key problem, if any, in batches produced to a compacted topic. */
async function findNullKeyInBatches(records: Buffer, batches: ProducedBatch[]): Promise<string | null> {
  for (const { position, header: h } of batches) {
    const codec = compressionOf(h.attributes);
    // snappy/lz4 batches cannot be inspected by the broker and are accepted as sent
    if (codec !== Compression.none && codec !== Compression.gzip && codec !== Compression.zstd) continue;
    let section: Buffer;
    try {
      section = await recordsSection(records.subarray(position, position + h.size), h);
    } catch (err) {
      return `cannot decompress batch: ${(err as Error).message}`;
    }
    const problem = findNullKey(section, h.recordCount);
    if (problem) return problem;
  }
  return null;
}

/**
 * Reads whole batches of one segment starting with the first batch that reaches `fetchOffset`: one
 * positioned read of about `maxBytes` (or the first batch, if larger), cut at the last whole batch below
 * the high watermark. Returns null when the segment holds nothing at or after fetchOffset, 'end' when the
 * next batch is at or beyond the high watermark.
 */
async function readSegment(
  seg: Segment,
  fetchOffset: bigint,
  maxBytes: number,
  hw: bigint,
): Promise<Buffer | 'end' | null> {
  const end = seg.size;
  // the index entry is at most ~4 KiB of batches before the target: seek with small reads
  const scanner = new BatchScanner(seg.fh, await seg.lookupPosition(fetchOffset), end, { blockSize: 16 * 1024 });
  let first: { position: number; size: number } | null = null;
  for (let b = await scanner.next(); b; b = await scanner.next()) {
    if (b.header.baseOffset >= hw) return 'end';
    if (lastOffsetOf(b.header) >= fetchOffset) {
      first = { position: b.position, size: b.header.size };
      break;
    }
  }
  if (!first) {
    if (scanner.problem) throw new Error(`corrupt log segment ${seg.files.log}: ${scanner.problem}`);
    return null;
  }
  const want = Math.min(end - first.position, Math.max(maxBytes, first.size));
  const buf = await readAt(seg.fh, first.position, want);
  let used = 0;
  while (used + BATCH_HEADER_SIZE <= buf.length) {
    const size = buf.readInt32BE(used + OFF_LENGTH) + LOG_OVERHEAD;
    if (used + size > buf.length || buf.readBigInt64BE(used) >= hw) break;
    used += size;
  }
  return buf.subarray(0, used);
}

/** The first record of a batch with timestamp >= ts and offset >= minOffset. */
async function firstRecordAtOrAfter(
  batch: Buffer,
  h: BatchHeader,
  ts: bigint,
  minOffset: bigint,
): Promise<{ offset: bigint; timestamp: bigint } | null> {
  const atLeast = (o: bigint) => (o < minOffset ? minOffset : o);
  // LogAppendTime: every record carries the batch's max timestamp
  if ((h.attributes & TIMESTAMP_TYPE_MASK) !== 0 || !canDecode(h.attributes)) {
    return { offset: atLeast(h.baseOffset), timestamp: h.maxTimestamp };
  }
  const records = decodeRecordsSection(await recordsSection(batch, h), h.recordCount);
  for (const r of records) {
    const offset = h.baseOffset + BigInt(r.offsetDelta);
    const t = h.baseTimestamp + r.timestampDelta;
    if (offset >= minOffset && t >= ts) return { offset, timestamp: t };
  }
  return null;
}
