// The catalog module of the app: webhooks on the app's HTTP server (POST /webhooks/…) and the catalog
// writer (topics, schemas, idempotent producer). The projections of the catalog topics into ClickHouse
// are stream processors like any other (streams/catalog/, registered in
// streams/registry.ts): the streams module runs them (STREAMS_ENABLED, STREAMS_PROCESSORS) and the replay
// tool rebuilds them. Readiness `catalog` = the writer can produce (topics exist, schemas registered,
// producer connected); the projection consumers report under `streams`.
//
// Webhook secrets: a store's `webhook_secret` configuration items (payload `{ secret }`, several during a
// rotation) when the store configuration has that kind; otherwise CATALOG_WEBHOOK_SECRET; otherwise a
// secret generated on first start into DATA_DIR/catalog-webhook.secret (mode 0600), which an operator
// copies into the platform's webhook settings.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createValueCodec } from '../common/kafka/codec.ts';
import type { AppContext, AppModule } from '../app/context.ts';
import type { Config } from '../common/config.ts';
import type { StoreDirectory } from '../store-config/api.ts';
import { storeDirectory } from '../store-config/module.ts';
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
export function webhookSecrets(
  directory: Pick<StoreDirectory, 'getConfig'> | undefined,
  fallback: string,
): WebhookSecrets {
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

export const catalogModule: AppModule = {
  name: 'catalog',
  async start(ctx: AppContext) {
    const { config } = ctx;
    let directory: StoreDirectory | undefined;
    try {
      directory = storeDirectory(ctx);
    } catch (err) {
      ctx.logger.warn(
        { err: (err as Error).message },
        'catalog: no store directory; webhooks are accepted for any store id with a valid signature',
      );
    }
    const codec = createValueCodec({ registryUrl: config.schemaRegistryUrl });
    const writer = new CatalogWriter({
      kafka: ctx.kafka,
      redis: ctx.redis,
      codec,
      config,
      logger: ctx.logger,
      ensureTopics: false, // the composer created every topic
    });
    const secret = platformWebhookSecret(config);

    // topics, schemas and the producer come up in the background (the registry is served by this same
    // process and must be listening first); readiness reports progress
    const started = ctx.startInBackground('catalog', () => writer.start(), {
      afterFailure: () => writer.close().catch(() => {}),
      stop: () => writer.close(),
    });
    await ctx.http.register(webhookPlugin, {
      prefix: '/webhooks',
      writer: {
        write: async (records) => {
          if (!started.up) throw new Error('catalog writer is starting');
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
  },
};
