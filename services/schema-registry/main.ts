// The schema registry as its own process (distributed mode): `node services/schema-registry/main.ts`.
// Reads KAFKA_BROKERS (or the local broker), HOST, SCHEMA_REGISTRY_PORT and KAFKA_TOPIC_PREFIX.
import { TOPICS } from '../../schemas/topics.ts';
import { loadConfigOrExit, topicName } from '../common/config.ts';
import { createLogger } from '../common/logger.ts';
import { startSchemaRegistry } from './index.ts';

const config = loadConfigOrExit();
const logger = createLogger('schema-registry', config.LOG_LEVEL);
const registry = await startSchemaRegistry({
  brokers: config.kafkaBrokers,
  topic: topicName(config, TOPICS.schemas.name),
  host: config.HOST,
  port: config.SCHEMA_REGISTRY_PORT,
  logger,
  bodyLimitBytes: config.BODY_LIMIT_BYTES,
}).catch((err) => {
  logger.fatal({ err }, 'schema registry failed to start');
  process.exit(1);
});

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    logger.info({ signal: sig }, 'shutting down');
    registry.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
