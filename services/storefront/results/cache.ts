// The results cache behind `X-Service-Results-Cache: HIT|MISS`: a response body (without its
// attributionToken, which is per request) in Redis, keyed by
//   sf:rc:{<store>}:<catalog version>.<configuration generation>:<sha256 of endpoint, path and body, and the
//   resolved request scope (market, B2B location, channel, geo, device, customer, marketing, locale)>
// so every key is scoped by store, and a catalog change (the in-process index version) or a store
// configuration change (the store view's generation) makes every older entry unreachable: nothing stale is
// ever served, and the old entries expire (TTL). Identity ids (session, device, customer) are left out of
// the key: they do not change browse or facets results (B2B scope is in it through the location).
// Redis errors or slowness (> 50 ms) count as a miss; a write never delays the response.
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RequestContext } from '../context.ts';
import { counter } from '../../common/metrics.ts';

const lookups = () =>
  counter('storefront_results_cache_total', 'Results cache lookups by endpoint and result', ['kind', 'result']);

export interface ResultsCacheOptions {
  ttlSeconds?: number;
  timeoutMs?: number;
}

export class ResultsCache {
  private readonly redis: Redis;
  private readonly ttl: number;
  private readonly timeoutMs: number;
  private readonly metric = lookups();

  constructor(redis: Redis, opts: ResultsCacheOptions = {}) {
    this.redis = redis;
    this.ttl = opts.ttlSeconds ?? 300;
    this.timeoutMs = opts.timeoutMs ?? 50;
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
    };
    const { identity: _identity, context: _context, ...rest } = (body ?? {}) as Record<string, unknown>;
    const digest = createHash('sha256')
      .update(JSON.stringify([kind, path, rest, scope]))
      .digest('base64url');
    return `sf:rc:{${storeId}}:${generation}:${digest}`;
  }

  async get(key: string, kind: string): Promise<string | null> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const value = await Promise.race([
        this.redis.get(key),
        new Promise<null>((resolve) => {
          timer = setTimeout(() => resolve(null), this.timeoutMs);
        }),
      ]);
      this.metric.inc({ kind, result: value === null ? 'miss' : 'hit' });
      return value;
    } catch {
      this.metric.inc({ kind, result: 'error' });
      return null;
    } finally {
      clearTimeout(timer);
    }
  }

  set(key: string, value: string): void {
    this.redis.set(key, value, 'EX', this.ttl).catch(() => undefined);
  }
}
