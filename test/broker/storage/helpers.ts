// Shared helpers for the storage tests: temp dirs, batch building, reading a partition back as records.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LogStore, LogStoreOptions, PartitionStore } from '../../../services/kafka-broker/storage/api.ts';
import { openLogStore } from '../../../services/kafka-broker/storage/index.ts';
import {
  decodeBatchRecords,
  type EncodeBatchOptions,
  encodeRecordBatch,
  type RecordInput,
  splitBatches,
} from '../../../services/kafka-broker/storage/record-batch.ts';

export async function tempDir(name: string): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), `broker-storage-${name}-`));
}

export async function removeDir(dir: string): Promise<void> {
  await fs.rm(dir, { recursive: true, force: true });
}

export function openStore(dataDir: string, opts: Partial<LogStoreOptions> = {}): Promise<LogStore> {
  return openLogStore({ dataDir, fsync: 'always', maintenanceIntervalMs: 3_600_000, ...opts });
}

/** A batch of records with string values (and optional keys). */
export function batch(
  values: (string | null)[],
  opts: EncodeBatchOptions & { keys?: (string | null)[] } = {},
): Promise<Buffer> {
  const records: RecordInput[] = values.map((v, i) => ({ value: v, key: opts.keys ? opts.keys[i] : null }));
  return encodeRecordBatch(records, opts);
}

export interface ReadRecord {
  offset: bigint;
  key: string | null;
  value: string | null;
  timestamp: bigint;
}

/** Reads [from, highWatermark) record by record, like a client: skips records below the asked offset. */
export async function readAll(p: PartitionStore, from?: bigint, maxBytes = 64 * 1024): Promise<ReadRecord[]> {
  const out: ReadRecord[] = [];
  let offset = from ?? p.logStartOffset();
  const hw = p.highWatermark();
  while (offset < hw) {
    const res = await p.read(offset, maxBytes);
    if (res.errorCode !== 0) throw new Error(`read at ${offset} failed with ${res.errorCode}`);
    if (res.chunks.length === 0) break;
    let progressed = false;
    for (const chunk of res.chunks) {
      for (const b of splitBatches(chunk)) {
        const { header, records } = await decodeBatchRecords(b);
        for (const r of records) {
          const o = header.baseOffset + BigInt(r.offsetDelta);
          if (o < offset) continue;
          out.push({
            offset: o,
            key: r.key?.toString() ?? null,
            value: r.value?.toString() ?? null,
            timestamp: header.baseTimestamp + r.timestampDelta,
          });
        }
        const next = header.baseOffset + BigInt(header.lastOffsetDelta) + 1n;
        if (next > offset) {
          offset = next;
          progressed = true;
        }
      }
    }
    if (!progressed) throw new Error(`read at ${offset} made no progress`);
  }
  return out;
}

export async function listFiles(dir: string, suffix: string): Promise<string[]> {
  return (await fs.readdir(dir)).filter((n) => n.endsWith(suffix)).sort();
}
