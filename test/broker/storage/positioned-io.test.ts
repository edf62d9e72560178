// The storage's positioned I/O (storage/fs-util.ts): reads and writes up to SYNC_IO_MAX_BYTES are made
// synchronously, larger ones through the thread pool. Both paths must leave and return the same bytes as
// a plain write of the whole file would.
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, expect, test } from 'vitest';
import { readAt, SYNC_IO_MAX_BYTES, writeAt } from '../../../services/kafka-broker/storage/fs-util.ts';

const dirP = mkdtemp(path.join(os.tmpdir(), 'positioned-io-'));
afterAll(async () => rm(await dirP, { recursive: true, force: true }));

test('writes at positions, below and above the synchronous size, equal the reference buffer; reads return them', async () => {
  const file = path.join(await dirP, 'log');
  const sizes = fc.oneof(
    fc.integer({ min: 1, max: 512 }),
    fc.integer({ min: SYNC_IO_MAX_BYTES - 8, max: SYNC_IO_MAX_BYTES + 8 }),
    fc.integer({ min: SYNC_IO_MAX_BYTES + 9, max: 3 * SYNC_IO_MAX_BYTES }),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(sizes, fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
      async (writes) => {
        const fh = await open(file, 'w+');
        const parts: Buffer[] = [];
        let position = 0;
        try {
          for (const [size, fill] of writes) {
            const data = Buffer.alloc(size, fill);
            data[0] = (fill + 1) & 0xff; // not one repeated byte: a shifted copy would show
            await writeAt(fh, data, position);
            parts.push(data);
            position += size;
          }
          const want = Buffer.concat(parts);
          expect((await readFile(file)).equals(want)).toBe(true);
          let at = 0;
          for (const p of parts) {
            expect((await readAt(fh, at, p.length)).equals(p)).toBe(true);
            at += p.length;
          }
          // past the end: fewer bytes, never garbage
          const tail = await readAt(fh, Math.max(0, want.length - 3), 10);
          expect(tail.equals(want.subarray(Math.max(0, want.length - 3)))).toBe(true);
        } finally {
          await fh.close();
        }
      },
    ),
    { numRuns: 40 },
  );
});
