// The catalog writer's version guard against a real Redis: stale records are refused and tombstones outrank
// what came before, the versions of the old one-hash layout are moved into the slots on first use (the newer
// of both kept), and the slot layout holds a large store's versions in well under the old layout's memory.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { catalogKey } from '../../schemas/catalog.ts';
import { GUARD_SLOTS, guardKey, guardSlot, VersionGuard } from '../../services/catalog/version-guard.ts';
import { type RedisServer, startRedis } from '../helpers/redis.ts';

let server: RedisServer;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
});
beforeEach(() => redis.flushall());

const product = (store: string, id: string, versionMs: number, tombstone = false) => ({
  topic: 'products',
  storeId: store,
  key: catalogKey({ topic: 'products', store_id: store, product_id: id }),
  versionMs,
  tombstone,
});

describe('catalog version guard', () => {
  it('refuses older versions, lets equal and newer ones through, and puts tombstones past both', async () => {
    const guard = new VersionGuard(redis);
    expect(await guard.check([product('s1', '1', 1000), product('s2', '1', 500)])).toEqual([1000, 500]);
    expect(await guard.check([product('s1', '1', 999), product('s1', '1', 1000), product('s1', '1', 1001)])).toEqual([
      -1, 1000, 1001,
    ]);
    // another store's key of the same id is its own
    expect(await guard.check([product('s2', '1', 600)])).toEqual([600]);
    // a tombstone: now, or past the newest version when that is ahead of now; an update older than it is stale
    expect(await guard.check([product('s1', '1', 0, true)], 900)).toEqual([1002]);
    expect(await guard.check([product('s1', '1', 0, true)], 5000)).toEqual([5000]);
    expect(await guard.check([product('s1', '1', 4999)])).toEqual([-1]);
    // the field is the key without the store prefix, in its slot
    expect(await redis.hget(guardKey('products', 's1', guardSlot('1')), '1')).toBe('5000');
  });

  it("moves the old layout's versions into the slots on first use, keeping the newer, and deletes the old hash", async () => {
    const legacy = 'sd:catalog:version:products:s1';
    const old: Record<string, string> = {};
    for (let i = 0; i < 5000; i++) old[`s1:${i}`] = String(10_000 + i);
    await redis.hset(legacy, old);
    // a version already in the slots that is newer than the old hash's (written by an upgraded process)
    await redis.hset(guardKey('products', 's1', guardSlot('7')), '7', '99999');
    const guard = new VersionGuard(redis);
    const answers = await guard.check([
      product('s1', '3', 10_003),
      product('s1', '4', 10_003),
      product('s1', '7', 50_000),
    ]);
    expect(answers).toEqual([10_003, -1, -1]);
    expect(await redis.exists(legacy)).toBe(0);
    // every old version arrived
    const sample = [0, 1234, 4999];
    for (const i of sample)
      expect(await redis.hget(guardKey('products', 's1', guardSlot(String(i))), String(i))).toBe(String(10_000 + i));
  });

  it("holds 200 000 inventory keys of one store in under half the old layout's memory", async () => {
    const store = '01JDDEM0000000000000000S01';
    const keys = Array.from({ length: 200_000 }, (_, i) =>
      catalogKey({
        topic: 'inventory',
        store_id: store,
        inventory_item_id: String(40_000_000_000 + i),
        variant_id: null,
        location_id: String(70_000_000 + (i % 3)),
      }),
    );
    const used = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
    const base = await used();
    const guard = new VersionGuard(redis);
    for (let i = 0; i < keys.length; i += 5000)
      await guard.check(
        keys
          .slice(i, i + 5000)
          .map((key) => ({ topic: 'inventory', storeId: store, key, versionMs: 1_764_000_000_000, tombstone: false })),
      );
    const slots = (await used()) - base;
    await redis.flushall();
    const base2 = await used();
    for (let i = 0; i < keys.length; i += 5000) {
      const batch: Record<string, string> = {};
      for (const k of keys.slice(i, i + 5000)) batch[k] = '1764000000000';
      await redis.hset(`sd:catalog:version:inventory:${store}`, batch);
    }
    const oneHash = (await used()) - base2;
    console.log(
      `version guard, 200 000 keys: ${(oneHash / keys.length).toFixed(0)} B per key in one hash, ${(slots / keys.length).toFixed(0)} B in ${GUARD_SLOTS} slots`,
    );
    expect(slots).toBeLessThan(oneHash / 2);
  });
});
