// Per-store and per-client-IP-within-store token buckets in Redis, checked and taken in one round trip
// (one Lua script over both keys, clocked by Redis' TIME so every app process shares one clock).
// A request passes only when both buckets hold a token; a refusal takes nothing. The answer carries the
// wait until the refusing bucket(s) hold a token again (→ Retry-After).
//
// Redis trouble must not take the read API down with it: a call that errors or takes longer than
// `timeoutMs` is let through (fail-open) and counted in the metrics.
import type { Redis } from 'ioredis';

export interface RateLimitSettings {
  /** per store: sustained requests per second (0 = no store limit) and bucket size */
  storePerSec: number;
  storeBurst: number;
  /** per client IP within a store (0 = no per-IP limit) */
  ipPerSec: number;
  ipBurst: number;
  /** give up on Redis after this long and let the request through */
  timeoutMs: number;
}

export type RateLimitResult =
  | { allowed: true; degraded?: boolean }
  | { allowed: false; retryAfterMs: number; scope: 'store' | 'ip' };

const SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function state(key, rate, burst)
  if rate <= 0 then return nil end
  local b = redis.call('HMGET', key, 'tk', 'ts')
  local tokens = tonumber(b[1])
  local ts = tonumber(b[2])
  if tokens == nil or ts == nil then tokens = burst; ts = now end
  local elapsed = now - ts
  if elapsed < 0 then elapsed = 0 end
  tokens = math.min(burst, tokens + elapsed * rate / 1000)
  return tokens
end
local r1 = tonumber(ARGV[1]); local b1 = tonumber(ARGV[2])
local r2 = tonumber(ARGV[3]); local b2 = tonumber(ARGV[4])
local s1 = state(KEYS[1], r1, b1)
local s2 = state(KEYS[2], r2, b2)
local wait1 = 0
local wait2 = 0
if s1 ~= nil and s1 < 1 then wait1 = math.ceil((1 - s1) * 1000 / r1) end
if s2 ~= nil and s2 < 1 then wait2 = math.ceil((1 - s2) * 1000 / r2) end
if wait1 > 0 or wait2 > 0 then
  if wait1 >= wait2 then return {0, wait1, 1} end
  return {0, wait2, 2}
end
if s1 ~= nil then
  redis.call('HSET', KEYS[1], 'tk', tostring(s1 - 1), 'ts', now)
  redis.call('PEXPIRE', KEYS[1], math.ceil(b1 * 1000 / r1) + 1000)
end
if s2 ~= nil then
  redis.call('HSET', KEYS[2], 'tk', tostring(s2 - 1), 'ts', now)
  redis.call('PEXPIRE', KEYS[2], math.ceil(b2 * 1000 / r2) + 1000)
end
return {1, 0, 0}
`;

type WithCommand = Redis & {
  sfRateLimit(k1: string, k2: string, r1: number, b1: number, r2: number, b2: number): Promise<[number, number, number]>;
};

export interface RateLimiter {
  take(storeId: string, ip: string | null): Promise<RateLimitResult>;
}

export function createRateLimiter(redis: Redis, settings: RateLimitSettings, onDegraded?: (err: Error) => void): RateLimiter {
  const r = redis as WithCommand;
  if (typeof r.sfRateLimit !== 'function') r.defineCommand('sfRateLimit', { numberOfKeys: 2, lua: SCRIPT });
  const disabled = settings.storePerSec <= 0 && settings.ipPerSec <= 0;
  return {
    async take(storeId, ip) {
      if (disabled) return { allowed: true };
      // the store id is in both keys (tenancy), and in a hash tag so a cluster keeps them on one slot
      const storeKey = `sf:rl:{${storeId}}`;
      const ipKey = `sf:rl:{${storeId}}:ip:${ip ?? 'unknown'}`;
      let timer: NodeJS.Timeout | undefined;
      try {
        const res = await Promise.race([
          r.sfRateLimit(storeKey, ipKey, settings.storePerSec, settings.storeBurst, settings.ipPerSec, settings.ipBurst),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`rate limiter timed out after ${settings.timeoutMs} ms`)), settings.timeoutMs);
          }),
        ]);
        if (res[0] === 1) return { allowed: true };
        return { allowed: false, retryAfterMs: Math.max(1, res[1]), scope: res[2] === 1 ? 'store' : 'ip' };
      } catch (err) {
        onDegraded?.(err as Error);
        return { allowed: true, degraded: true };
      } finally {
        if (timer) clearTimeout(timer);
      }
    },
  };
}
