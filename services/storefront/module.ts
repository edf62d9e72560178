// The storefront read API as a module of the app: /api/storefront/v1 on the app's HTTP server, with its
// request-event emitter, its Redis rate limiter and the autocomplete index fed from the trending
// aggregate. Starts after the store-config module (it authenticates through the store directory) and
// the streams module (the trending aggregate it loads).
import { VALUE_SCHEMAS } from '../../schemas/avro/index.ts';
import { createValueCodec } from '../common/kafka/codec.ts';
import { TOPICS } from '../../schemas/topics.ts';
import type { AppContext, AppModule } from '../app/context.ts';
import { topicName } from '../common/config.ts';
import { loadGeoDatabase, parseTrustedProxies } from '../common/enrich.ts';
import { counter, gauge } from '../common/metrics.ts';
import { createRedis } from '../common/redis.ts';
import { createProducerClient } from '../common/kafka/index.ts';
import { createRequestEventEmitter } from './request-events.ts';
import { createSearchServices } from './search/services.ts';
import { storeDirectory } from '../store-config/module.ts';
import { TrendingFeed } from './autocomplete/feed.ts';
import { AutocompleteIndex } from './autocomplete/index.ts';
import { STOREFRONT_PREFIX, storefrontPlugin } from './plugin.ts';
import { createRateLimiter } from './rate-limit.ts';
import { StoreViews } from './store-view.ts';
import { ResultsCache } from './results/cache.ts';
import { CatalogIndex } from './results/catalog.ts';
import { loadTrendingCells } from '../../clickhouse/queries/trending.ts';
import { createDiscoveryServices } from './images/services.ts';
import { createBlockServices } from './blocks/services.ts';

export const storefrontModule: AppModule = {
  name: 'storefront',
  async start(ctx: AppContext) {
    const { config } = ctx;
    const log = ctx.logger.child({ module: 'storefront' });
    const directory = storeDirectory(ctx);
    loadGeoDatabase();

    // request events
    const requestsTopic = topicName(config, TOPICS.requests.name);
    const codec = createValueCodec({ registryUrl: config.schemaRegistryUrl });
    await codec.register(requestsTopic, VALUE_SCHEMAS.requests);
    const emitter = createRequestEventEmitter({ kafka: ctx.kafka, codec, topic: requestsTopic, logger: log });
    ctx.onClose(() => emitter.close());

    // autocomplete index: full load from ClickHouse, live deltas from agg:trending
    const index = new AutocompleteIndex({ minRegionQueries: config.AUTOCOMPLETE_REGION_MIN_QUERIES });
    const subscriber = createRedis(config.redisUrl, { connectionName: 'storefront-trending' });
    subscriber.on('error', (err) => log.warn({ err: err.message }, 'trending subscriber: redis error'));
    const feed = new TrendingFeed({
      index,
      loadCells: (sinceMs) => loadTrendingCells(ctx.db, { sinceMs }),
      subscriber,
      logger: log,
      refreshMs: config.AUTOCOMPLETE_REFRESH_MS,
    });
    await feed
      .start()
      .catch((err: Error) =>
        log.warn({ err: err.message }, 'autocomplete: initial load failed; retrying on the refresh interval'),
      );
    ctx.onClose(async () => {
      await feed.stop();
      index.close();
    });
    const age = gauge('autocomplete_index_age_seconds', 'Seconds since the autocomplete index was last fully reloaded');
    const applied = counter(
      'autocomplete_trending_messages_total',
      'agg:trending messages applied to the autocomplete index',
    );
    let lastApplied = 0;
    const metricsTimer = setInterval(() => {
      if (feed.lastLoadAt) age.set((Date.now() - feed.lastLoadAt) / 1000);
      applied.inc(feed.messagesApplied - lastApplied);
      lastApplied = feed.messagesApplied;
    }, 5_000);
    metricsTimer.unref();
    ctx.onClose(() => clearInterval(metricsTimer));
    ctx.addReadinessCheck('autocomplete', async () => {
      if (!feed.lastLoadAt) throw new Error('trending index not loaded yet');
    });

    const rateLimited = counter(
      'storefront_rate_limit_degraded_total',
      'Storefront requests admitted by the local rate-limit buckets alone because Redis failed or timed out',
    );
    const rateLimiter = createRateLimiter(
      ctx.redis,
      {
        storePerSec: config.STOREFRONT_RATE_LIMIT_PER_SEC,
        storeBurst: config.STOREFRONT_RATE_LIMIT_BURST,
        ipPerSec: config.STOREFRONT_RATE_LIMIT_PER_IP_PER_SEC,
        ipBurst: config.STOREFRONT_RATE_LIMIT_PER_IP_BURST,
        timeoutMs: 50,
      },
      () => rateLimited.inc(),
    );
    ctx.onClose(() => rateLimiter.close());

    // the catalog index: loaded per store on first use, live changes from agg:catalog
    const catalogSubscriber = createRedis(config.redisUrl, { connectionName: 'storefront-catalog' });
    catalogSubscriber.on('error', (err) => log.warn({ err: err.message }, 'catalog subscriber: redis error'));
    const catalog = new CatalogIndex({
      db: ctx.db,
      subscriber: catalogSubscriber,
      logger: log,
      signalsRefreshMs: config.RESULTS_SIGNALS_REFRESH_MS,
    });
    await catalog.start();
    ctx.onClose(async () => {
      await catalog.close();
      catalogSubscriber.disconnect();
    });
    const resultsCache = new ResultsCache(ctx.redis, {
      ttlSeconds: config.RESULTS_CACHE_TTL_SECONDS,
      redisBytesPerTtl: config.RESULTS_CACHE_REDIS_BYTES,
    });

    // search: learned evidence (live from agg:search), prepared-search state, feedback into its topic
    const feedbackTopic = topicName(config, TOPICS.feedback.name);
    await codec.register(feedbackTopic, VALUE_SCHEMAS.feedback);
    const feedbackProducer = createProducerClient(ctx.kafka, { keyHashPartitioner: true });
    ctx.onClose(() => feedbackProducer.close());
    const searchSubscriber = createRedis(config.redisUrl, { connectionName: 'storefront-search' });
    searchSubscriber.on('error', (err) => log.warn({ err: err.message }, 'search subscriber: redis error'));
    const search = await createSearchServices({
      db: ctx.db,
      redis: ctx.redis,
      subscriber: searchSubscriber,
      logger: log,
      // answered 201 only once Kafka acknowledged the record (acks=all, idempotent producer)
      recordFeedback: (r) =>
        feedbackProducer.send([
          { topic: feedbackTopic, key: `${r.store_id}:${r.search_id}`, value: codec.encode(feedbackTopic, r) },
        ]),
    });
    ctx.onClose(async () => {
      await search.close();
      searchSubscriber.disconnect();
    });

    // blocks and similar products: the relations index (live from agg:related), the similar precompute
    const relatedSubscriber = createRedis(config.redisUrl, { connectionName: 'storefront-related' });
    relatedSubscriber.on('error', (err) => log.warn({ err: err.message }, 'related subscriber: redis error'));
    const blocks = await createBlockServices({ db: ctx.db, subscriber: relatedSubscriber, logger: log });
    ctx.onClose(() => {
      blocks.close();
      relatedSubscriber.disconnect();
    });
    const similarPrecomputed = gauge(
      'storefront_similar_precomputed_products',
      'Products whose similar-product neighbours are precomputed, over the stores served so far',
    );
    const similarTimer = setInterval(() => similarPrecomputed.set(blocks.precompute?.precomputed() ?? 0), 5_000);
    similarTimer.unref();
    ctx.onClose(() => clearInterval(similarTimer));

    // content search and image search: the content index (agg:catalog), image features (agg:images), uploads
    const discoverySubscriber = createRedis(config.redisUrl, { connectionName: 'storefront-discovery' });
    discoverySubscriber.on('error', (err) => log.warn({ err: err.message }, 'discovery subscriber: redis error'));
    const discovery = await createDiscoveryServices({
      db: ctx.db,
      redis: ctx.redis,
      subscriber: discoverySubscriber,
      logger: log,
      // IMAGE_FEATURES / IMAGE_MODEL_URL / IMAGE_MODEL: the model the image processors describe the catalog with
      model: config,
    });
    ctx.onClose(() => {
      discovery.close();
      discoverySubscriber.disconnect();
    });

    const views = new StoreViews(directory);
    ctx.onClose(() => views.close());
    await ctx.http.register(storefrontPlugin, {
      prefix: STOREFRONT_PREFIX,
      directory,
      views,
      rateLimiter,
      trustedProxies: parseTrustedProxies(config.TRUSTED_PROXIES),
      bodyLimit: config.STOREFRONT_BODY_LIMIT_BYTES,
      logger: log,
      emit: (e) => emitter.emit(e),
      autocomplete: index,
      catalog,
      resultsCache,
      search,
      discovery,
      blocks,
      build: config.build,
    });
    ctx.announce('storefront API', `http://${config.HOST}:${config.HTTP_PORT}${STOREFRONT_PREFIX}`);
  },
};
