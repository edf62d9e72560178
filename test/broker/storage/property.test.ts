// Property: any sequence of appends (single, concurrent, compressed), reads at arbitrary offsets with
// arbitrary maxBytes, and restarts keeps offsets contiguous and data intact.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LogStore } from '../../../services/kafka-broker/storage/api.ts';
import {
  decodeBatchRecords,
  encodeRecordBatch,
  splitBatches,
} from '../../../services/kafka-broker/storage/record-batch.ts';
import { openStore, readAll, removeDir, tempDir } from './helpers.ts';

type Cmd =
  | { kind: 'append'; sizes: number[]; compression: 'none' | 'gzip' | 'zstd' }
  | { kind: 'concurrent'; batches: number[] }
  | { kind: 'read'; at: number; maxBytes: number }
  | { kind: 'restart' };

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      sizes: fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 15 }),
      compression: fc.constantFrom('none' as const, 'gzip' as const, 'zstd' as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('concurrent' as const),
      batches: fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 2, maxLength: 6 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('read' as const),
      at: fc.double({ min: 0, max: 1, noNaN: true }),
      maxBytes: fc.integer({ min: 1, max: 4000 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
);

describe('log property', () => {
  it('keeps offsets contiguous and data intact across appends, reads and restarts', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(cmd, { minLength: 1, maxLength: 25 }),
        fc.integer({ min: 200, max: 3000 }),
        fc.constantFrom<'always' | number>('always', 3),
        async (cmds, segmentBytes, fsync) => {
          const dir = await tempDir('prop');
          let store: LogStore = await openStore(dir, { fsync });
          try {
            await store.createTopic('p', 1, { segmentBytes });
            const model: string[] = [];
            let counter = 0;
            const value = (size: number) => `${counter++}:`.padEnd(size, 'x');
            for (const c of cmds) {
              const p = store.partition('p', 0)!;
              if (c.kind === 'append') {
                const vs = c.sizes.map(value);
                const res = await p.append(
                  await encodeRecordBatch(
                    vs.map((v) => ({ value: v })),
                    { compression: c.compression },
                  ),
                );
                expect(res).toMatchObject({ errorCode: 0, baseOffset: BigInt(model.length) });
                model.push(...vs);
              } else if (c.kind === 'concurrent') {
                const bodies = c.batches.map((n) => Array.from({ length: n }, () => value(20)));
                const encoded = await Promise.all(bodies.map((vs) => encodeRecordBatch(vs.map((v) => ({ value: v })))));
                const results = await Promise.all(encoded.map((b) => p.append(b)));
                // appends are serialized in call order
                let next = BigInt(model.length);
                for (let i = 0; i < results.length; i++) {
                  expect(results[i].baseOffset).toBe(next);
                  next += BigInt(bodies[i].length);
                  model.push(...bodies[i]);
                }
              } else if (c.kind === 'read') {
                expect(p.highWatermark()).toBe(BigInt(model.length));
                if (model.length === 0) continue;
                const at = Math.min(model.length - 1, Math.floor(c.at * model.length));
                const res = await p.read(BigInt(at), c.maxBytes);
                expect(res.errorCode).toBe(0);
                const batches = res.chunks.flatMap(splitBatches);
                expect(batches.length).toBeGreaterThan(0);
                expect(res.bytes).toBe(batches.reduce((n, b) => n + b.length, 0));
                if (batches.length > 1) expect(res.bytes).toBeLessThanOrEqual(c.maxBytes);
                let expectOffset: bigint | null = null;
                for (const b of batches) {
                  const { header, records } = await decodeBatchRecords(b);
                  for (const r of records) {
                    const o = header.baseOffset + BigInt(r.offsetDelta);
                    if (expectOffset !== null) expect(o).toBe(expectOffset);
                    expectOffset = o + 1n;
                    expect(r.value?.toString()).toBe(model[Number(o)]);
                  }
                }
                // the first batch contains the requested offset
                const first = splitBatches(res.chunks[0])[0];
                const h = (await decodeBatchRecords(first)).header;
                expect(h.baseOffset <= BigInt(at) && BigInt(at) <= h.baseOffset + BigInt(h.lastOffsetDelta)).toBe(true);
              } else {
                await store.close();
                store = await openStore(dir, { fsync });
              }
            }
            const p = store.partition('p', 0)!;
            expect(p.highWatermark()).toBe(BigInt(model.length));
            const all = await readAll(p, 0n, 2048);
            expect(all.map((r) => r.value)).toEqual(model);
          } finally {
            await store.close();
            await removeDir(dir);
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
