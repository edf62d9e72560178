// The store-config module of the app: runs the StoreDirectory (the in-memory projection of
// `stores.config.v1`, plus the ClickHouse table `store_config`) and hands it to the other modules.
//
//   import { storeDirectory } from '../store-config/module.ts';
//   const directory = storeDirectory(ctx);   // in your module's start(ctx); this module starts first
//
// It also serves `GET /internal/store-config/caught-up?offset=N[&partition=P][&wait_ms=W]`: whether the
// directory has applied the record at offset N (what a writer got back from its produce call). Tests and
// deploy scripts use it to wait for a write to be visible; it exposes no store data.
// `GET /internal/store-config/whoami` (header X-Storefront-Access-Token) answers what the storefront's
// authentication would: 200 `{store_id, name, status}` for a working token, else the 401/402 error body —
// a way for operators and integration tests to check a token.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { formatPath } from '../../schemas/config.ts';
import { TOPICS } from '../../schemas/topics.ts';
import type { AppContext, AppModule } from '../app/context.ts';
import { topicName } from '../common/config.ts';
import type { StoreDirectory } from './api.ts';
import { createEnvelopeCodec } from './codec.ts';
import { ConfigDirectory } from './directory.ts';

const directories = new WeakMap<AppContext, ConfigDirectory>();

/** The running store directory of this app process. Throws when the store-config module is not started. */
export function storeDirectory(ctx: AppContext): StoreDirectory {
  const d = directories.get(ctx);
  if (!d)
    throw new Error('the store-config module is not started; it must come before modules that use storeDirectory(ctx)');
  return d;
}

const CaughtUpQuery = z.strictObject({
  offset: z.string().regex(/^\d{1,19}$/, 'expected a non-negative integer offset'),
  partition: z.coerce.number().int().min(0).max(10_000).default(0),
  /** long-poll: wait up to this long for the offset to be applied */
  wait_ms: z.coerce.number().int().min(0).max(10_000).default(0),
});

export const storeConfigModule: AppModule = {
  name: 'store-config',
  async start(ctx: AppContext) {
    const topic = topicName(ctx.config, TOPICS.storeConfig.name);
    const directory = new ConfigDirectory({
      kafka: ctx.kafka,
      topic,
      codec: createEnvelopeCodec({ registryUrl: ctx.config.schemaRegistryUrl, topic }),
      logger: ctx.logger,
      groupIdPrefix: 'store-config-directory-app',
      ensureTopic: false, // the composer created every topic
    });
    directories.set(ctx, directory);
    ctx.onClose(() => directory.stop());
    await directory.start();
    // serve authenticated traffic only once every store and token written so far is known
    await directory.ready();
    ctx.logger.info({ topic, position: String(directory.position()) }, 'store directory caught up');
    ctx.addReadinessCheck('store-config', async () => {
      await directory.ready(1_500);
    });

    await ctx.http.register(
      async (app: FastifyInstance) => {
        app.get('/caught-up', async (req, reply) => {
          const q = CaughtUpQuery.safeParse(req.query);
          if (!q.success) {
            return reply.code(400).send({
              error: {
                code: 'invalid_query',
                message: 'invalid query parameters',
                fields: q.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message })),
              },
            });
          }
          const { offset, partition, wait_ms } = q.data;
          const caughtUp =
            wait_ms > 0
              ? await directory.waitForOffset(partition, offset, wait_ms)
              : directory.hasApplied(partition, offset);
          return { caught_up: caughtUp, partition, position: String(directory.position(partition)) };
        });
        app.get('/whoami', async (req, reply) => {
          const header = req.headers['x-storefront-access-token'];
          const auth = directory.authenticate(Array.isArray(header) ? header[0] : header);
          reply.header('cache-control', 'no-store');
          if (!auth.ok)
            return reply.code(auth.status).send({ error: { code: auth.code, message: auth.message, fields: [] } });
          return { store_id: auth.store.storeId, name: auth.store.name, status: auth.store.status };
        });
      },
      { prefix: '/internal/store-config' },
    );
  },
};
