// A host for the content-search and image-search suites: the storefront frame (auth, rate limit,
// validation, errors, request events) with only the content and image routes mounted, over the discovery
// services a suite chooses (a content index on a chDB database, an image index, Redis uploads).
import Fastify, { type FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import type { RequestEvent } from '../../schemas/requests.ts';
import { parseTrustedProxies } from '../../services/common/enrich.ts';
import { createLogger } from '../../services/common/logger.ts';
import { contentRoutes } from '../../services/storefront/content/routes.ts';
import { installFrame } from '../../services/storefront/frame.ts';
import { imageRoutes } from '../../services/storefront/images/routes.ts';
import type { DiscoveryServices } from '../../services/storefront/images/services.ts';
import { MAX_PARAM_LENGTH, STOREFRONT_PREFIX } from '../../services/storefront/plugin.ts';
import { createRateLimiter } from '../../services/storefront/rate-limit.ts';
import { CatalogIndex } from '../../services/storefront/results/catalog.ts';
import { serializerCompiler, validatorCompiler } from '../../services/storefront/schema-compilers.ts';
import { StoreViews } from '../../services/storefront/store-view.ts';
import type { Db } from '../../clickhouse/client.ts';
import { MemoryDirectory } from './harness.ts';

export interface DiscoveryHost {
  app: FastifyInstance;
  directory: MemoryDirectory;
  storeId: string;
  token: string;
  events: RequestEvent[];
  redis: Redis;
  close(): Promise<void>;
}

export async function startDiscoveryHost(
  redisUrl: string,
  db: Db,
  discovery: (catalog: CatalogIndex) => DiscoveryServices,
): Promise<DiscoveryHost> {
  const directory = new MemoryDirectory();
  const { storeId, token } = directory.addStore();
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const logger = createLogger('discovery-test', (process.env.TEST_LOG_LEVEL as 'warn') ?? 'silent');
  const events: RequestEvent[] = [];
  const views = new StoreViews(directory);
  const rateLimiter = createRateLimiter(redis, {
    storePerSec: 0,
    storeBurst: 1,
    ipPerSec: 0,
    ipBurst: 1,
    timeoutMs: 200,
  });
  const frame = {
    directory,
    views,
    rateLimiter,
    trustedProxies: parseTrustedProxies('127.0.0.0/8,::1/128'),
    bodyLimit: 64 * 1024,
    logger,
    build: 'discovery-test',
    emit: (e: RequestEvent) => events.push(e),
  };
  const catalog = new CatalogIndex({ db, logger });
  const services = discovery(catalog);
  const app = Fastify({ routerOptions: { maxParamLength: MAX_PARAM_LENGTH }, bodyLimit: 1024 * 1024 });
  await app.register(
    async (host) => {
      installFrame(host, frame);
      host.setValidatorCompiler(validatorCompiler);
      host.setSerializerCompiler(serializerCompiler);
      await contentRoutes(host, { ...services, catalog, logger });
      await imageRoutes(host, { ...services, catalog, directory });
    },
    { prefix: STOREFRONT_PREFIX },
  );
  await app.ready();
  return {
    app,
    directory,
    storeId,
    token,
    events,
    redis,
    async close() {
      await app.close();
      await rateLimiter.close();
      views.close();
      redis.disconnect();
    },
  };
}
