// The schema registry as a module of the app: in single-node mode (no SCHEMA_REGISTRY_URL) it serves the
// registry on SCHEMA_REGISTRY_PORT from the `_schemas` topic; in every mode it registers the platform's
// value schemas at start-up, so producers started after it find their subjects ready.
import { createRegistryClient, createValueCodec, registerPlatformSchemas } from '../common/kafka/index.ts';
import { TOPICS } from '../../schemas/topics.ts';
import type { AppContext, AppModule } from '../app/context.ts';
import { topicName } from '../common/config.ts';
import { startSchemaRegistry } from './index.ts';

export const schemaRegistryModule: AppModule = {
  name: 'schema-registry',
  async start(ctx: AppContext) {
    const { config, logger } = ctx;
    let registryUrl = config.schemaRegistryUrl;
    if (config.embedded.schemaRegistry) {
      const registry = await startSchemaRegistry({
        kafka: ctx.kafka,
        topic: topicName(config, TOPICS.schemas.name),
        host: config.HOST,
        port: config.SCHEMA_REGISTRY_PORT,
        logger,
        bodyLimitBytes: config.BODY_LIMIT_BYTES,
        ensureTopic: false, // the composer created every topic
      });
      ctx.onClose(() => registry.close());
      registryUrl = registry.url;
      ctx.addReadinessCheck('schemaRegistry', async () => registry.check());
    } else {
      const probe = createRegistryClient({ url: registryUrl, timeoutMs: 2_000, retries: 0 });
      ctx.addReadinessCheck('schemaRegistry', async () => {
        await probe.getCompatibility();
      });
    }
    const codec = createValueCodec({ registryUrl });
    // never print credentials that came in SCHEMA_REGISTRY_URL
    ctx.announce('schemaRegistry', codec.registry.url);

    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        const ids = await registerPlatformSchemas(codec, config);
        logger.info({ schemaIds: ids, registryUrl: codec.registry.url }, 'platform value schemas registered');
        break;
      } catch (err) {
        // an external registry may still be starting; a schema the registry refuses (409, 422) is final
        const status = (err as { status?: number }).status ?? 0;
        if ((status >= 400 && status < 500) || Date.now() > deadline) throw err;
        logger.warn({ err: (err as Error).message }, 'schema registry not reachable yet; retrying');
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  },
};
