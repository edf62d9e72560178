// Storage micro-benchmark: appends 1000-record batches of 100-byte records straight into the LogStore
// (no network, no protocol), with fsync 'always' and with a 5 ms fsync interval.
//   node bench/broker-storage.ts [seconds per scenario, default 3]
// Scenarios: one producer appending sequentially (one batch in flight), and 4 partitions with 2 batches
// in flight each (what several producer connections look like; group commit shares fsyncs). A read-back
// pass measures sequential fetch throughput. Batches are encoded once up front: encoding is client work.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LogStoreOptions, PartitionStore } from '../services/kafka-broker/storage/api.ts';
import { openLogStore } from '../services/kafka-broker/storage/index.ts';
import { encodeRecordBatch } from '../services/kafka-broker/storage/record-batch.ts';

const RECORDS_PER_BATCH = 1000;
const RECORD_BYTES = 100;
const seconds = Number(process.argv[2] ?? 3);

async function makeBatch(): Promise<Buffer> {
  const value = Buffer.alloc(RECORD_BYTES, 'x');
  return encodeRecordBatch(
    Array.from({ length: RECORDS_PER_BATCH }, (_, i) => ({ key: `key-${i % 100}`, value })),
    { baseTimestamp: Date.now() },
  );
}

/** `inFlight` concurrent append loops per partition, each with its own copy of the batch. */
async function appendLoop(
  parts: PartitionStore[],
  inFlight: number,
  template: Buffer,
  durationMs: number,
): Promise<number> {
  const deadline = performance.now() + durationMs;
  let batches = 0;
  const loops = parts.flatMap((p) =>
    Array.from({ length: inFlight }, async () => {
      const buf = Buffer.from(template); // append rewrites the base offset in place
      while (performance.now() < deadline) {
        const r = await p.append(buf);
        if (r.errorCode !== 0) throw new Error(`append failed: ${r.errorCode} ${r.errorMessage}`);
        batches++;
      }
    }),
  );
  await Promise.all(loops);
  return batches * RECORDS_PER_BATCH;
}

async function scenario(
  name: string,
  fsync: LogStoreOptions['fsync'],
  partitions: number,
  inFlight: number,
  template: Buffer,
) {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-broker-storage-'));
  const store = await openLogStore({ dataDir: dir, fsync });
  try {
    await store.createTopic('bench', partitions, { segmentBytes: 256 * 1024 * 1024 });
    const parts = Array.from({ length: partitions }, (_, i) => store.partition('bench', i)!);
    await appendLoop(parts, inFlight, template, 300); // warm-up
    const t0 = performance.now();
    const records = await appendLoop(parts, inFlight, template, seconds * 1000);
    const elapsed = (performance.now() - t0) / 1000;
    const rate = records / elapsed;
    const mb = ((rate / RECORDS_PER_BATCH) * template.length) / 1e6;
    console.log(
      `${name.padEnd(52)} ${Math.round(rate).toLocaleString('en-US').padStart(12)} records/s  ${mb.toFixed(1).padStart(6)} MB/s`,
    );
    // read everything back from partition 0 in 1 MiB fetches
    const p = parts[0];
    const r0 = performance.now();
    let offset = p.logStartOffset();
    let bytes = 0;
    while (offset < p.highWatermark()) {
      const res = await p.read(offset, 1 << 20);
      const chunk = res.chunks[0];
      bytes += res.bytes;
      // next offset = last batch's base + lastOffsetDelta + 1; walk the chunk's batch headers
      let pos = 0;
      while (pos < chunk.length) {
        offset = chunk.readBigInt64BE(pos) + BigInt(chunk.readInt32BE(pos + 23)) + 1n;
        pos += chunk.readInt32BE(pos + 8) + 12;
      }
    }
    const rs = (performance.now() - r0) / 1000;
    console.log(
      `${'  read back (1 MiB fetches)'.padEnd(52)} ${Math.round(Number(offset - p.logStartOffset()) / rs)
        .toLocaleString('en-US')
        .padStart(12)} records/s  ${(bytes / rs / 1e6).toFixed(1).padStart(6)} MB/s`,
    );
  } finally {
    await store.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

const template = await makeBatch();
console.log(
  `batch: ${RECORDS_PER_BATCH} records x ${RECORD_BYTES} B value = ${template.length} B on the wire; ${seconds} s per scenario`,
);
await scenario('fsync always, 1 partition, 1 in flight', 'always', 1, 1, template);
await scenario('fsync always, 4 partitions x 2 in flight', 'always', 4, 2, template);
await scenario('fsync every 5 ms, 1 partition, 1 in flight', 5, 1, 1, template);
await scenario('fsync every 5 ms, 4 partitions x 2 in flight', 5, 4, 2, template);
