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
// without a Redis round trip (under load a round trip waits behind the busy event loop); Redis shares
// entries between processes and restarts. Both hold the same immutable values under versioned keys, so
// neither can serve a stale answer.
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RequestContext } from '../context.ts';
import { counter } from '../../common/metrics.ts';

const lookups = () =>
  counter('storefront_results_cache_total', 'Results cache lookups by endpoint and result', ['kind', 'result']);

export interface ResultsCacheOptions {
  ttlSeconds?: number;
  timeoutMs?: number;
  /** in-process tier budget in bytes (UTF-16 length × 2); 0 turns it off */
  localBytes?: number;
}

/** A least-recently-used map of strings bounded by their total size. */
class LocalLru {
  private readonly map = new Map<string, { value: string; expires: number }>();
  private bytes = 0;
  private readonly budget: number;
  constructor(budget: number) {
    this.budget = budget;
  }
  get(key: string): string | null {
    const e = this.map.get(key);
    if (!e) return null;
    this.map.delete(key);
    if (e.expires <= Date.now()) {
      this.bytes -= e.value.length * 2;
      return null;
    }
    this.map.set(key, e); // most recent last
    return e.value;
  }
  set(key: string, value: string, ttlMs: number): void {
    const size = value.length * 2;
    if (size > this.budget / 4) return;
    const old = this.map.get(key);
    if (old) {
      this.map.delete(key);
      this.bytes -= old.value.length * 2;
    }
    this.map.set(key, { value, expires: Date.now() + ttlMs });
    this.bytes += size;
    for (const [k, e] of this.map) {
      if (this.bytes <= this.budget) break;
      this.map.delete(k);
      this.bytes -= e.value.length * 2;
    }
  }
}

export class ResultsCache {
  private readonly redis: Redis;
  private readonly ttl: number;
  private readonly timeoutMs: number;
  private readonly metric = lookups();
  private readonly local: LocalLru | null;

  constructor(redis: Redis, opts: ResultsCacheOptions = {}) {
    this.redis = redis;
    this.ttl = opts.ttlSeconds ?? 300;
    this.timeoutMs = opts.timeoutMs ?? 50;
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
    const digest = createHash('sha256')
      .update(JSON.stringify([kind, path, rest, scope]))
      .digest('base64url');
    return `sf:rc:{${storeId}}:${generation}:${digest}`;
  }

  /** The cached value, or null. */
  async get(key: string, kind: string): Promise<string | null> {
    const near = this.local?.get(key);
    if (near) {
      this.metric.inc({ kind, result: 'hit_local' });
      return near;
    }
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.fetch(key, kind);
      this.inflight.set(key, pending);
      void pending.finally(() => this.inflight.delete(key));
    }
    return pending;
  }

  /**
   * The cached value, else `compute()`'s, cached. Concurrent requests for one key share one Redis GET, and
   * of those that find nothing only the first computes: `compute` runs synchronously right after the
   * shared GET and fills the in-process tier before the next waiter looks again.
   */
  async getOrCompute(key: string, kind: string, compute: () => string): Promise<{ value: string; hit: boolean }> {
    const cached = await this.get(key, kind);
    if (cached !== null) return { value: cached, hit: true };
    const computed = this.local?.get(key);
    if (computed) {
      this.metric.inc({ kind, result: 'hit_local' });
      return { value: computed, hit: true };
    }
    const value = compute();
    this.set(key, value);
    return { value, hit: false };
  }
  private readonly inflight = new Map<string, Promise<string | null>>();

  private async fetch(key: string, kind: string): Promise<string | null> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const value = await Promise.race([
        this.redis.get(key),
        new Promise<null>((resolve) => {
          timer = setTimeout(() => resolve(null), this.timeoutMs);
        }),
      ]);
      this.metric.inc({ kind, result: value === null ? 'miss' : 'hit' });
      if (value !== null) this.local?.set(key, value, this.ttl * 1000);
      return value;
    } catch {
      this.metric.inc({ kind, result: 'error' });
      return null;
    } finally {
      clearTimeout(timer);
    }
  }

  set(key: string, value: string): void {
    this.local?.set(key, value, this.ttl * 1000);
    this.redis.set(key, value, 'EX', this.ttl).catch(() => undefined);
  }
}
