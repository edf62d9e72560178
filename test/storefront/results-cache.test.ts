// The results cache's two tiers against a real Redis: the in-process tier answers without Redis and is
// bounded by bytes (least recently used out first); Redis answers what the process does not hold; each
// entry is decoded once per process, not per request.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResultsCache } from '../../services/storefront/results/cache.ts';
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

const flush = () => new Promise((r) => setTimeout(r, 50));
const text = (bytes: Buffer) => bytes.toString();

describe('results cache', () => {
  it('serves a value from the process after Redis lost it, and from Redis for another process', async () => {
    const a = new ResultsCache(redis);
    a.set('sf:rc:{s1}:1.1:x', 'value-x', text);
    await flush();
    await redis.del('sf:rc:{s1}:1.1:x');
    expect(await a.get('sf:rc:{s1}:1.1:x', 'browse', text)).toBe('value-x');
    const b = new ResultsCache(redis, { localBytes: 0 });
    expect(await b.get('sf:rc:{s1}:1.1:x', 'browse', text)).toBeNull();
    a.set('sf:rc:{s1}:1.1:y', 'value-y', text);
    await flush();
    expect(await b.get('sf:rc:{s1}:1.1:y', 'browse', text)).toBe('value-y');
  });

  it('keeps the in-process tier within its byte budget, dropping the least recently used', async () => {
    const value = 'v'.repeat(1_996); // 2 000 bytes with its key (UTF-8 value, UTF-16 key)
    const c = new ResultsCache(redis, { localBytes: 9_000 });
    c.set('k1', value, text);
    c.set('k2', value, text);
    c.set('k3', value, text);
    await flush();
    expect(await c.get('k1', 'browse', text)).toBe(value); // k1 is now the most recent
    c.set('k4', value, text); // 4 × 2 000 ≤ 9 000
    c.set('k5', value, text); // over budget: k2 (least recent) goes
    await flush();
    await redis.del('k1', 'k2', 'k3', 'k4', 'k5');
    const held = [];
    for (const k of ['k1', 'k2', 'k3', 'k4', 'k5']) held.push((await c.get(k, 'browse', text)) !== null);
    expect(held).toEqual([true, false, true, true, true]);
  });

  it('computes once for many concurrent misses of one key', async () => {
    const c = new ResultsCache(redis);
    let computed = 0;
    const compute = () => {
      computed++;
      return `answer-${computed}`;
    };
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => c.getOrCompute('sf:rc:{s2}:1.1:q', 'browse', compute, text)),
    );
    expect(computed).toBe(1);
    expect(new Set(answers.map((a) => a.value))).toEqual(new Set(['answer-1']));
    expect(answers.filter((a) => !a.hit)).toHaveLength(1);
  });

  it('decodes an entry once: later hits share the decoded value, a second process decodes what Redis holds', async () => {
    let decoded = 0;
    const decode = (bytes: Buffer) => {
      decoded++;
      return { meta: bytes.toString('utf8', 0, bytes.indexOf(0x0a)), size: bytes.length };
    };
    const a = new ResultsCache(redis);
    const first = await a.getOrCompute('sf:rc:{s3}:1.1:d', 'browse', () => '{"m":"é"}\n{"e":1}', decode);
    const again = await a.getOrCompute('sf:rc:{s3}:1.1:d', 'browse', () => 'never', decode);
    // 18 bytes: 17 characters, é in two
    expect(first).toEqual({ value: { meta: '{"m":"é"}', size: 18 }, hit: false });
    expect(again.hit).toBe(true);
    expect(again.value).toBe(first.value);
    expect(decoded).toBe(1);
    await flush();
    const b = new ResultsCache(redis);
    const other = await b.getOrCompute('sf:rc:{s3}:1.1:d', 'browse', () => 'never', decode);
    expect(other).toEqual({ value: { meta: '{"m":"é"}', size: 18 }, hit: true });
    expect(decoded).toBe(2);
  });

  it('writes at most its byte budget to Redis per TTL window, keeping the rest in the process', async () => {
    // 1 000-byte values, a 2 500-byte budget: two per window go to Redis
    const c = new ResultsCache(redis, { ttlSeconds: 1, redisBytesPerTtl: 2_500 });
    const value = 'w'.repeat(1_000);
    for (const k of ['b1', 'b2', 'b3']) c.set(`sf:rc:{s4}:1.1:${k}`, value, text);
    await flush();
    expect(await redis.exists('sf:rc:{s4}:1.1:b1', 'sf:rc:{s4}:1.1:b2', 'sf:rc:{s4}:1.1:b3')).toBe(2);
    expect(await redis.exists('sf:rc:{s4}:1.1:b3')).toBe(0);
    expect(await c.get('sf:rc:{s4}:1.1:b3', 'browse', text)).toBe(value);
    // the next window has a budget again
    await new Promise((r) => setTimeout(r, 1_050));
    c.set('sf:rc:{s4}:1.1:b4', value, text);
    await flush();
    expect(await redis.exists('sf:rc:{s4}:1.1:b4')).toBe(1);
  });
});
