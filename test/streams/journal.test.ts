// The messages a multi-partition chunk keeps in the journal come back byte for byte: a re-read rebuilds
// the chunk from them, and any difference would change its rows under the same insert tokens.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CHUNK_ID_MAX, type ChunkPart, chunkId, decodeParts, encodeParts } from '../../streams/runtime/journal.ts';

const bytes = fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a));
const message = fc.record({
  offset: fc.bigInt({ min: 0n, max: 2n ** 62n }).map(String),
  key: fc.option(bytes, { nil: null }),
  value: fc.option(bytes, { nil: null }),
  timestamp: fc.integer({ min: 0, max: 2 ** 42 }).map(String),
  headers: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), bytes, { maxKeys: 3 }),
});
const part = fc.record({
  partition: fc.integer({ min: 0, max: 63 }),
  first: fc.bigInt({ min: 0n, max: 2n ** 62n }),
  last: fc.bigInt({ min: 0n, max: 2n ** 62n }),
  messages: fc.array(message, { maxLength: 5 }),
});

describe('the journal of a multi-partition chunk', () => {
  it('gives back every part and message as it was kept: offsets, keys, values, timestamps, headers', () => {
    fc.assert(
      fc.property(fc.array(part, { maxLength: 6 }), (parts: ChunkPart[]) => {
        expect(decodeParts(encodeParts(parts))).toEqual(parts);
      }),
      { numRuns: 500 },
    );
  });

  it("names a chunk by its partitions' ranges, whatever order the fetch gave them in", () => {
    const a = { partition: 3, first: 5n, last: 9n, messages: [] };
    const b = { partition: 0, first: 10n, last: 12n, messages: [] };
    expect(chunkId([a, b])).toBe('p0=10-12.p3=5-9');
    expect(chunkId([b, a])).toBe(chunkId([a, b]));
  });

  it('names a chunk of many partitions by a hash of its ranges, short enough for an insert token', () => {
    const many = Array.from({ length: 64 }, (_, p) => ({
      partition: p,
      first: 10n ** 12n,
      last: 10n ** 12n + 9n,
      messages: [],
    }));
    const id = chunkId(many);
    expect(id).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(id.length).toBeLessThanOrEqual(CHUNK_ID_MAX);
    expect(chunkId([...many].reverse())).toBe(id);
    expect(chunkId(many.map((p, i) => (i === 7 ? { ...p, last: p.last + 1n } : p)))).not.toBe(id);
  });
});
