// The processors' dedup claims in a real Redis: the first position to claim an id owns it (its own
// re-read is kept, any other position is a duplicate), scopes are independent, and a claim is recognised
// for at least the dedup horizon and at most 1.5× it, across the time buckets that hold it.
import type { Redis } from 'ioredis';
import { ulid } from 'ulid';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRedis } from '../../services/common/redis.ts';
import { bucketKey, Claims } from '../../streams/runtime/claims.ts';
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

  it('gives an id to the first position that claims it: its re-read is kept, another position is a duplicate', async () => {
    const claims = new Claims(redis, H_HOURS);
    const [a, b] = [ulid(), ulid()];
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
    // one field per claim in the store's current bucket, holding the position without the topic
    const n = Math.floor(Date.now() / (H / 2));
    expect(await redis.hgetall(bucketKey(TOPIC, 's1', n))).toEqual({ [a]: '0/10', [b]: '0/11' });
    expect(await redis.hgetall(bucketKey(TOPIC, 's2', n))).toEqual({ [a]: '1/5' });
    const ttl = await redis.pttl(bucketKey(TOPIC, 's1', n));
    expect(ttl).toBeGreaterThan(H - 60_000);
    expect(ttl).toBeLessThanOrEqual(1.5 * H);
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
      const key = `h-${claimedAt}-${checkedAt}:${ulid()}`;
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
