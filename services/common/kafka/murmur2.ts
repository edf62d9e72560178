// Kafka's murmur2 key hash (the Java client's and kafkajs' DefaultPartitioner), on 32-bit integer math
// instead of kafkajs' Long emulation: the same partition for the same key, at a fraction of the CPU.
// The equality with kafkajs' implementation is tested (test/beacon/partitioner.test.ts); the kafkajs
// partitioner built on it is HashPartitioner (kafkajs/client.ts).

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** murmur2 of `length` bytes of `data` from `start` (signed 32-bit, as Java's Utils.murmur2) */
export function murmur2(data: Uint8Array, start = 0, length = data.length - start): number {
  let h = (SEED ^ length) | 0;
  const end4 = start + (length & ~3);
  for (let i = start; i < end4; i += 4) {
    let k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const rest = length & 3;
  if (rest === 3) h ^= data[end4 + 2] << 16;
  if (rest >= 2) h ^= data[end4 + 1] << 8;
  if (rest >= 1) {
    h ^= data[end4];
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h;
}

/** the non-negative hash the default partitioner takes modulo the partition count */
export function keyHash(data: Uint8Array, start = 0, length = data.length - start): number {
  return murmur2(data, start, length) & 0x7fffffff;
}

/** a message that may carry its key's hash, computed where the key was built (a prepare worker) */
export interface HashedMessage {
  key?: Buffer | string | null;
  partition?: number;
  /** keyHash(key) */
  keyHash?: number;
}
