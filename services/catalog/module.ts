// The catalog module of the app: webhooks on the app's HTTP server (POST /webhooks/…), the catalog
// writer (topics, schemas, idempotent producer), and the projections of the catalog topics into
// ClickHouse, run by the streams runtime (one ProcessorRunner per catalog topic) when STREAMS_ENABLED.
//
// Webhook secrets: a store's `webhook_secret` configuration items (payload `{ secret }`, several during a
// rotation) when the store configuration has that kind; otherwise CATALOG_WEBHOOK_SECRET; otherwise a
// secret generated on first start into DATA_DIR/catalog-webhook.secret (mode 0600), which an operator
// copies into the platform's webhook settings.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CATALOG_AVRO } from '../../schemas/catalog.ts';
import { createValueCodec, type ValueCodec } from '../../schemas/codec.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { kafkajsClientFactory } from '../../streams/runtime/kafkajs-client.ts';
import { ProcessorRunner } from '../../streams/runtime/runtime.ts';
import { ensureStreamTopics } from '../../streams/runtime/topics.ts';
import type { DlqRecord, RuntimeDeps, ValueDecoder } from '../../streams/runtime/types.ts';
import type { AppContext, AppModule } from '../app/context.ts';
import { type Config, topicName } from '../common/config.ts';
import { createIdempotentProducer } from '../common/kafka.ts';
import type { Logger } from '../common/logger.ts';
import type { StoreDirectory } from '../store-config/api.ts';
import { storeDirectory } from '../store-config/module.ts';
import { CATALOG_PROCESSORS, tombstoneClientFactory, tombstoneDecoder } from './projections.ts';
import { webhookPlugin, type WebhookSecrets } from './webhooks.ts';
import { CatalogWriter } from './writer.ts';

export const WEBHOOK_SECRET_FILE = 'catalog-webhook.secret';

/** CATALOG_WEBHOOK_SECRET, or the generated secret in DATA_DIR (created on first use). */
export function platformWebhookSecret(config: Pick<Config, 'CATALOG_WEBHOOK_SECRET' | 'dataDir'>): string {
  if (config.CATALOG_WEBHOOK_SECRET) return config.CATALOG_WEBHOOK_SECRET;
  const file = path.join(config.dataDir, WEBHOOK_SECRET_FILE);
  if (existsSync(file)) {
    const s = readFileSync(file, 'utf8').trim();
    if (s.length >= 16) return s;
  }
  mkdirSync(config.dataDir, { recursive: true });
  const secret = randomBytes(32).toString('hex');
  writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'w' });
  chmodSync(file, 0o600);
  return secret;
}

/** Per-store secrets from the store configuration (kind `webhook_secret`), else the platform secret. */
export function webhookSecrets(directory: Pick<StoreDirectory, 'getConfig'> | undefined, fallback: string): WebhookSecrets {
  return {
    secretsFor(storeId) {
      let own: string[] = [];
      try {
        own = (directory?.getConfig(storeId, 'webhook_secret') ?? [])
          .map((i) => (i as { secret?: unknown }).secret)
          .filter((s): s is string => typeof s === 'string' && s.length >= 16);
      } catch {
        own = [];
      }
      return own.length ? own : [fallback];
    },
  };
}

/** A decoder for the catalog topics: values into our reader schemas, tombstones as markers. */
export function catalogDecoder(codec: ValueCodec, config: Pick<Config, 'KAFKA_TOPIC_PREFIX'>): ValueDecoder {
  for (const p of CATALOG_PROCESSORS) codec.useReaderSchema(topicName(config, TOPICS[p.topic].name), CATALOG_AVRO[p.catalogTopic]);
  return tombstoneDecoder({
    async decode(buf, topic) {
      const cached = codec.decodeCached(buf, topic);
      return (cached ?? (await codec.decode(buf, topic))).value;
    },
  });
}

export interface CatalogProjections {
  runners: ProcessorRunner<unknown>[];
  stop(): Promise<void>;
}

/** Start one runner per catalog processor (the streams runtime: batching, dedup tokens, DLQ, commits). */
export async function startCatalogProjections(opts: {
  config: Config;
  ctx: Pick<AppContext, 'db' | 'redis' | 'kafka'>;
  logger: Logger;
  codec: ValueCodec;
}): Promise<CatalogProjections> {
  const { config, ctx } = opts;
  const log = opts.logger.child({ component: 'catalog-projections' });
  const topics = CATALOG_PROCESSORS.map((p) => ({ key: p.topic, name: topicName(config, TOPICS[p.topic].name) }));
  await ensureStreamTopics(ctx.kafka, topics, log);
  let producer: ReturnType<typeof createIdempotentProducer> | undefined;
  const deps: RuntimeDeps = {
    db: ctx.db,
    redis: ctx.redis,
    logger: log,
    decoder: catalogDecoder(opts.codec, config),
    topicName: (key) => topicName(config, TOPICS[key].name),
    createClient: tombstoneClientFactory(kafkajsClientFactory(ctx.kafka, log)),
    dlq: {
      async send(records: DlqRecord[]) {
        if (!producer) {
          const p = createIdempotentProducer(ctx.kafka);
          await p.connect();
          producer = p;
        }
        await producer.sendBatch({
          topicMessages: records.map((r) => ({ topic: r.topic, messages: [{ key: r.key, value: r.value, headers: r.headers }] })),
        });
      },
    },
  };
  const runners: ProcessorRunner<unknown>[] = [];
  for (const p of CATALOG_PROCESSORS) {
    const runner = new ProcessorRunner(p as never, deps, {
      lingerMs: config.STREAMS_LINGER_MS,
      maxBatchMessages: config.STREAMS_MAX_BATCH_MESSAGES,
      maxBatchBytes: config.STREAMS_MAX_BATCH_BYTES,
      dedupHorizonHours: config.STREAMS_DEDUP_HORIZON_HOURS,
    }) as ProcessorRunner<unknown>;
    runners.push(runner);
    await runner.start();
  }
  return {
    runners,
    async stop() {
      await Promise.all(runners.map((r) => r.stop()));
      await producer?.disconnect().catch(() => {});
    },
  };
}

export const catalogModule: AppModule = {
  name: 'catalog',
  async start(ctx: AppContext) {
    const { config } = ctx;
    let directory: StoreDirectory | undefined;
    try {
      directory = storeDirectory(ctx);
    } catch (err) {
      ctx.logger.warn({ err: (err as Error).message }, 'catalog: no store directory; webhooks are accepted for any store id with a valid signature');
    }
    const codec = createValueCodec({ registryUrl: config.schemaRegistryUrl });
    const writer = new CatalogWriter({ kafka: ctx.kafka, redis: ctx.redis, codec, config, logger: ctx.logger });
    const secret = platformWebhookSecret(config);

    // topics, schemas and consumers come up in the background (the registry is served by this same
    // process, and a slow group join must not hold the HTTP server back); readiness reports progress
    let ready = false;
    let failure: Error | undefined;
    let closing = false;
    let projections: CatalogProjections | undefined;
    const starting = (async () => {
      for (let attempt = 1; !closing; attempt++) {
        try {
          await writer.start();
          if (config.STREAMS_ENABLED) projections = await startCatalogProjections({ config, ctx, logger: ctx.logger, codec });
          ready = true;
          failure = undefined;
          return;
        } catch (err) {
          failure = err as Error;
          ctx.logger.error({ err: failure.message, attempt }, 'catalog: start failed; retrying');
          await projections?.stop().catch(() => {});
          projections = undefined;
          await new Promise((r) => setTimeout(r, Math.min(1_000 * attempt, 10_000)));
        }
      }
    })();
    ctx.addReadinessCheck('catalog', async () => {
      if (!ready) throw new Error(failure ? `not started: ${failure.message}` : 'starting');
    });

    await ctx.http.register(webhookPlugin, {
      prefix: '/webhooks',
      writer: {
        write: async (records) => {
          if (!ready) throw new Error('catalog writer is starting');
          return writer.write(records);
        },
      },
      secrets: webhookSecrets(directory, secret),
      redis: ctx.redis,
      directory,
      bodyLimitBytes: config.CATALOG_WEBHOOK_BODY_LIMIT_BYTES,
      dedupHours: config.CATALOG_WEBHOOK_DEDUP_HOURS,
      logger: ctx.logger.child({ component: 'catalog-webhooks' }),
    });
    ctx.onClose(async () => {
      closing = true;
      await starting;
      await projections?.stop();
      await writer.close();
    });
  },
};
