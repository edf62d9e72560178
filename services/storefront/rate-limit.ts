// Per-store and per-client-IP-within-store token buckets, shared through Redis, decided locally.
//
// Each process keeps a local copy of every bucket it uses and decides from it, synchronously: a request
// passes only when both buckets hold a token, a refusal takes nothing, and the answer carries the wait
// until the refusing bucket(s) hold a token again (→ Retry-After). What the process took is written to
// Redis in the background, every `syncMs` (default 20 ms), for all buckets at once: one Lua script per
// store in one pipeline (one round trip), which subtracts the consumption from the shared bucket
// (refilled by Redis' own clock, so every process shares one clock) and answers its level; the local
// copy then becomes that level minus what was taken meanwhile.
//
//   cold bucket  never seen by this process, or not synced for `maxStaleMs` (default 250 ms): the request
//                waits for one sync (requests arriving together share it), so a new client or a bucket
//                another process drained is decided on Redis' state: for a single process the
//                decisions are exactly those of a bucket in Redis checked per request.
//   warm bucket  decided at once from the local copy, no I/O on the request path.
//   several processes  each decides on the shared level as of its last sync (at most `syncMs` old for a
//                bucket it uses, `maxStaleMs` for one it has not used), so together they can overdraw a
//                bucket by about one sync interval of their traffic. The level may go negative (down
//                to −burst): that debt is repaid before the bucket admits again, so the long-run rate
//                holds. A bucket that refuses is read again with the next sync.
//
// Redis trouble must not take the read API down with it: when a sync errors or takes longer than
// `timeoutMs`, the waiting requests are decided from the local buckets alone (a bucket never seen
// starts full) and the admitted ones are counted through `onDegraded`; for the next second cold buckets
// do not wait for Redis. Consumption a failed sync could not write is sent again with the next one; a
// late sync is still awaited and applied (Redis most likely ran it), so nothing is counted twice.
import type { Redis } from 'ioredis';

export interface RateLimitSettings {
  /** per store: sustained requests per second (0 = no store limit) and bucket size */
  storePerSec: number;
  storeBurst: number;
  /** per client IP within a store (0 = no per-IP limit) */
  ipPerSec: number;
  ipBurst: number;
  /** a sync that takes longer than this counts as failed (requests waiting on it are decided locally) */
  timeoutMs: number;
  /** how often local consumption is written to Redis (default 20 ms) */
  syncMs?: number;
  /** a bucket not synced for this long is read from Redis again before its next decision (default 250 ms) */
  maxStaleMs?: number;
}

export type RateLimitResult =
  | { allowed: true; degraded?: boolean }
  | { allowed: false; retryAfterMs: number; scope: 'store' | 'ip' };

/**
 * Per key (KEYS[i]), ARGV[3i-2..3i] = rate/s, burst, tokens taken since the last sync. Refills by Redis'
 * TIME, subtracts what was taken (down to −burst), stores the bucket when it changed and returns each
 * level in thousandths of a token.
 */
const SYNC_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i = 1, #KEYS do
  local rate = tonumber(ARGV[i * 3 - 2])
  local burst = tonumber(ARGV[i * 3 - 1])
  local used = tonumber(ARGV[i * 3])
  local b = redis.call('HMGET', KEYS[i], 'tk', 'ts')
  local tokens = tonumber(b[1])
  local ts = tonumber(b[2])
  if tokens == nil or ts == nil then tokens = burst; ts = now end
  local elapsed = now - ts
  if elapsed < 0 then elapsed = 0 end
  tokens = math.min(burst, tokens + elapsed * rate / 1000)
  if used > 0 then
    tokens = math.max(-burst, tokens - used)
    redis.call('HSET', KEYS[i], 'tk', tostring(tokens), 'ts', now)
    redis.call('PEXPIRE', KEYS[i], math.ceil((burst - tokens) * 1000 / rate) + 1000)
  end
  out[i] = math.floor(tokens * 1000)
end
return out
`;

type WithCommand = Redis & {
  sfRateLimitSync(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
};

export interface RateLimiter {
  /** synchronous for buckets this process knows (no promise); a promise when one must be read first */
  take(storeId: string, ip: string | null): RateLimitResult | Promise<RateLimitResult>;
  /** write what is pending (bounded by timeoutMs) and stop the background sync */
  close(): Promise<void>;
}

class Bucket {
  readonly key: string;
  readonly rate: number;
  readonly burst: number;
  tokens: number;
  /** local ms of `tokens` */
  at: number;
  /** taken locally and not yet sent */
  pending = 0;
  /** taken and in the sync in flight */
  sending = 0;
  /** local ms of the last sync that answered; -Infinity = never */
  syncedAt = Number.NEGATIVE_INFINITY;
  lastUse: number;
  constructor(key: string, rate: number, burst: number, now: number) {
    this.key = key;
    this.rate = rate;
    this.burst = burst;
    this.tokens = burst;
    this.at = now;
    this.lastUse = now;
  }
  refill(now: number): void {
    if (now > this.at) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) * this.rate) / 1000);
      this.at = now;
    }
  }
  /** ms until one token is there (0 = now) */
  waitMs(): number {
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) * 1000) / this.rate);
  }
}

interface StoreBuckets {
  store: Bucket | null;
  ips: Map<string, Bucket>;
}

interface Waiter {
  storeId: string;
  ip: string | null;
  resolve(r: RateLimitResult): void;
}

const ALLOWED: RateLimitResult = Object.freeze({ allowed: true }) as RateLimitResult;
const ALLOWED_DEGRADED: RateLimitResult = Object.freeze({ allowed: true, degraded: true }) as RateLimitResult;
/** after a failed sync, cold buckets are decided locally for this long instead of waiting for Redis */
const BREAKER_MS = 1_000;
/** buckets unused this long (and with nothing to write) are forgotten */
const IDLE_MS = 30_000;

export function createRateLimiter(
  redis: Redis,
  settings: RateLimitSettings,
  onDegraded?: (err: Error) => void,
): RateLimiter {
  const r = redis as WithCommand;
  if (typeof r.sfRateLimitSync !== 'function') r.defineCommand('sfRateLimitSync', { lua: SYNC_SCRIPT });
  const storeOn = settings.storePerSec > 0;
  const ipOn = settings.ipPerSec > 0;
  const syncMs = settings.syncMs ?? 20;
  const maxStaleMs = settings.maxStaleMs ?? 250;
  const now = () => performance.now();

  const stores = new Map<string, StoreBuckets>();
  /** buckets with consumption to write or a read requested */
  const dirty = new Set<Bucket>();
  let waiters: Waiter[] = [];
  let syncing = false;
  let again = false;
  let immediate: NodeJS.Immediate | undefined;
  let brokenUntil = 0;
  let syncStarted = 0;
  let lastError: Error = new Error('rate limiter: Redis unavailable');
  let closed = false;

  function bucketsOf(storeId: string, ip: string | null, t: number): [Bucket | null, Bucket | null] {
    let s = stores.get(storeId);
    if (!s) {
      // the store id is in every key (tenancy), in a hash tag so a cluster keeps a store's keys on one slot
      s = {
        store: storeOn ? new Bucket(`sf:rl:{${storeId}}`, settings.storePerSec, settings.storeBurst, t) : null,
        ips: new Map(),
      };
      stores.set(storeId, s);
    }
    let ib: Bucket | null = null;
    if (ipOn) {
      const ipKey = ip ?? 'unknown';
      ib = s.ips.get(ipKey) ?? null;
      if (!ib) {
        ib = new Bucket(`sf:rl:{${storeId}}:ip:${ipKey}`, settings.ipPerSec, settings.ipBurst, t);
        s.ips.set(ipKey, ib);
      }
    }
    return [s.store, ib];
  }

  const cold = (b: Bucket | null, t: number) => b !== null && t - b.syncedAt > maxStaleMs;

  function decide(sb: Bucket | null, ib: Bucket | null, t: number, degraded: boolean): RateLimitResult {
    if (sb) {
      sb.refill(t);
      sb.lastUse = t;
    }
    if (ib) {
      ib.refill(t);
      ib.lastUse = t;
    }
    const w1 = sb ? sb.waitMs() : 0;
    const w2 = ib ? ib.waitMs() : 0;
    if (w1 > 0 || w2 > 0) {
      // a refusing bucket is read again with the next sync: another process may have overdrawn it
      if (w1 > 0 && sb) dirty.add(sb);
      if (w2 > 0 && ib) dirty.add(ib);
      return w1 >= w2
        ? { allowed: false, retryAfterMs: Math.max(1, w1), scope: 'store' }
        : { allowed: false, retryAfterMs: Math.max(1, w2), scope: 'ip' };
    }
    if (sb) {
      sb.tokens -= 1;
      sb.pending += 1;
      dirty.add(sb);
    }
    if (ib) {
      ib.tokens -= 1;
      ib.pending += 1;
      dirty.add(ib);
    }
    if (degraded) {
      onDegraded?.(lastError);
      return ALLOWED_DEGRADED;
    }
    return ALLOWED;
  }

  function resolveLocally(list: Waiter[], degraded: boolean) {
    const t = now();
    for (const w of list) {
      const [sb, ib] = bucketsOf(w.storeId, w.ip, t);
      w.resolve(decide(sb, ib, t, degraded));
    }
  }

  /** consumption of a sync that failed goes back to pending (written by the next one) */
  function requeue(buckets: Bucket[]) {
    for (const b of buckets) {
      b.pending += b.sending;
      b.sending = 0;
      dirty.add(b);
    }
  }

  async function sync(): Promise<void> {
    if (syncing) {
      again = true;
      return;
    }
    if (dirty.size === 0 && waiters.length === 0) return;
    syncing = true;
    syncStarted = now();
    const batch = [...dirty];
    dirty.clear();
    let served: Waiter[] | null = waiters;
    waiters = [];
    for (const b of batch) {
      b.sending = b.pending;
      b.pending = 0;
    }
    // one script per store (cluster: a store's keys share a slot), all in one pipeline
    const byStore = new Map<string, Bucket[]>();
    for (const b of batch) {
      const tag = b.key.slice(0, b.key.indexOf('}') + 1);
      const l = byStore.get(tag);
      if (l) l.push(b);
      else byStore.set(tag, [b]);
    }
    const groups = [...byStore.values()];
    let failed = false;
    const pipeline = r.pipeline() as unknown as {
      sfRateLimitSync(n: number, ...a: (string | number)[]): unknown;
      exec(): Promise<[Error | null, unknown][] | null>;
    };
    for (const g of groups) {
      const args: (string | number)[] = g.map((b) => b.key);
      for (const b of g) args.push(b.rate, b.burst, b.sending);
      pipeline.sfRateLimitSync(g.length, ...args);
    }
    // Requests waiting on this sync are decided locally once it is late; the sync itself is still
    // awaited (a late answer was most likely applied by Redis, so its consumption is not sent twice).
    const timer = setTimeout(() => {
      lastError = new Error(`rate limiter: Redis did not answer within ${settings.timeoutMs} ms`);
      brokenUntil = now() + BREAKER_MS;
      const late = (served ?? []).concat(waiters);
      served = null;
      waiters = [];
      resolveLocally(late, true);
    }, settings.timeoutMs);
    try {
      const results = await pipeline.exec();
      const t = now();
      groups.forEach((g, gi) => {
        const [err, levels] = results?.[gi] ?? [new Error('rate limiter: no reply'), null];
        if (err || !Array.isArray(levels)) {
          failed = true;
          lastError = err ?? new Error('rate limiter: malformed reply');
          requeue(g);
          return;
        }
        g.forEach((b, i) => {
          // Redis' level after what was sent; what was taken here since is still pending
          b.tokens = Number(levels[i]) / 1000 - b.pending;
          b.at = t;
          b.sending = 0;
          b.syncedAt = t;
        });
      });
    } catch (err) {
      failed = true;
      lastError = err as Error;
      requeue(batch);
    } finally {
      clearTimeout(timer);
      syncing = false;
    }
    if (failed) brokenUntil = now() + BREAKER_MS;
    if (served) resolveLocally(served, failed);
    if (again || waiters.length > 0 || (failed && closed)) {
      again = false;
      if (!closed) scheduleNow();
    }
  }

  /** Redis failed recently, or the sync in flight is late */
  const unhealthy = (t: number) => t < brokenUntil || (syncing && t - syncStarted > settings.timeoutMs);

  function scheduleNow() {
    if (immediate || closed) return;
    immediate = setImmediate(() => {
      immediate = undefined;
      void sync();
    });
  }

  const interval = setInterval(() => {
    if (dirty.size > 0) void sync();
  }, syncMs);
  interval.unref();
  const sweeper = setInterval(() => {
    const t = now();
    for (const [storeId, s] of stores) {
      for (const [ip, b] of s.ips) if (t - b.lastUse > IDLE_MS && b.pending === 0 && b.sending === 0) s.ips.delete(ip);
      const sb = s.store;
      if (s.ips.size === 0 && (!sb || (t - sb.lastUse > IDLE_MS && sb.pending === 0 && sb.sending === 0)))
        stores.delete(storeId);
    }
  }, 10_000);
  sweeper.unref();

  return {
    take(storeId, ip) {
      if (!storeOn && !ipOn) return ALLOWED;
      const t = now();
      const [sb, ib] = bucketsOf(storeId, ip, t);
      if (!cold(sb, t) && !cold(ib, t)) return decide(sb, ib, t, false);
      if (closed || unhealthy(t)) return decide(sb, ib, t, true);
      // read the bucket(s) from Redis first; everything cold in this turn of the event loop shares one sync
      if (sb && cold(sb, t)) dirty.add(sb);
      if (ib && cold(ib, t)) dirty.add(ib);
      return new Promise<RateLimitResult>((resolve) => {
        waiters.push({ storeId, ip, resolve });
        scheduleNow();
      });
    },
    async close() {
      closed = true;
      clearInterval(interval);
      clearInterval(sweeper);
      if (immediate) clearImmediate(immediate);
      immediate = undefined;
      const deadline = now() + settings.timeoutMs;
      while ((syncing || dirty.size > 0 || waiters.length > 0) && now() < deadline) {
        if (!syncing) await sync();
        else await new Promise((res) => setTimeout(res, 2));
        if (brokenUntil > now()) break;
      }
      // whoever still waits is decided locally
      resolveLocally(waiters.splice(0), true);
    },
  };
}
