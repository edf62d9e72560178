// event_id dedup in a real Redis: an event is marked as seen only by commit (after Kafka acknowledged
// it), marks are scoped by store, are recognised for at least the horizon (and at most 1.5× it) across
// the time buckets that hold them, and Redis down fails open.
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventDedup, dedupBuckets, markedEventIds } from '../../services/beacon/dedup.ts';
import { createRedis } from '../../services/common/redis.ts';
import { eventId, type RedisServer, startRedis } from './helpers.ts';

describe('event_id dedup (Redis)', () => {
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

  const H = 86_400_000;

  it('marks events as seen only on commit, scoped by store, kept for at least the horizon', async () => {
    const dedup = createEventDedup({ redis, horizonMs: H });
    const ids = [eventId(), eventId()];
    const a = await dedup.check('store-a', ids);
    expect(a.states).toEqual(['new', 'new']);
    expect(a.checked).toBe(true);
    // checking writes nothing: a failed attempt leaves no mark, its retry is produced
    const { write } = dedupBuckets('store-a', H, Date.now());
    expect(await redis.exists(write)).toBe(0);
    expect((await dedup.check('store-a', ids)).states).toEqual(['new', 'new']);

    await a.commit();
    expect(await markedEventIds(redis, 'store-a', ids, H)).toEqual([true, true]);
    expect((await redis.smembers(write)).sort()).toEqual([...ids].sort());
    // the bucket lives until no check reads it any more: more than the horizon, at most 1.5× it
    const ttl = await redis.pttl(write);
    expect(ttl).toBeGreaterThan(H - 60_000);
    expect(ttl).toBeLessThanOrEqual(1.5 * H);

    const b = await dedup.check('store-a', [ids[0], eventId()]);
    expect(b.states).toEqual(['duplicate', 'new']);
    // the same id in another store is another event
    expect((await dedup.check('store-b', [ids[0]])).states).toEqual(['new']);
  });

  it('commits only what it produced', async () => {
    let clock = Date.now();
    const dedup = createEventDedup({ redis, horizonMs: H, now: () => clock });
    const old = eventId();
    await (await dedup.check('store-c', [old])).commit();
    // half a horizon later the mark sits in the previous bucket
    clock += H / 2;
    const fresh = eventId();
    const c = await dedup.check('store-c', [old, fresh]);
    expect(c.states).toEqual(['duplicate', 'new']);
    await c.commit();
    // the duplicate was not written again (its mark still expires with the older bucket)
    const { write, read } = dedupBuckets('store-c', H, clock);
    expect(await redis.smembers(write)).toEqual([fresh]);
    expect(await redis.smembers(read[1])).toEqual([old]);
  });

  it('recognises an id for at least the horizon and at most 1.5× it, across buckets', async () => {
    const start = Math.ceil(Date.now() / (H / 2)) * (H / 2); // the start of a bucket
    for (const [committedAt, checkedAt, expected] of [
      [start, start + H - 1, 'duplicate'], // just under the horizon, two buckets later
      [start + H / 2 - 1, start + H / 2 - 1 + H, 'duplicate'], // committed at a bucket's end: a full horizon later
      [start + H / 2 - 1, start + (3 * H) / 2, 'new'], // three buckets later: forgotten (just over the horizon)
      [start, start + (3 * H) / 2, 'new'], // 1.5× the horizon: forgotten
    ] as const) {
      let clock = committedAt;
      const store = `store-h-${committedAt}-${checkedAt}`;
      const dedup = createEventDedup({ redis, horizonMs: H, now: () => clock });
      const id = eventId();
      await (await dedup.check(store, [id])).commit();
      clock = checkedAt;
      expect(
        (await dedup.check(store, [id])).states,
        `committed at +${committedAt - start}, checked at +${checkedAt - start}`,
      ).toEqual([expected]);
      // the bucket written at the commit expires exactly when checks stop reading it
      expect(dedupBuckets(store, H, committedAt).expireAtMs).toBeGreaterThanOrEqual(committedAt + H);
    }
  });

  it('finds the marked ids among thousands at their positions, each bucket read', async () => {
    let clock = Date.now();
    const dedup = createEventDedup({ redis, horizonMs: H, now: () => clock });
    const older = Array.from({ length: 4_500 }, eventId);
    await (await dedup.check('store-big', older)).commit();
    clock += H / 2; // the marks now sit in the previous bucket
    const recent = Array.from({ length: 10 }, eventId);
    await (await dedup.check('store-big', recent)).commit();
    const mixed = [eventId(), older[0], ...Array.from({ length: 9_000 }, eventId), recent[3], older[4_499]];
    const states = (await dedup.check('store-big', mixed)).states;
    const duplicates = states.flatMap((s, i) => (s === 'duplicate' ? [i] : []));
    expect(duplicates).toEqual([1, mixed.length - 2, mixed.length - 1]);
    expect(await redis.scard(dedupBuckets('store-big', H, clock).read[1])).toBe(4_500);
  });

  it('fails open on an id it cannot split: everything is produced, nothing marked', async () => {
    const errors: string[] = [];
    const dedup = createEventDedup({ redis, horizonMs: H, onError: (op, err) => errors.push(`${op}: ${err.message}`) });
    const id = eventId();
    await (await dedup.check('store-split', [id])).commit();
    const check = await dedup.check('store-split', [id, 'two words']);
    expect(check.checked).toBe(false);
    expect(check.states).toEqual(['new', 'new']);
    expect(errors).toEqual(['check: dedup script split 3 ids, 2 were sent']);
  });

  it('fails open when Redis does not answer', async () => {
    const dead = createRedis('redis://127.0.0.1:1');
    dead.on('error', () => {});
    const errors: string[] = [];
    const dedup = createEventDedup({
      redis: dead,
      horizonMs: 86_400_000,
      timeoutMs: 200,
      onError: (op) => errors.push(op),
    });
    const check = await dedup.check('store-e', [eventId()]);
    expect(check.states).toEqual(['new']);
    expect(check.checked).toBe(false);
    await check.commit();
    expect(errors).toEqual(['check', 'commit']);
    dead.disconnect();
  });
});
