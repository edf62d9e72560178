// The results cache behind `X-Service-Results-Cache: HIT|MISS`: a response body (without its
// attributionToken, which is per request) in Redis, keyed by
//   sf:rc:{<store>}:<catalog version>.<configuration generation>[.<schedule epoch>]:<sha256 of endpoint,
//   path and body, and the resolved request scope (market, B2B location, channel, geo, device, customer,
//   marketing, locale)>
// so every key is scoped by store, and a catalog change (the in-process index version), a store
// configuration change (the store view's generation) or, on browse, a merchandising schedule boundary
// passing (the latest rule or banner start/end reached: results/merch.ts scheduleEpoch) makes every older
// entry unreachable: nothing stale is ever served, and the old entries expire (TTL). Identity ids (session, device, customer) are left out of
// the key: they do not change browse or facets results (B2B scope is in it through the location).
// Redis errors or slowness (> 50 ms) count as a miss; a write never delays the response.
//
// Two tiers: a bounded in-process LRU (by bytes, `localBytes`, default 64 MiB) answers repeated requests
// without a Redis round trip (under load a round trip waits behind the busy event loop) and holds each
// entry decoded by its endpoint (results/answer.ts: the meta parsed once, not per request); Redis shares
// entries between processes and restarts. Both hold the same immutable values under versioned keys, so
// neither can serve a stale answer.
import { hash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RequestContext } from '../context.ts';
import { counter } from '../../common/metrics.ts';

const lookups = () =>
  counter('storefront_results_cache_total', 'Results cache lookups by endpoint and result', ['kind', 'result']);

export interface ResultsCacheOptions {
  ttlSeconds?: number;
  timeoutMs?: number;
  /** in-process tier budget in bytes (the values' UTF-8 bytes, the keys as UTF-16); 0 turns it off */
  localBytes?: number;
  /** bytes of values this process writes to Redis per TTL window at most (see ResultsCache.set) */
  redisBytesPerTtl?: number;
}

/** A least-recently-used map of decoded values bounded by the total size of their raw bytes. */
class LocalLru {
  private readonly map = new Map<string, { value: unknown; size: number; expires: number }>();
  private bytes = 0;
  private readonly budget: number;
  constructor(budget: number) {
    this.budget = budget;
  }
  get(key: string): unknown {
    const e = this.map.get(key);
    if (!e) return undefined;
    this.map.delete(key);
    if (e.expires <= Date.now()) {
      this.bytes -= e.size;
      return undefined;
    }
    this.map.set(key, e); // most recent last
    return e.value;
  }
  set(key: string, value: unknown, size: number, ttlMs: number): void {
    if (size > this.budget / 4) return;
    const old = this.map.get(key);
    if (old) {
      this.map.delete(key);
      this.bytes -= old.size;
    }
    this.map.set(key, { value, size, expires: Date.now() + ttlMs });
    this.bytes += size;
    for (const [k, e] of this.map) {
      if (this.bytes <= this.budget) break;
      this.map.delete(k);
      this.bytes -= e.size;
    }
  }
}

/**
 * What a cached value becomes in this process (parsed once per entry, not per request), from its UTF-8
 * bytes as Redis holds them. One key is always read with one decoder: the key's digest covers the endpoint.
 */
export type Decode<T> = (bytes: Buffer) => T;

export class ResultsCache {
  private readonly redis: Redis;
  private readonly ttl: number;
  private readonly timeoutMs: number;
  private readonly metric = lookups();
  private readonly local: LocalLru | null;
  private readonly redisBudget: number;
  /** the current TTL window's start and the bytes written to Redis in it */
  private window = { start: 0, bytes: 0 };

  constructor(redis: Redis, opts: ResultsCacheOptions = {}) {
    this.redis = redis;
    this.ttl = opts.ttlSeconds ?? 300;
    this.timeoutMs = opts.timeoutMs ?? 50;
    this.redisBudget = opts.redisBytesPerTtl ?? 64 * 1024 * 1024;
    const budget = opts.localBytes ?? 64 * 1024 * 1024;
    this.local = budget > 0 ? new LocalLru(budget) : null;
  }

  key(storeId: string, generation: string, kind: string, path: string, body: unknown, rc: RequestContext): string {
    const scope = {
      market: rc.market?.code ?? null,
      b2b: rc.b2b?.companyLocationId ?? null,
      channel: rc.shoppingChannel,
      geo: [rc.geo.country ?? rc.detectedCountry, rc.geo.province, rc.geo.city],
      device: rc.deviceType,
      customer: [rc.customer.tags, rc.customer.signedIn, rc.customer.returning, rc.customer.segments],
      marketing: rc.marketing,
      locale: rc.locale,
      currency: rc.currency,
      custom: rc.custom,
      // what personalizes search and blocks: another shopper's cart or history must not share an answer
      personal: [
        rc.productsInCart.map((c) => [c.productId, c.variantId, c.price, c.quantity]),
        rc.productsViewed.map((v) => v.productId),
        rc.productsPurchased.map((p) => p.productId),
        rc.priorSearches.map((p) => p.searchQuery),
        rc.freeShippingThreshold,
      ],
    };
    const { identity: _identity, context: _context, ...rest } = (body ?? {}) as Record<string, unknown>;
    const digest = hash('sha256', JSON.stringify([kind, path, rest, scope]), 'base64url');
    return `sf:rc:{${storeId}}:${generation}:${digest}`;
  }

  /** The cached value, decoded, or null. */
  async get<T>(key: string, kind: string, decode: Decode<T>): Promise<T | null> {
    const near = this.local?.get(key);
    if (near !== undefined) {
      this.metric.inc({ kind, result: 'hit_local' });
      return near as T;
    }
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.fetch(key, kind, decode);
      this.inflight.set(key, pending);
      void pending.finally(() => this.inflight.delete(key));
    }
    return pending as Promise<T | null>;
  }

  /**
   * The cached value, else `compute()`'s, cached; decoded either way. Concurrent requests for one key share
   * one Redis GET, and of those that find nothing only the first computes: `compute` runs synchronously
   * right after the shared GET and fills the in-process tier before the next waiter looks again.
   */
  async getOrCompute<T>(
    key: string,
    kind: string,
    compute: () => string,
    decode: Decode<T>,
  ): Promise<{ value: T; hit: boolean }> {
    const cached = await this.get(key, kind, decode);
    if (cached !== null) return { value: cached, hit: true };
    const computed = this.local?.get(key);
    if (computed !== undefined) {
      this.metric.inc({ kind, result: 'hit_local' });
      return { value: computed as T, hit: true };
    }
    return { value: this.set(key, compute(), decode), hit: false };
  }
  private readonly inflight = new Map<string, Promise<unknown>>();

  private async fetch<T>(key: string, kind: string, decode: Decode<T>): Promise<T | null> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const raw = await Promise.race([
        this.redis.getBuffer(key),
        new Promise<null>((resolve) => {
          timer = setTimeout(() => resolve(null), this.timeoutMs);
        }),
      ]);
      this.metric.inc({ kind, result: raw === null ? 'miss' : 'hit' });
      if (raw === null) return null;
      const value = decode(raw);
      this.local?.set(key, value, raw.length + key.length * 2, this.ttl * 1000);
      return value;
    } catch {
      this.metric.inc({ kind, result: 'error' });
      return null;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * stores a computed value (Redis in the background) and returns it decoded. The value is encoded to UTF-8
   * once: the decoder and the Redis write share those bytes (written as a string, ioredis would encode it
   * again; a profile of search misses at 100 000 products had that write at 8 % of the main thread).
   */
  set<T>(key: string, raw: string, decode: Decode<T>): T {
    const bytes = Buffer.from(raw, 'utf8');
    const decoded = decode(bytes);
    this.local?.set(key, decoded, bytes.length + key.length * 2, this.ttl * 1000);
    // Redis holds each value for the TTL, in the instance that also holds dedup claims and session state: a
    // stream of distinct requests (long-tail queries, personal contexts; a browse answer is ≈ 85 KB) would
    // grow it without bound. Each process writes at most `redisBudget` bytes per TTL window; what was
    // written expires within the next window, so this process's entries stay under twice the budget. Past
    // the budget, values stay in the process only.
    const now = Date.now();
    if (now - this.window.start >= this.ttl * 1000) this.window = { start: now, bytes: 0 };
    if (this.window.bytes + bytes.length <= this.redisBudget) {
      this.window.bytes += bytes.length;
      this.redis.set(key, bytes, 'EX', this.ttl).catch(() => undefined);
    } else this.skipped.inc();
    return decoded;
  }
  private readonly skipped = counter(
    'storefront_results_cache_redis_skipped_total',
    "Computed results not written to Redis: the TTL window's write budget was spent",
  );
}

/** `compute()`'s answer through the cache when there is one and the request is cacheable (`key`) */
export async function cachedOrComputed<T>(
  cache: ResultsCache | null,
  key: string | null,
  kind: string,
  compute: () => string,
  decode: Decode<T>,
): Promise<{ value: T; hit: boolean }> {
  if (key && cache) return cache.getOrCompute(key, kind, compute, decode);
  return { value: decode(Buffer.from(compute(), 'utf8')), hit: false };
}
