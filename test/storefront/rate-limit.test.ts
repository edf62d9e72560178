// The rate limiter's local buckets against a real redis-server: two limiters on one Redis stand for two
// app processes. What is asserted: cold buckets are read from Redis (concurrent ones in one round trip),
// warm buckets decide without I/O, processes share one budget through the background sync, an overdraw
// between syncs is repaid, and Redis trouble leaves the local buckets in charge.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRateLimiter, type RateLimiter, type RateLimitResult } from '../../services/storefront/rate-limit.ts';
import { type RedisServer, startRedis } from './harness.ts';

let server: RedisServer;
const clients: Redis[] = [];
const limiters: RateLimiter[] = [];

beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  for (const l of limiters) await l.close();
  for (const c of clients) c.disconnect();
  await server?.stop();
});

function client(): Redis {
  const c = new Redis(server.url, { maxRetriesPerRequest: 1 });
  clients.push(c);
  return c;
}

function limiter(
  settings: Partial<Parameters<typeof createRateLimiter>[1]>,
  redis = client(),
  onDegraded?: () => void,
): RateLimiter {
  const l = createRateLimiter(
    redis,
    { storePerSec: 0, storeBurst: 1, ipPerSec: 0, ipBurst: 1, timeoutMs: 200, ...settings },
    onDegraded,
  );
  limiters.push(l);
  return l;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let n = 0;
const storeId = () => `s-rl-${process.pid}-${++n}`;

async function admitted(l: RateLimiter, store: string, ip: string | null, count: number): Promise<RateLimitResult[]> {
  const out: RateLimitResult[] = [];
  for (let i = 0; i < count; i++) out.push(await l.take(store, ip));
  return out;
}

async function evalCalls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/cmdstat_(?:eval|evalsha):calls=(\d+)/g)) calls += Number(m[1]);
  return calls;
}

describe('rate limiter: local buckets synced through Redis', () => {
  it('decides warm buckets synchronously; concurrent cold buckets share one Redis round trip', async () => {
    const redis = client();
    const l = limiter({ storePerSec: 1000, storeBurst: 1000, ipPerSec: 10, ipBurst: 10 });
    const s = storeId();
    const before = await evalCalls(redis);
    const first = l.take(s, '192.0.2.1');
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toEqual({ allowed: true });
    // 40 new clients at once: one script call for all of them
    const cold = Array.from({ length: 40 }, (_, i) => l.take(s, `192.0.2.${i + 10}`));
    expect((await Promise.all(cold)).every((r) => r.allowed)).toBe(true);
    expect((await evalCalls(redis)) - before).toBeLessThan(10); // not one per request
    // now warm: a plain value, no promise
    const warm = l.take(s, '192.0.2.1');
    expect(warm).not.toBeInstanceOf(Promise);
    expect(warm).toEqual({ allowed: true });
  });

  it('writes local consumption to the shared bucket: a second process sees what the first one took', async () => {
    const a = limiter({ storePerSec: 1, storeBurst: 10 });
    const b = limiter({ storePerSec: 1, storeBurst: 10 });
    const s = storeId();
    expect((await admitted(a, s, '198.51.100.1', 6)).every((r) => r.allowed)).toBe(true);
    await sleep(80); // a few sync intervals
    const seen = await admitted(b, s, '198.51.100.2', 6);
    expect(seen.map((r) => r.allowed)).toEqual([true, true, true, true, false, false]);
    const refused = seen[4];
    expect(refused.allowed === false && refused.scope).toBe('store');
    // the shared bucket in Redis holds what both took (10 of 10, ~0 left), scoped by store in the key
    await sleep(80);
    const level = Number(await clients[0].hget(`sf:rl:{${s}}`, 'tk'));
    expect(level).toBeLessThan(0.5);
    expect(level).toBeGreaterThan(-0.5);
  });

  it('an overdraw between syncs becomes debt that is repaid before the bucket admits again', async () => {
    const a = limiter({ storePerSec: 1, storeBurst: 5 });
    const b = limiter({ storePerSec: 1, storeBurst: 5 });
    const s = storeId();
    // both read the full bucket before either has written anything: both admit 5
    const [ra, rb] = await Promise.all([admitted(a, s, '203.0.113.1', 5), admitted(b, s, '203.0.113.2', 5)]);
    expect([...ra, ...rb].every((r) => r.allowed)).toBe(true);
    await sleep(80);
    // 10 taken from a bucket of 5: the level is about −5, so the next token is ~6 s away for both
    // (the one that wrote first learns of the other's share with its next sync: a refusal triggers one)
    for (const l of [a, b]) expect((await l.take(s, '203.0.113.3')).allowed).toBe(false);
    await sleep(60);
    for (const l of [a, b]) {
      const r = await l.take(s, '203.0.113.3');
      expect(r.allowed).toBe(false);
      if (!r.allowed) expect(r.retryAfterMs).toBeGreaterThan(5_000);
    }
  });

  it('keeps limiting from the local buckets while Redis does not answer, and counts those admissions', async () => {
    const redis = client();
    let degraded = 0;
    const l = limiter({ storePerSec: 1, storeBurst: 3, timeoutMs: 100 }, redis, () => degraded++);
    const s = storeId();
    // pause every client (this one included) for longer than the timeout
    const admin = client();
    await admin.call('CLIENT', 'PAUSE', '400', 'ALL');
    const t0 = performance.now();
    const results = await admitted(l, s, '192.0.2.200', 4);
    expect(performance.now() - t0).toBeLessThan(350); // one timeout at most, then local decisions
    expect(results.map((r) => r.allowed)).toEqual([true, true, true, false]);
    expect(results[0]).toEqual({ allowed: true, degraded: true });
    expect(degraded).toBe(3);
    // once Redis answers again, the consumption reaches it (applied once)
    await sleep(600);
    const level = Number(await admin.hget(`sf:rl:{${s}}`, 'tk'));
    expect(level).toBeGreaterThan(-0.5);
    expect(level).toBeLessThan(1);
  });
});
