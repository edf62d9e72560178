// Standalone processor process: `node streams/main.ts --processor <name|all|a,b>`.
//
// Distributed mode runs one per processor against KAFKA_BROKERS / CLICKHOUSE_URL / REDIS_URL. Without
// CLICKHOUSE_URL it opens chDB under DATA_DIR/clickhouse (this process then owns that directory; the
// fault tests use that). `--sql-port` serves the read-only analysts' endpoint over it.
import { Command } from 'commander';
import { dbOptionsFromConfig, openDb } from '../clickhouse/client.ts';
import { startSqlEndpoint } from '../clickhouse/http-endpoint.ts';
import { analystLimits } from '../clickhouse/readonly.ts';
import { migrate } from '../clickhouse/migrate.ts';
import { loadConfigOrExit } from '../services/common/config.ts';
import { createKafka } from '../services/common/kafka/index.ts';
import { createLogger } from '../services/common/logger.ts';
import { createRedis } from '../services/common/redis.ts';
import { selectProcessors } from './registry.ts';
import { startStreams } from './service.ts';

const program = new Command()
  .name('streams')
  .requiredOption('--processor <names>', "processor name, comma-separated names, or 'all'")
  .option('--sql-port <port>', "serve the read-only analysts' SQL endpoint on this port (embedded ClickHouse only)")
  .parse();
const args = program.opts<{ processor: string; sqlPort?: string }>();

const config = loadConfigOrExit();
const logger = createLogger('streams', config.LOG_LEVEL);
let processors: ReturnType<typeof selectProcessors>;
try {
  processors = selectProcessors(args.processor);
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(64);
}

const db = await openDb(dbOptionsFromConfig(config));
await migrate(db, { cluster: config.CLICKHOUSE_CLUSTER, log: (m) => logger.info(m) });
const redis = createRedis(config.redisUrl, { connectionName: `streams-${args.processor}` });
redis.on('error', (err) => logger.warn({ err: err.message }, 'redis error'));
const kafka = createKafka(config.kafkaBrokers, `streams-${args.processor}`, logger);
const streams = await startStreams({ config, db, redis, kafka, logger, processors });

let sqlUrl: string | undefined;
let closeSql: (() => Promise<void>) | undefined;
if (args.sqlPort !== undefined && db.embedded) {
  const [v] = await db.query<{ v: string }>('SELECT version() AS v');
  const sql = await startSqlEndpoint({
    db,
    host: config.HOST,
    port: Number(args.sqlPort),
    logger,
    version: v?.v ?? 'unknown',
    limits: analystLimits(config),
  });
  sqlUrl = sql.url;
  closeSql = sql.close;
}
logger.info({ processors: processors.map((p) => p.name), sql: sqlUrl }, 'streams ready');
process.send?.({ type: 'ready', sql: sqlUrl });

let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal: sig }, 'shutting down');
    (async () => {
      await streams.stop();
      await closeSql?.();
      redis.disconnect();
      await db.close();
    })().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}
