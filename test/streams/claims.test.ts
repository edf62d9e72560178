// The processors' dedup claims in a real Redis: the first position to claim an id owns it (its own
// re-read is kept, any other position is a duplicate), scopes are independent, and a claim is recognised
// for at least the dedup horizon and at most 1.5× it, across the time buckets that hold it.
import type { Redis } from 'ioredis';
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRedis } from '../../services/common/redis.ts';
import fc from 'fast-check';
import { bucketClaims, bucketKey, Claims, claimField, SHARD_CLAIMS } from '../../streams/runtime/claims.ts';
import { type RedisServer, startRedis } from '../helpers/redis.ts';

const TOPIC = 'storefront.events.v1';
const H_HOURS = 24;
const H = H_HOURS * 3_600_000;

describe('dedup claims (Redis)', () => {
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedis();
    redis = createRedis(server.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const at = (partition: number, offset: number) => `${TOPIC}/${partition}/${offset}`;
  const field = claimField;

  it('gives an id to the first position that claims it: its re-read is kept, another position is a duplicate', async () => {
    const claims = new Claims(redis, H_HOURS);
    const [a, b] = [newUlid(), newUlid()];
    expect(
      await claims.claim(TOPIC, [
        { key: `s1:${a}`, position: at(0, 10) },
        { key: `s1:${b}`, position: at(0, 11) },
        { key: `s1:${a}`, position: at(0, 12) }, // the same id again in the same chunk
        { key: `s2:${a}`, position: at(1, 5) }, // the same id in another store is another event
      ]),
    ).toEqual([true, true, false, true]);
    // a replay reads the same positions: same answers, nothing claimed anew
    expect(
      await claims.claim(TOPIC, [
        { key: `s1:${a}`, position: at(0, 10) },
        { key: `s1:${a}`, position: at(0, 12) },
        { key: `s1:${b}`, position: at(1, 11) }, // same offset, another partition: another message
      ]),
    ).toEqual([true, false, false]);
    // one field per claim in the store's current bucket (63 bits of the id's hash), holding the position
    // without the topic
    const n = Math.floor(Date.now() / (H / 2));
    expect((await bucketClaims(redis, TOPIC, 's1', n)).claims).toEqual({ [field(a)]: '0/10', [field(b)]: '0/11' });
    expect((await bucketClaims(redis, TOPIC, 's2', n)).claims).toEqual({ [field(a)]: '1/5' });
    for (const key of [bucketKey(TOPIC, 's1', n), ...(await bucketClaims(redis, TOPIC, 's1', n)).shards]) {
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(H - 60_000);
      expect(ttl).toBeLessThanOrEqual(1.5 * H);
    }
  });

  it('claims ids whose fields hold the separator or control characters (the chunk travels as one string)', async () => {
    const claims = new Claims(redis, H_HOURS);
    // ids whose 9-character field holds a space (the packed argument's separator) or a control character
    const odd: string[] = [];
    for (const kind of [/ /, /[\x00-\x1f]/, / .* /]) {
      let id = newUlid();
      while (!kind.test(field(id))) id = newUlid();
      odd.push(id);
    }
    const plain = newUlid();
    const items = [plain, ...odd].map((id, i) => ({ key: `s-odd:${id}`, position: at(3, 100 + i) }));
    expect(await claims.claim(TOPIC, items)).toEqual([true, true, true, true]);
    // each stored under its own field with its own position, and a later position of each is a duplicate
    const n = Math.floor(Date.now() / (H / 2));
    expect((await bucketClaims(redis, TOPIC, 's-odd', n)).claims).toEqual(
      Object.fromEntries([plain, ...odd].map((id, i) => [field(id), `3/${100 + i}`])),
    );
    expect(
      await claims.claim(
        TOPIC,
        items.map((it, i) => ({ ...it, position: at(3, 200 + i) })),
      ),
    ).toEqual([false, false, false, false]);
  });

  it('keeps a large bucket in small packed shards that all expire with it, and still finds every claim', async () => {
    const claims = new Claims(redis, H_HOURS);
    const store = `big-${newUlid()}`;
    const ids = Array.from({ length: 20_000 }, () => newUlid());
    for (let i = 0; i < ids.length; i += 1_000)
      await claims.claim(
        TOPIC,
        ids.slice(i, i + 1_000).map((id, j) => ({ key: `${store}:${id}`, position: at(2, i + j) })),
      );
    const n = Math.floor(Date.now() / (H / 2));
    const { claims: stored, shards } = await bucketClaims(redis, TOPIC, store, n);
    expect(Object.keys(stored)).toHaveLength(ids.length);
    expect(stored[field(ids[12_345])]).toBe('2/12345');
    expect(shards.length).toBeGreaterThanOrEqual(ids.length / SHARD_CLAIMS / 1.1);
    const expiry = await redis.pexpiretime(bucketKey(TOPIC, store, n));
    let largest = 0;
    for (const shard of shards) {
      largest = Math.max(largest, await redis.hlen(shard));
      // Redis keeps a hash of up to hash-max-listpack-entries (128) fields as one packed listpack
      expect(await redis.object('ENCODING', shard)).toBe('listpack');
      expect(await redis.pexpiretime(shard)).toBe(expiry);
    }
    expect(largest).toBeLessThanOrEqual(128);
    // after all the splits, each id still belongs to its first position and to no other
    const sample = ids.filter((_, i) => i % 97 === 0);
    expect(
      await claims.claim(
        TOPIC,
        sample.map((id) => ({ key: `${store}:${id}`, position: at(2, ids.indexOf(id)) })),
      ),
    ).toEqual(sample.map(() => true));
    expect(
      await claims.claim(
        TOPIC,
        sample.map((id) => ({ key: `${store}:${id}`, position: at(3, 0) })),
      ),
    ).toEqual(sample.map(() => false));
  });

  it('answers as a map of first positions would, whatever the chunking, duplicates and growth (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        // ids drawn from a small pool so that duplicates are common; any text, not only ULIDs
        fc.array(fc.tuple(fc.nat({ max: 400 }), fc.constantFrom('u', 'x', 'é')), {
          minLength: 1,
          maxLength: 600,
          size: 'max',
        }),
        fc.array(fc.integer({ min: 1, max: 120 }), { minLength: 1, maxLength: 8 }),
        async (draws, cuts) => {
          const claims = new Claims(redis, H_HOURS);
          const store = `p-${newUlid()}`;
          const items = draws.map(([k, kind], offset) => ({
            key: `${store}:${kind === 'u' ? `01K${String(k).padStart(23, '0')}` : `${kind}-${k}`}`,
            position: at(0, offset),
          }));
          const first = new Map<string, string>();
          const expected = items.map((it) => {
            const owner = first.get(it.key) ?? (first.set(it.key, it.position), it.position);
            return owner === it.position;
          });
          const got: boolean[] = [];
          for (let i = 0, c = 0; i < items.length; c++) {
            const size = cuts[c % cuts.length];
            got.push(...(await claims.claim(TOPIC, items.slice(i, i + size))));
            i += size;
          }
          expect(got).toEqual(expected);
          // a replay of the whole log answers the same
          expect(await claims.claim(TOPIC, items)).toEqual(expected);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('recognises a claim for at least the horizon and at most 1.5× it', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = Math.ceil(Date.now() / (H / 2)) * (H / 2); // the start of a bucket
    for (const [claimedAt, checkedAt, duplicate] of [
      [start, start + H - 1, true], // just under the horizon, two buckets later
      [start + H / 2 - 1, start + H / 2 - 1 + H, true], // claimed at a bucket's end: a full horizon later
      [start + H / 2 - 1, start + (3 * H) / 2, false], // three buckets later: forgotten
      [start, start + (3 * H) / 2, false], // 1.5× the horizon: forgotten
    ] as const) {
      const claims = new Claims(redis, H_HOURS);
      const key = `h-${claimedAt}-${checkedAt}:${newUlid()}`;
      vi.setSystemTime(claimedAt);
      expect(await claims.claim(TOPIC, [{ key, position: at(0, 1) }])).toEqual([true]);
      vi.setSystemTime(checkedAt);
      expect(await claims.claim(TOPIC, [{ key, position: at(0, 2) }])).toEqual([!duplicate]);
      // the bucket written expires no earlier than checks stop reading it
      const written = bucketKey(TOPIC, key.slice(0, key.indexOf(':')), Math.floor(claimedAt / (H / 2)));
      expect(await redis.pexpiretime(written)).toBeGreaterThanOrEqual(claimedAt + H);
    }
  });
});
