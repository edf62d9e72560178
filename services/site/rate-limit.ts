// Per-IP rate limits of the site's forms, in Redis: a fixed window per (form, client address) — one INCR
// and, on the window's first hit, its expiry, in one script. Over the limit: 429 with Retry-After = the
// window's remaining time. When Redis fails the request is admitted (fail open, logged): a broken limiter
// must not turn signups into 5xx.
import type { Redis } from 'ioredis';

export interface Limit {
  /** requests per window per address */
  max: number;
  windowMs: number;
}

const SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}
`;

export type LimitResult = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export class SiteRateLimiter {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly onError: (err: Error) => void;
  private readonly timeoutMs: number;

  constructor(redis: Redis, opts: { prefix?: string; onError?: (err: Error) => void; timeoutMs?: number } = {}) {
    this.redis = redis;
    this.timeoutMs = opts.timeoutMs ?? 250;
    this.prefix = opts.prefix ?? 'site:rl';
    this.onError = opts.onError ?? (() => {});
  }

  async take(form: string, ip: string, limit: Limit): Promise<LimitResult> {
    const key = `${this.prefix}:${form}:${ip}`;
    try {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`redis: no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      });
      const [n, ttl] = (await Promise.race([this.redis.eval(SCRIPT, 1, key, String(limit.windowMs)), timeout]).finally(
        () => clearTimeout(timer),
      )) as [number, number];
      if (n <= limit.max) return { allowed: true };
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(ttl / 1000)) };
    } catch (err) {
      this.onError(err as Error);
      return { allowed: true };
    }
  }
}
