// Log compaction helpers: the key -> latest offset map and the rewrite of one sealed segment.
//
// A record is kept when no later record with the same key exists in the map (the map covers the dirty
// part of the cleanable range, so older cleaned segments are filtered against newer writes). A kept
// tombstone (null value) is dropped once its batch's max timestamp is older than delete.retention.ms.
// Batches keep their base offset, lastOffsetDelta, producer fields and compression; records keep their
// offset deltas, so offsets never change (the log simply gets gaps). Batches whose records are all kept
// are copied byte for byte; batches with none left are dropped.
//
// Not decoded, hence kept whole and contributing no keys: control batches and snappy/lz4 batches (the
// broker has no codec for those; they are stored as sent).

import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { writeAt } from './fs-util.ts';
import {
  canDecode,
  decodeRecordsSection,
  isControl,
  readBatchHeader,
  rebuildBatch,
  recordsSection,
} from './record-batch.ts';
import { BatchScanner, IndexBuilder, Segment } from './segment.ts';

/** key digest -> offset of the latest record with that key */
export type OffsetMap = Map<string, number>;

/** Keys up to 32 bytes are used as-is; longer ones by their MD5 (as Kafka's cleaner does). */
export function keyDigest(key: Buffer): string {
  return key.length <= 32
    ? `k${key.toString('latin1')}`
    : `h${createHash('md5').update(key).digest().toString('latin1')}`;
}

/** Cooperative scheduling: long cleaner loops yield to the event loop every few milliseconds. */
export class Yielder {
  private last = performance.now();
  async maybeYield(): Promise<void> {
    if (performance.now() - this.last > 5) {
      await yieldToLoop();
      this.last = performance.now();
    }
  }
}

/** Adds every keyed record of `seg` to the map. */
export async function addSegmentToMap(seg: Segment, map: OffsetMap, y: Yielder): Promise<void> {
  const scanner = new BatchScanner(seg.fh, 0, seg.size, { data: true });
  for (let b = await scanner.next(); b; b = await scanner.next()) {
    const h = b.header;
    if (isControl(h.attributes) || !canDecode(h.attributes)) continue;
    const records = decodeRecordsSection(await recordsSection(b.data!, h), h.recordCount);
    const base = Number(h.baseOffset);
    for (const r of records) if (r.key !== null) map.set(keyDigest(r.key), base + r.offsetDelta);
    await y.maybeYield();
  }
}

export interface CleanOutcome {
  /** false: nothing to remove, no output written */
  changed: boolean;
  /** earliest time at which a retained tombstone becomes removable, or null */
  tombstoneExpiryMs: number | null;
  /** max timestamp of the output (for the segment's metadata) */
  maxTimestamp: bigint;
}

/** Buffers many small writes into large positioned writes. */
class BufferedFileWriter {
  private readonly fh: fs.FileHandle;
  private parts: Buffer[] = [];
  private pending = 0;
  position = 0;
  private written = 0;

  constructor(fh: fs.FileHandle) {
    this.fh = fh;
  }

  async write(b: Buffer): Promise<void> {
    this.parts.push(b);
    this.pending += b.length;
    this.position += b.length;
    if (this.pending >= 1 << 20) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pending === 0) return;
    const data = Buffer.concat(this.parts, this.pending);
    this.parts = [];
    this.pending = 0;
    await writeAt(this.fh, data, this.written);
    this.written += data.length;
  }
}

/**
 * Writes the cleaned version of `seg` to `<base>.log.cleaned` (+ `.index.cleaned`, `.timeindex.cleaned`),
 * all fsynced. The caller swaps the files in. When nothing would change, no files are left behind.
 */
export async function cleanSegment(
  seg: Segment,
  map: OffsetMap,
  opts: { nowMs: number; deleteRetentionMs: number },
  y: Yielder,
): Promise<CleanOutcome> {
  const paths = Segment.paths(seg.dir, seg.baseOffset, '.cleaned');
  const out = await fs.open(paths.log, 'w');
  const writer = new BufferedFileWriter(out);
  const builder = new IndexBuilder(seg.baseOffset);
  const tombstoneHorizon = BigInt(opts.nowMs - opts.deleteRetentionMs);
  let changed = false;
  let tombstoneExpiryMs: number | null = null;
  let maxTimestamp = -1n;
  try {
    const scanner = new BatchScanner(seg.fh, 0, seg.size, { data: true });
    for (let b = await scanner.next(); b; b = await scanner.next()) {
      const h = b.header;
      let output: Buffer | null = b.data!;
      if (!isControl(h.attributes) && canDecode(h.attributes)) {
        const records = decodeRecordsSection(await recordsSection(b.data!, h), h.recordCount);
        const base = Number(h.baseOffset);
        const kept: Buffer[] = [];
        for (const r of records) {
          if (r.key !== null) {
            const latest = map.get(keyDigest(r.key));
            if (latest !== undefined && latest > base + r.offsetDelta) continue; // superseded
            if (r.value === null) {
              if (h.maxTimestamp < tombstoneHorizon) continue; // tombstone past delete.retention.ms
              const expiry = Number(h.maxTimestamp) + opts.deleteRetentionMs;
              tombstoneExpiryMs = tombstoneExpiryMs === null ? expiry : Math.min(tombstoneExpiryMs, expiry);
            }
          }
          kept.push(r.raw);
        }
        if (kept.length === 0) output = null;
        else if (kept.length < records.length) output = await rebuildBatch(b.data!, kept);
        if (output !== b.data) changed = true;
      }
      if (output) {
        builder.add(output === b.data ? h : readBatchHeader(output, 0), writer.position);
        if (h.maxTimestamp > maxTimestamp) maxTimestamp = h.maxTimestamp;
        await writer.write(output);
      }
      await y.maybeYield();
    }
    if (scanner.problem) throw new Error(`cannot compact ${paths.log}: ${scanner.problem}`);
    if (!changed) {
      await out.close();
      await fs.rm(paths.log, { force: true });
      return { changed, tombstoneExpiryMs, maxTimestamp };
    }
    await writer.flush();
    await out.datasync();
    await out.close();
  } catch (err) {
    await out.close().catch(() => undefined);
    await fs.rm(paths.log, { force: true });
    throw err;
  }
  builder.seal();
  await writeSynced(paths.index, builder.offsets.slice(0));
  await writeSynced(paths.timeindex, builder.times.slice(0));
  return { changed, tombstoneExpiryMs, maxTimestamp };
}

async function writeSynced(file: string, data: Buffer): Promise<void> {
  const fh = await fs.open(file, 'w');
  try {
    await writeAt(fh, data, 0);
    await fh.datasync();
  } finally {
    await fh.close();
  }
}
