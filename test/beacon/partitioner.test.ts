// The intake's partitioner (services/common/murmur2.ts) maps keys to partitions exactly as kafkajs'
// DefaultPartitioner (and the Java client) does, with or without the precomputed key hash.
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { Partitioners } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { HashPartitioner, keyHash, murmur2 } from '../../services/common/kafka/index.ts';

const kafkajsMurmur2 = createRequire(import.meta.url)('kafkajs/src/producer/partitioners/default/murmur2.js') as (
  key: Buffer | string,
) => number;

describe('intake partitioner', () => {
  it('murmur2 equals kafkajs’ murmur2 on any bytes, also inside a larger buffer', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), fc.nat(7), (bytes, pad) => {
        const buf = Buffer.concat([Buffer.alloc(pad, 7), Buffer.from(bytes), Buffer.alloc(3, 9)]);
        expect(murmur2(buf, pad, bytes.length)).toBe(kafkajsMurmur2(Buffer.from(bytes)));
      }),
      { numRuns: 5000 },
    );
  });

  it('gives the DefaultPartitioner’s partition for string keys, Buffer keys and precomputed hashes', () => {
    const ours = HashPartitioner();
    const theirs = Partitioners.DefaultPartitioner();
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), fc.integer({ min: 1, max: 64 }), (key, n) => {
        const partitionMetadata = Array.from({ length: n }, (_, i) => ({
          partitionId: i,
          leader: 0,
          partitionErrorCode: 0,
          replicas: [0],
          isr: [0],
        }));
        const expected = theirs({ topic: 't', partitionMetadata, message: { key, value: null } });
        const bytes = Buffer.from(key);
        expect(ours({ topic: 't', partitionMetadata, message: { key, value: null } })).toBe(expected);
        expect(ours({ topic: 't', partitionMetadata, message: { key: bytes, value: null } })).toBe(expected);
        expect(
          ours({
            topic: 't',
            partitionMetadata,
            message: { key: bytes, value: null, keyHash: keyHash(bytes) } as never,
          }),
        ).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });
});
