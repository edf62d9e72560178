// The single-node composer: one process with ClickHouse (chDB) in it, the public HTTP server, the
// analysts' SQL endpoint and every module (intake, registry, processors, read API, site).
import v8 from 'node:v8';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { dbOptionsFromConfig, openDb } from '../../clickhouse/client.ts';
import { startSqlEndpoint } from '../../clickhouse/http-endpoint.ts';
import { analystLimits } from '../../clickhouse/readonly.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import type { Config } from '../common/config.ts';
import { newUlid } from '../common/ids.ts';
import { MAX_PARAM_LENGTH } from '../storefront/plugin.ts';
import { createKafka, ensureTopics } from '../common/kafka/index.ts';
import { createLogger } from '../common/logger.ts';
import { registry, renderMetrics } from '../common/metrics.ts';
import { createRedis } from '../common/redis.ts';
import type { AppContext, AppModule } from './context.ts';
import { startInBackground } from './background.ts';
import { type Check, healthRoutes } from './health.ts';
import { appTopics } from './topics.ts';

export interface RunningApp {
  ctx: AppContext;
  urls: Record<string, string>;
  close(): Promise<void>;
}

export async function startApp(config: Config, modules: AppModule[]): Promise<RunningApp> {
  // before the modules start their worker threads: V8's flags are the process's, and every isolate reads
  // this one whenever it sets its next collection limit (as a node command-line flag it would be refused
  // by new Worker() in the inherited execArgv)
  if (config.V8_HEAP_GROWING_PERCENT > 0)
    v8.setFlagsFromString(`--heap-growing-percent=${config.V8_HEAP_GROWING_PERCENT}`);
  const logger = createLogger('app', config.LOG_LEVEL);
  const closers: (() => Promise<void> | void)[] = [];
  const urls: Record<string, string> = {};
  const checks: Record<string, Check> = {};

  const db = await openDb(dbOptionsFromConfig(config));
  closers.push(() => db.close());
  const migrations = await migrate(db, { cluster: config.CLICKHOUSE_CLUSTER, log: (m) => logger.info(m) });
  logger.info({ applied: migrations.applied.length, skipped: migrations.skipped.length }, 'clickhouse migrations done');

  const redis = createRedis(config.redisUrl, { connectionName: 'app' });
  redis.on('error', (err) => logger.warn({ err: err.message }, 'redis error'));
  closers.push(() => void redis.disconnect());

  const kafka = createKafka(config.kafkaBrokers, 'storefront-discovery-app', logger);
  // every topic once, before any module starts (as migrate() does for ClickHouse): no module creates
  // another's topics, and none is auto-created with the broker's defaults
  await ensureTopics(kafka, appTopics(config), logger);
  const admin = kafka.admin();
  let adminConnected = false;
  closers.push(() => (adminConnected ? admin.disconnect() : undefined));

  checks.clickhouse = async () => {
    await db.query('SELECT 1');
  };
  checks.redis = async () => {
    if ((await redis.ping()) !== 'PONG') throw new Error('unexpected PING reply');
  };
  checks.kafka = async () => {
    if (!adminConnected) {
      await admin.connect();
      adminConnected = true;
    }
    await admin.describeCluster();
  };

  const http: FastifyInstance = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: config.BODY_LIMIT_BYTES,
    // always our own ULID: it is the attribution token of the response, so a client must not choose it
    // (a replayed id would merge two requests' attribution)
    genReqId: newUlid,
    // search queries travel URL-encoded in the path
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // per-request log lines would dominate the cost of the beacon path; errors are still logged
    logController: new LogController({ disableRequestLogging: true }),
  });
  // callback style: no promise per request on every route
  http.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    reply.header('x-service-build', config.build);
    done();
  });
  http.get('/metrics', async (_req, reply) => {
    reply.header('content-type', registry.contentType);
    return renderMetrics();
  });

  const ctx: AppContext = {
    config,
    logger,
    db,
    redis,
    kafka,
    http,
    addReadinessCheck: (name, check) => {
      checks[name] = check;
    },
    onClose: (fn) => {
      closers.push(fn);
    },
    announce: (label, url) => {
      urls[label] = url;
    },
    startInBackground: (name, start, opts) => startInBackground(ctx, name, start, opts),
  };
  await http.register(healthRoutes, { checks });

  for (const m of modules) {
    logger.info({ module: m.name }, 'starting module');
    await m.start(ctx);
  }

  await http.listen({ host: config.HOST, port: config.HTTP_PORT });
  const httpPort = (http.server.address() as { port: number }).port;
  closers.push(() => http.close());
  const base = `http://${config.HOST}:${httpPort}`;
  urls.http = base;
  urls.metrics = `${base}/metrics`;
  urls.readyz = `${base}/readyz`;

  if (config.embedded.clickhouse && config.CLICKHOUSE_HTTP_ENABLED) {
    const sql = await startSqlEndpoint({
      db,
      host: config.HOST,
      port: config.CLICKHOUSE_HTTP_PORT,
      logger,
      version: await versionOf(db),
      limits: analystLimits(config),
    });
    closers.push(() => sql.close());
    urls.clickhouse = sql.url;
  }

  let closed = false;
  return {
    ctx,
    urls,
    async close() {
      if (closed) return;
      closed = true;
      for (const fn of closers.reverse()) {
        try {
          await fn();
        } catch (err) {
          logger.warn({ err }, 'error during shutdown');
        }
      }
    },
  };
}

async function versionOf(db: { query<T>(sql: string): Promise<T[]> }): Promise<string> {
  const [row] = await db.query<{ v: string }>('SELECT version() AS v');
  return row?.v ?? 'unknown';
}
