// Idempotent producer state of one partition: producerId -> epoch and the metadata of its last 5 batches.
// Mirrors Kafka's ProducerStateManager rules:
//   - a batch whose (epoch, first seq, last seq) matches a remembered batch is a duplicate: it is not
//     appended again and the original base offset is returned;
//   - a lower epoch is fenced (INVALID_PRODUCER_EPOCH);
//   - a higher epoch must start at sequence 0;
//   - within an epoch the first sequence must follow the last one (wrapping after int32 max);
//   - an unknown producer may start at any sequence (its state may have expired or been removed by
//     retention; Kafka has accepted this since KIP-360).
// The state is rebuilt on startup from the newest snapshot file plus the batches logged after it.

import fs from 'node:fs/promises';
import path from 'node:path';
import { crc32c } from '@node-rs/crc32';
import { offsetFileName, writeFileAtomic } from './fs-util.ts';
import { type BatchHeader, ErrorCode } from './record-batch.ts';

export const MAX_BATCHES_PER_PRODUCER = 5;
const INT32_MAX = 0x7fffffff;

export interface BatchMeta {
  firstSeq: number;
  lastSeq: number;
  baseOffset: bigint;
  lastOffset: bigint;
}

export interface ProducerEntry {
  epoch: number;
  /** oldest first, at most MAX_BATCHES_PER_PRODUCER */
  batches: BatchMeta[];
  /** ms; wall clock of the last append (or the batch max timestamp when rebuilt from the log) */
  lastTimestamp: number;
}

export type SequenceCheck =
  | { kind: 'ok' }
  | { kind: 'duplicate'; meta: BatchMeta }
  | { kind: 'error'; errorCode: number; message: string };

export function lastSequence(baseSequence: number, lastOffsetDelta: number): number {
  return baseSequence > INT32_MAX - lastOffsetDelta
    ? lastOffsetDelta - (INT32_MAX - baseSequence) - 1
    : baseSequence + lastOffsetDelta;
}

function inSequence(lastSeq: number, nextSeq: number): boolean {
  return nextSeq === lastSeq + 1 || (nextSeq === 0 && lastSeq === INT32_MAX);
}

export class ProducerStateManager {
  readonly producers = new Map<bigint, ProducerEntry>();

  /** Checks one batch against `entry` (the current or staged state of its producer). */
  static check(entry: ProducerEntry | undefined, h: BatchHeader): SequenceCheck {
    if (!entry) return { kind: 'ok' };
    if (h.producerEpoch < entry.epoch) {
      return {
        kind: 'error',
        errorCode: ErrorCode.INVALID_PRODUCER_EPOCH,
        message: `producer ${h.producerId}: epoch ${h.producerEpoch} is older than the current epoch ${entry.epoch}`,
      };
    }
    if (h.producerEpoch > entry.epoch) {
      if (h.baseSequence !== 0) {
        return {
          kind: 'error',
          errorCode: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
          message: `producer ${h.producerId}: new epoch ${h.producerEpoch} must start at sequence 0, got ${h.baseSequence}`,
        };
      }
      return { kind: 'ok' };
    }
    const lastSeq = lastSequence(h.baseSequence, h.lastOffsetDelta);
    for (const b of entry.batches) {
      if (b.firstSeq === h.baseSequence && b.lastSeq === lastSeq) return { kind: 'duplicate', meta: b };
    }
    const last = entry.batches.at(-1);
    if (last && !inSequence(last.lastSeq, h.baseSequence)) {
      return {
        kind: 'error',
        errorCode: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        message: `producer ${h.producerId}: expected sequence ${last.lastSeq === INT32_MAX ? 0 : last.lastSeq + 1}, got ${h.baseSequence}`,
      };
    }
    return { kind: 'ok' };
  }

  /** Returns an updated copy of `entry` with the batch (already assigned its offsets) recorded. */
  static advance(entry: ProducerEntry | undefined, h: BatchHeader, timestamp: number): ProducerEntry {
    const meta: BatchMeta = {
      firstSeq: h.baseSequence,
      lastSeq: lastSequence(h.baseSequence, h.lastOffsetDelta),
      baseOffset: h.baseOffset,
      lastOffset: h.baseOffset + BigInt(h.lastOffsetDelta),
    };
    const batches = entry && entry.epoch === h.producerEpoch ? [...entry.batches, meta] : [meta];
    if (batches.length > MAX_BATCHES_PER_PRODUCER) batches.splice(0, batches.length - MAX_BATCHES_PER_PRODUCER);
    return { epoch: h.producerEpoch, batches, lastTimestamp: timestamp };
  }

  /** Replays a logged batch (recovery): no checks, just state. */
  replay(h: BatchHeader): void {
    if (h.producerId < 0n) return;
    const cur = this.producers.get(h.producerId);
    if (cur && h.producerEpoch < cur.epoch) return;
    this.producers.set(h.producerId, ProducerStateManager.advance(cur, h, Number(h.maxTimestamp)));
  }

  /** Drops producers idle for longer than `expirationMs`. */
  expire(nowMs: number, expirationMs: number): void {
    for (const [id, e] of this.producers) if (e.lastTimestamp < nowMs - expirationMs) this.producers.delete(id);
  }

  // ----- snapshots: `<offset>.snapshot` holds the state after every batch below `offset`

  async writeSnapshot(dir: string, offset: bigint): Promise<void> {
    const producers = [...this.producers].map(([id, e]) => ({
      id: id.toString(),
      epoch: e.epoch,
      lastTimestamp: e.lastTimestamp,
      batches: e.batches.map((b) => [b.firstSeq, b.lastSeq, b.baseOffset.toString(), b.lastOffset.toString()]),
    }));
    const body = JSON.stringify({ version: 1, offset: offset.toString(), producers });
    await writeFileAtomic(
      path.join(dir, offsetFileName(offset, '.snapshot')),
      `${body}\n${crc32c(body).toString(16)}\n`,
    );
  }

  /** Loads the newest valid snapshot at or below `maxOffset`; returns its offset or null. */
  async loadLatestSnapshot(dir: string, maxOffset: bigint): Promise<bigint | null> {
    const snaps = await listSnapshots(dir);
    for (const off of snaps.reverse()) {
      if (off > maxOffset) {
        // written for data that did not survive (torn tail): useless and misleading
        await fs.rm(path.join(dir, offsetFileName(off, '.snapshot')), { force: true });
        continue;
      }
      const parsed = await readSnapshot(path.join(dir, offsetFileName(off, '.snapshot')));
      if (!parsed) continue;
      this.producers.clear();
      for (const p of parsed.producers) {
        this.producers.set(BigInt(p.id), {
          epoch: p.epoch,
          lastTimestamp: p.lastTimestamp,
          batches: p.batches.map(([firstSeq, lastSeq, base, last]) => ({
            firstSeq,
            lastSeq,
            baseOffset: BigInt(base),
            lastOffset: BigInt(last),
          })),
        });
      }
      return off;
    }
    return null;
  }

  /** Deletes snapshots except the newest `keep` ones. */
  static async pruneSnapshots(dir: string, keep: number): Promise<void> {
    const snaps = await listSnapshots(dir);
    for (const off of snaps.slice(0, Math.max(0, snaps.length - keep))) {
      await fs.rm(path.join(dir, offsetFileName(off, '.snapshot')), { force: true });
    }
  }
}

interface SnapshotFile {
  version: number;
  offset: string;
  producers: { id: string; epoch: number; lastTimestamp: number; batches: [number, number, string, string][] }[];
}

async function listSnapshots(dir: string): Promise<bigint[]> {
  const names = await fs.readdir(dir);
  return names
    .filter((n) => /^\d{20}\.snapshot$/.test(n))
    .map((n) => BigInt(n.slice(0, 20)))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

async function readSnapshot(file: string): Promise<SnapshotFile | null> {
  try {
    const text = await fs.readFile(file, 'utf8');
    const [body, crc] = text.split('\n');
    if (crc32c(body).toString(16) !== crc) return null;
    const parsed = JSON.parse(body) as SnapshotFile;
    return parsed.version === 1 ? parsed : null;
  } catch {
    return null;
  }
}
