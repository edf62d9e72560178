import { createBlockServices } from '../../services/storefront/blocks/services.ts';
import { createHash, timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { newUlid } from '../../services/common/ids.ts';
import {
  type ConfigInput,
  type ConfigKind,
  type ConfigPayload,
  itemIdOf,
  validateConfig,
} from '../../schemas/config.ts';
import type { RequestEvent } from '../../schemas/requests.ts';
import { parseTrustedProxies } from '../../services/common/enrich.ts';
import { createLogger } from '../../services/common/logger.ts';
import type { AuthResult, ConfigChange, StoreDirectory, StoreRecord } from '../../services/store-config/api.ts';
import { AutocompleteIndex } from '../../services/storefront/autocomplete/index.ts';
import { installFrame } from '../../services/storefront/frame.ts';
import { MAX_PARAM_LENGTH, STOREFRONT_PREFIX, storefrontPlugin } from '../../services/storefront/plugin.ts';
import { createRateLimiter, type RateLimitSettings } from '../../services/storefront/rate-limit.ts';
import { StoreViews } from '../../services/storefront/store-view.ts';
import { ResultsCache } from '../../services/storefront/results/cache.ts';
import { CatalogIndex } from '../../services/storefront/results/catalog.ts';
import { createSearchServices, noFeedbackLog } from '../../services/storefront/search/services.ts';
import { privateDb } from '../helpers/chdb.ts';

export { type RedisServer, startRedis } from '../helpers/redis.ts';

/** A StoreDirectory over memory with the real directory's semantics (hashed tokens, typed items). */
export class MemoryDirectory implements StoreDirectory {
  private readonly stores = new Map<string, StoreRecord>();
  private readonly tokens = new Map<string, { storeId: string; digest: Buffer }>();
  private readonly itemsByStore = new Map<string, Map<ConfigKind, Map<string, unknown>>>();
  private readonly listeners = new Set<(c: ConfigChange) => void>();

  addStore(patch: Partial<StoreRecord> = {}): { storeId: string; token: string } {
    const storeId = patch.storeId ?? `s-${newUlid().toLowerCase()}`;
    const record: StoreRecord = {
      storeId,
      name: 'test store',
      status: 'active',
      primaryMarket: null,
      marketMode: 'ignore',
      autocompleteMode: 'per_region',
      mediaPreloads: { enabled: true, srcsetSizes: [360, 540], rewriteDomain: null, rewriteUrls: true },
      brandPrompt: null,
      inlineCollectionRedirects: false,
      createdAt: new Date().toISOString(),
      ...patch,
    };
    this.stores.set(storeId, record);
    const token = `sf_${newUlid()}`;
    const digest = createHash('sha256').update(token).digest();
    this.tokens.set(digest.toString('hex'), { storeId, digest });
    this.changed(storeId, 'store', storeId);
    return { storeId, token };
  }

  updateStore(storeId: string, patch: Partial<StoreRecord>): void {
    const cur = this.stores.get(storeId);
    if (!cur) throw new Error(`no store ${storeId}`);
    this.stores.set(storeId, { ...cur, ...patch });
    this.changed(storeId, 'store', storeId);
  }

  put<K extends ConfigKind>(storeId: string, kind: K, input: ConfigInput<K>): void {
    const v = validateConfig(kind, input);
    if (!v.ok) throw new Error(`invalid ${kind}: ${JSON.stringify(v.issues)}`);
    let kinds = this.itemsByStore.get(storeId);
    if (!kinds) this.itemsByStore.set(storeId, (kinds = new Map()));
    let m = kinds.get(kind);
    if (!m) kinds.set(kind, (m = new Map()));
    const id = itemIdOf(kind, v.value);
    m.set(id, v.value);
    this.changed(storeId, kind, id);
  }

  private changed(storeId: string, kind: ConfigKind, itemId: string) {
    for (const l of this.listeners) l({ storeId, kind, itemId, deleted: false, offset: '0' });
  }

  authenticate(token: string | undefined | null): AuthResult {
    if (typeof token !== 'string' || token.trim() === '')
      return { ok: false, status: 401, code: 'missing_token', message: 'X-Storefront-Access-Token is required' };
    const digest = createHash('sha256').update(token).digest();
    const owner = this.tokens.get(digest.toString('hex'));
    if (!owner || !timingSafeEqual(owner.digest, digest))
      return { ok: false, status: 401, code: 'invalid_token', message: 'the access token is not valid' };
    const store = this.stores.get(owner.storeId)!;
    if (store.status === 'suspended')
      return { ok: false, status: 402, code: 'store_suspended', message: 'the store is suspended' };
    return { ok: true, store };
  }
  getStore(storeId: string) {
    return this.stores.get(storeId);
  }
  getConfig<K extends string>(storeId: string, kind: K): unknown[] {
    return [
      ...(this.itemsByStore
        .get(storeId)
        ?.get(kind as ConfigKind)
        ?.values() ?? []),
    ];
  }
  async ready() {}
  items<K extends ConfigKind>(storeId: string, kind: K): ConfigPayload<K>[] {
    const m = this.itemsByStore.get(storeId)?.get(kind);
    return m ? [...m.keys()].sort().map((k) => m.get(k) as ConfigPayload<K>) : [];
  }
  item<K extends ConfigKind>(storeId: string, kind: K, itemId: string): ConfigPayload<K> | undefined {
    return this.itemsByStore.get(storeId)?.get(kind)?.get(itemId) as ConfigPayload<K> | undefined;
  }
  onChange(listener: (c: ConfigChange) => void) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export interface Harness {
  app: FastifyInstance;
  directory: MemoryDirectory;
  index: AutocompleteIndex;
  redis: Redis;
  events: RequestEvent[];
  close(): Promise<void>;
}

export const TEST_BUILD = 'frame-test';

/**
 * The plugin as the app mounts it, plus a POST echo route inside a second frame-encapsulated plugin
 * (`/api/storefront/v1-echo/echo`) returning the normalized context, for body/context tests.
 */
export interface HostOptions {
  /** the host's request-id generator (default: Fastify's `req-1`, `req-2`, …) */
  genReqId?: () => string;
  /** when set, the host sets x-request-id / x-service-build itself, as services/app/app.ts does */
  hostBuild?: string;
}

export async function startHarness(
  redisUrl: string,
  rate: Partial<RateLimitSettings> = {},
  bodyLimit = 16 * 1024,
  host: HostOptions = {},
): Promise<Harness> {
  const directory = new MemoryDirectory();
  const index = new AutocompleteIndex({ minRegionQueries: 3, rebuildDebounceMs: 0 });
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const logger = createLogger('storefront-test', 'silent');
  const events: RequestEvent[] = [];
  // a bare host: Fastify's default request ids (`req-1`, …) and no header hooks, so the tests see what
  // the plugin itself guarantees (ULID x-request-id, x-service-build)
  const app = Fastify({
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    bodyLimit: 1024 * 1024,
    ...(host.genReqId ? { genReqId: host.genReqId } : {}),
  });
  const hostBuild = host.hostBuild;
  if (hostBuild !== undefined) {
    app.addHook('onRequest', (req, reply, done) => {
      reply.header('x-request-id', req.id);
      reply.header('x-service-build', hostBuild);
      done();
    });
  }
  const views = new StoreViews(directory);
  const rateLimiter = createRateLimiter(redis, {
    storePerSec: 0,
    storeBurst: 1,
    ipPerSec: 0,
    ipBurst: 1,
    timeoutMs: 200,
    ...rate,
  });
  const frame = {
    directory,
    views,
    rateLimiter,
    trustedProxies: parseTrustedProxies('127.0.0.0/8,::1/128'),
    bodyLimit,
    logger,
    build: TEST_BUILD,
    emit: (e: RequestEvent) => events.push(e),
  };
  const db = await privateDb('storefront_harness');
  const catalog = new CatalogIndex({ db, logger });
  await app.register(storefrontPlugin, {
    ...frame,
    autocomplete: index,
    catalog,
    resultsCache: new ResultsCache(redis),
    search: await createSearchServices({ db, redis, logger, recordFeedback: noFeedbackLog }),
    blocks: await createBlockServices({ db, logger }),
    prefix: STOREFRONT_PREFIX,
  });
  await app.register(
    async (inner) => {
      installFrame(inner, frame);
      inner.post('/echo', { config: { kind: 'search' } }, async (req) => ({ context: req.storefront!.context }));
    },
    { prefix: `${STOREFRONT_PREFIX}-echo` },
  );
  await app.ready();
  return {
    app,
    directory,
    index,
    redis,
    events,
    async close() {
      await app.close();
      await rateLimiter.close();
      index.close();
      views.close();
      redis.disconnect();
    },
  };
}
