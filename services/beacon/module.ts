// The intake module of the app: POST /beacon on the app's HTTP server, with its own idempotent producer,
// Redis dedup and the value codec. Starts after the store-config module (it authenticates through the
// store directory). `createBeacon` wires the same pieces for a process or a test of its own.
import { availableParallelism } from 'node:os';
import type { Redis } from 'ioredis';
import { VALUE_SCHEMAS } from '../../schemas/avro/index.ts';
import { createValueCodec, type ValueCodec } from '../common/kafka/codec.ts';
import { TOPICS } from '../../schemas/topics.ts';
import type { AppContext, AppModule } from '../app/context.ts';
import { type Config, topicName } from '../common/config.ts';
import { loadGeoDatabase, parseTrustedProxies } from '../common/enrich.ts';
import { createProducerClient, ensureTopics, type Kafka, topicConfigs } from '../common/kafka/index.ts';
import type { Logger } from '../common/logger.ts';
import type { StoreDirectory } from '../store-config/api.ts';
import { storeDirectory } from '../store-config/module.ts';
import { createEventDedup } from './dedup.ts';
import { beaconMetrics } from './metrics.ts';
import { type BeaconPluginOptions, beaconPlugin } from './plugin.ts';
import { fastPathSupports } from './fast-event.ts';
import { holdHere, type PrepareSettings, prepareBatch } from './prepare.ts';
import { createPreparePool, type PreparePool } from './prepare-pool.ts';
import { createProduceQueue, type ProduceQueue, type QueuedRecord } from './produce-queue.ts';

export type BeaconSettings = Pick<
  Config,
  | 'KAFKA_TOPIC_PREFIX'
  | 'TRUSTED_PROXIES'
  | 'BEACON_BODY_LIMIT_BYTES'
  | 'BEACON_MAX_CLOCK_SKEW_MS'
  | 'BEACON_PRODUCE_TIMEOUT_MS'
  | 'BEACON_DEDUP_HORIZON_MS'
  | 'BEACON_LINGER_MS'
  | 'BEACON_WORKERS'
>;

export interface BeaconSetup {
  kafka: Kafka;
  redis: Redis;
  directory: Pick<StoreDirectory, 'authenticate'>;
  logger: Logger;
  settings: BeaconSettings;
  /**
   * the Kafka bootstrap brokers: with them, prepare workers produce themselves (each its own idempotent
   * producer); without, the values come back to this thread's producer
   */
  brokers?: string[];
  /** default: a codec on `registryUrl` */
  codec?: ValueCodec;
  /** create the intake's topics when missing (default true; the app's composer creates every topic at start) */
  ensureTopics?: boolean;
  registryUrl?: string;
}

export interface Beacon {
  /** options for `app.register(beaconPlugin, options)` */
  options: BeaconPluginOptions;
  codec: ValueCodec;
  topics: { events: string; rejected: string; requests: string };
  /** drain the produce queue and disconnect the producer (after the HTTP server stopped) */
  close(): Promise<void>;
}

/** Topics, schemas, producer, produce queue and dedup of the intake; the caller registers the plugin. */
export async function createBeacon(setup: BeaconSetup): Promise<Beacon> {
  const { settings, logger: log } = setup;
  const topics = {
    events: topicName(settings, TOPICS.events.name),
    rejected: topicName(settings, TOPICS.rejected.name),
    requests: topicName(settings, TOPICS.requests.name),
  };
  loadGeoDatabase();
  const trustedProxies = parseTrustedProxies(settings.TRUSTED_PROXIES);

  // the topics the intake writes (the requests topic is the read API's)
  if (setup.ensureTopics !== false)
    await ensureTopics(setup.kafka, topicConfigs(settings, ['events', 'rejected']), log);

  const codec = setup.codec ?? createValueCodec({ registryUrl: setup.registryUrl ?? '' });
  const schemas = [
    { topic: topics.events, schema: JSON.stringify(VALUE_SCHEMAS.events) },
    { topic: topics.rejected, schema: JSON.stringify(VALUE_SCHEMAS.rejected) },
  ];
  const registered = [];
  for (const s of schemas) registered.push({ ...s, id: await codec.register(s.topic, s.schema) });

  // validation, enrichment and encoding: in worker threads when there is more than one core; the fast
  // path only when the events schema is the layout it writes
  const fast = fastPathSupports(registered[0].schema);
  if (!fast)
    log.warn(
      'beacon: the events value schema is not the layout of the fast path (services/beacon/fast-event.ts); every event takes the zod/avsc path',
    );
  const prepareSettings: PrepareSettings = {
    topics,
    maxClockSkewMs: settings.BEACON_MAX_CLOCK_SKEW_MS,
    fastSchemaId: fast ? registered[0].id : undefined,
  };
  // default: one worker per core (at most 4), none on a single core. The HTTP thread is idle about half
  // the time at full intake, so a worker per core beats cores − 1 (2 cores: ≈ +15 % intake-only, +10 %
  // in the full stack, bench/beacon.ts)
  const cores = availableParallelism();
  const workers = settings.BEACON_WORKERS >= 0 ? settings.BEACON_WORKERS : cores <= 1 ? 0 : Math.min(4, cores);
  const onBatch = ({ records, seconds, ok }: { records: number; seconds: number; ok: boolean }) => {
    beaconMetrics.produceBatches.observe(records);
    beaconMetrics.produceSeconds.observe({ outcome: ok ? 'ok' : 'error' }, seconds);
  };
  let pool: PreparePool | undefined;
  const producing = workers > 0 && (setup.brokers?.length ?? 0) > 0;
  if (workers > 0) {
    const kafka = producing
      ? {
          brokers: setup.brokers ?? [],
          clientId: 'beacon-worker',
          lingerMs: settings.BEACON_LINGER_MS,
          timeoutMs: settings.BEACON_PRODUCE_TIMEOUT_MS,
          logLevel: setup.logger.level,
        }
      : undefined;
    pool = await createPreparePool({
      size: workers,
      init: { schemas: registered, settings: prepareSettings, kafka },
      logger: log,
      onBatch,
    });
    log.info({ workers, producing }, 'beacon prepare workers started');
  }

  // without producing workers: one produce queue on this thread
  let queue: ProduceQueue | undefined;
  if (!producing) {
    const producer = createProducerClient(setup.kafka, {
      // the DefaultPartitioner's key → partition mapping, with the key hash computed where the key was built
      keyHashPartitioner: true,
      // bounded retries: a request waits at most BEACON_PRODUCE_TIMEOUT_MS, then answers 503
      retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1_000 },
    });
    queue = createProduceQueue({
      producer,
      logger: log,
      lingerMs: settings.BEACON_LINGER_MS,
      timeoutMs: settings.BEACON_PRODUCE_TIMEOUT_MS,
      onBatch,
    });
    await producer
      .connect()
      .catch((err: Error) => log.warn({ err: err.message }, 'beacon producer: Kafka not reachable yet'));
  }
  const depthTimer = setInterval(() => beaconMetrics.queueDepth.set((queue?.depth ?? 0) + (pool?.depth ?? 0)), 1_000);
  depthTimer.unref();

  const dedup = createEventDedup({
    redis: setup.redis,
    horizonMs: settings.BEACON_DEDUP_HORIZON_MS,
    onError: (op, err) => {
      beaconMetrics.dedupErrors.inc({ op });
      log.warn({ op, err: err.message }, 'beacon dedup: redis call failed (failing open)');
    },
  });

  function prepareFor(pool: PreparePool | undefined, queue: ProduceQueue | undefined): BeaconPluginOptions['prepare'] {
    if (pool && !queue) return (input) => pool.prepareAndHold(input);
    const q = queue as ProduceQueue;
    const send = (records: QueuedRecord[]) => q.send(records);
    if (pool) return async (input) => holdHere(await pool.prepare(input), input.server.store_id, topics, send);
    return (input) => holdHere(prepareBatch(input, prepareSettings, codec), input.server.store_id, topics, send);
  }

  return {
    options: {
      directory: setup.directory,
      dedup,
      prepare: prepareFor(pool, queue),
      topics,
      trustedProxies,
      bodyLimitBytes: settings.BEACON_BODY_LIMIT_BYTES,
    },
    codec,
    topics,
    async close() {
      clearInterval(depthTimer);
      await queue?.close();
      await pool?.close();
    },
  };
}

export const beaconModule: AppModule = {
  name: 'beacon',
  async start(ctx: AppContext) {
    const { config } = ctx;
    const beacon = await createBeacon({
      kafka: ctx.kafka,
      redis: ctx.redis,
      directory: storeDirectory(ctx),
      logger: ctx.logger.child({ module: 'beacon' }),
      settings: config,
      registryUrl: config.schemaRegistryUrl,
      brokers: config.kafkaBrokers,
      ensureTopics: false, // the composer created every topic
    });
    await ctx.http.register(beaconPlugin, beacon.options);
    // closers run in reverse order: the HTTP server (registered after the modules) closes first,
    // answering the requests in flight, then the queue drains and the producer disconnects
    ctx.onClose(() => beacon.close());
    ctx.announce('beacon', `http://${config.HOST}:${config.HTTP_PORT}/beacon`);
  },
};
