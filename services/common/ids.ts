// Request ids: ULIDs from a pooled CSPRNG.
//
// ulid()'s default source calls crypto.getRandomValues once per character (16 calls, a closure and a
// typed array per id: a quarter of a small route's CPU under load). Same CSPRNG, drawn 4 KiB at a time;
// one byte per character, and 256 / 32 is whole, so each character stays uniform.
import { randomFillSync } from 'node:crypto';
import { ulid } from 'ulid';

const randomPool = new Uint8Array(4096);
let randomPos = randomPool.length;

function pooledRandom(): number {
  if (randomPos >= randomPool.length) {
    randomFillSync(randomPool);
    randomPos = 0;
  }
  return randomPool[randomPos++] / 256;
}

/** a fresh ULID (time-ordered, 80 random bits) */
export function requestId(): string {
  return ulid(undefined, pooledRandom);
}
