// event_id dedup in a real Redis: an event is marked as seen only by commit (after Kafka acknowledged
// it), marks are scoped by store and expire after the horizon, and Redis down fails open.
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventDedup, dedupKey } from '../../services/beacon/dedup.ts';
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

  it('marks events as seen only on commit, scoped by store, with the horizon as TTL', async () => {
    const dedup = createEventDedup({ redis, horizonMs: 86_400_000 });
    const ids = [eventId(), eventId()];
    const a = await dedup.check('store-a', ids);
    expect(a.states).toEqual(['new', 'new']);
    expect(a.checked).toBe(true);
    // checking writes nothing: a failed attempt leaves no mark, its retry is produced
    expect(await redis.exists(dedupKey('store-a', ids[0]))).toBe(0);
    expect((await dedup.check('store-a', ids)).states).toEqual(['new', 'new']);

    await a.commit();
    expect(await redis.get(dedupKey('store-a', ids[0]))).toBe('1');
    const ttl = await redis.pttl(dedupKey('store-a', ids[0]));
    expect(ttl).toBeGreaterThan(86_000_000);
    expect(ttl).toBeLessThanOrEqual(86_400_000);

    const b = await dedup.check('store-a', [ids[0], eventId()]);
    expect(b.states).toEqual(['duplicate', 'new']);
    // the same id in another store is another event
    expect((await dedup.check('store-b', [ids[0]])).states).toEqual(['new']);
  });

  it('commits only what it produced', async () => {
    const dedup = createEventDedup({ redis, horizonMs: 86_400_000 });
    const old = eventId();
    await (await dedup.check('store-c', [old])).commit();
    await redis.pexpire(dedupKey('store-c', old), 60_000);
    const fresh = eventId();
    const c = await dedup.check('store-c', [old, fresh]);
    expect(c.states).toEqual(['duplicate', 'new']);
    await c.commit();
    // the duplicate's mark was not rewritten (its TTL was not extended)
    expect(await redis.pttl(dedupKey('store-c', old))).toBeLessThanOrEqual(60_000);
    expect(await redis.get(dedupKey('store-c', fresh))).toBe('1');
  });

  it('fails open when Redis does not answer', async () => {
    const dead = createRedis('redis://127.0.0.1:1');
    dead.on('error', () => {});
    const errors: string[] = [];
    const dedup = createEventDedup({ redis: dead, horizonMs: 86_400_000, timeoutMs: 200, onError: (op) => errors.push(op) });
    const check = await dedup.check('store-e', [eventId()]);
    expect(check.states).toEqual(['new']);
    expect(check.checked).toBe(false);
    await check.commit();
    expect(errors).toEqual(['check', 'commit']);
    dead.disconnect();
  });
});
