// The one configuration schema: every environment variable the platform reads is declared here,
// validated once at start-up, with defaults that make `npm start` work on a fresh machine.
import path from 'node:path';
import { z } from 'zod';
import { IDLE_FETCH_WAIT_MS } from './kafka/client.ts';

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const optionalUrl = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .pipe(z.url().optional())
  .optional();
const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .default(fallback ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1' || v === 'yes');

export const EnvSchema = z.object({
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** log lines: `auto` = human-readable on a terminal, JSON otherwise; `json` always JSON; `pretty` always readable */
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  /** interface the local stack binds to */
  HOST: z.string().min(1).default('127.0.0.1'),
  /** root of all local state: broker log, chDB data, redis dump */
  DATA_DIR: z.string().min(1).default('./data'),
  HTTP_PORT: port(3000),
  KAFKA_PORT: port(9092),
  SCHEMA_REGISTRY_PORT: port(8081),
  CLICKHOUSE_HTTP_PORT: port(8123),
  REDIS_PORT: port(6379),
  /** comma-separated host:port list; unset = the embedded broker */
  KAFKA_BROKERS: z
    .string()
    .trim()
    .regex(/^([A-Za-z0-9._-]+:\d{1,5})(,[A-Za-z0-9._-]+:\d{1,5})*$/, 'expected host:port[,host:port…]')
    .optional()
    .or(z.literal('').transform(() => undefined)),
  /** unset = chDB in process, data under DATA_DIR/clickhouse */
  CLICKHOUSE_URL: optionalUrl,
  CLICKHOUSE_DATABASE: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected a plain identifier')
    .default('discovery'),
  /**
   * a ClickHouse cluster (its name in the servers' remote_servers): migrations create each table as
   * Replicated*MergeTree `t_local` ON CLUSTER with a Distributed `t` over it, sharded by store; inserts are
   * synchronous through the Distributed tables; retention alters the local tables; replay refuses
   * (clickhouse/cluster-ddl.ts, docs/distributed.md). Needs CLICKHOUSE_URL. Unset or empty = one server
   */
  CLICKHOUSE_CLUSTER: z
    .string()
    .trim()
    .transform((v) => (v === '' ? undefined : v))
    .pipe(
      z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected a plain identifier')
        .optional(),
    )
    .optional(),
  CLICKHOUSE_USER: z.string().optional(),
  CLICKHOUSE_PASSWORD: z.string().optional(),
  /** unset = a redis-server child process started by the launcher */
  REDIS_URL: optionalUrl,
  /** unset = the registry served by the app process */
  SCHEMA_REGISTRY_URL: optionalUrl,
  /** prefix for every topic name (test isolation, shared clusters) */
  KAFKA_TOPIC_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9._-]*$/, 'expected characters valid in a topic name')
    .default(''),
  /** broker: 'always' (fsync before each acknowledgement) or a group-commit interval in ms */
  BROKER_FSYNC: z
    .string()
    .regex(/^(always|\d+)$/, "expected 'always' or a number of milliseconds")
    .default('always'),
  /**
   * app process: V8's heap growing factor as a percentage over the live heap (50 → the next full
   * collection at 1.5 × what survived the last one), for every isolate of the process (the read API's
   * and the worker threads'); 0 = V8's own heuristic, which on a host with ≥ 2 GiB of heap limit lets a
   * heap reach up to 4 × its live size before collecting (docs/decisions.md, issue #21)
   */
  V8_HEAP_GROWING_PERCENT: z.coerce.number().int().min(0).max(300).default(50),
  /** build identifier sent as x-service-build */
  SERVICE_BUILD: z.string().min(1).optional(),
  /** start the analysts' read-only SQL endpoint (single-node mode) */
  CLICKHOUSE_HTTP_ENABLED: bool(true),
  /** analysts' endpoint, per statement: max_execution_time in seconds (the engine stops the query) */
  CLICKHOUSE_HTTP_MAX_EXECUTION_TIME: z.coerce.number().int().min(1).max(3600).default(30),
  /** analysts' endpoint, per statement: max_result_rows and max_result_bytes of the result */
  CLICKHOUSE_HTTP_MAX_RESULT_ROWS: z.coerce.number().int().min(1).default(1_000_000),
  CLICKHOUSE_HTTP_MAX_RESULT_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(256 * 1024 * 1024),
  /** analysts' endpoint, per statement: max_memory_usage in bytes (the engine shares the app's process) */
  CLICKHOUSE_HTTP_MAX_MEMORY_USAGE: z.coerce
    .number()
    .int()
    .min(1)
    .default(2 * 1024 * 1024 * 1024),
  /** analysts' endpoint, per statement: max_threads (cores one analyst query may take from the app) */
  CLICKHOUSE_HTTP_MAX_THREADS: z.coerce.number().int().min(1).max(256).default(1),
  /** load the demo store on first start */
  DEMO_STORE: bool(true),
  /** demo store: generator seed (same seed → same catalog, sessions and ground truth) */
  DEMO_SEED: z.string().trim().min(1).max(100).default('demo'),
  /** demo store: number of products generated (first start only) */
  DEMO_PRODUCTS: z.coerce.number().int().min(50).max(1_000_000).default(10_000),
  /** demo store: number of simulated shopper sessions replayed through POST /beacon and the read API */
  DEMO_SESSIONS: z.coerce.number().int().min(50).max(1_000_000).default(3_000),
  /** demo store: product images rendered ahead of time (the rest render on first request) */
  DEMO_IMAGES: z.coerce.number().int().min(0).max(100_000).default(256),
  /** demo store: concurrent HTTP requests of the session replay */
  DEMO_REPLAY_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /**
   * image features (image search, similar products' and content search's image signal): `local` = the
   * built-in visual features (local-v1, no network); `http` = a learned model behind IMAGE_MODEL_URL
   * (contract: docs/storefront-api.md, "Image model service"). The image processors and the read API both
   * use it; features are stored with their model and only features of the configured model are compared.
   */
  IMAGE_FEATURES: z.enum(['local', 'http']).default('local'),
  /** IMAGE_FEATURES=http: the embedding endpoint (POST image bytes → {model, embedding}) */
  IMAGE_MODEL_URL: optionalUrl,
  /** IMAGE_FEATURES=http: the model id stored with every feature row; the service must answer with it */
  IMAGE_MODEL: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,99}$/, 'expected a model id (letters, digits, . _ : @ / + -)')
    .refine((v) => v !== 'local-v1', 'local-v1 is the built-in model: set IMAGE_FEATURES=local')
    .optional(),
  /** IMAGE_FEATURES=http: how long one embedding request may take, ms */
  IMAGE_MODEL_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  /** maximum request body size for JSON endpoints, bytes */
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  /** comma-separated CIDRs/addresses whose X-Forwarded-For is believed (load balancers, CDN edges) */
  TRUSTED_PROXIES: z
    .string()
    .trim()
    .regex(/^([0-9A-Fa-f.:]+(\/\d{1,3})?)?(\s*,\s*[0-9A-Fa-f.:]+(\/\d{1,3})?)*$/, 'expected CIDR[,CIDR…]')
    .default('127.0.0.0/8,::1/128'),
  /** POST /beacon: maximum request body, bytes (413 above) */
  BEACON_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(16 * 1024 * 1024)
    .default(512 * 1024),
  /** POST /beacon: an event timestamp further in the future than this is clamped to receive time */
  BEACON_MAX_CLOCK_SKEW_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(5 * 60 * 1000),
  /** POST /beacon: how long a request waits for Kafka's acknowledgement before answering 503 */
  BEACON_PRODUCE_TIMEOUT_MS: z.coerce.number().int().min(100).default(5_000),
  /** POST /beacon: event_id deduplication horizon in Redis (≥ 24 h) */
  BEACON_DEDUP_HORIZON_MS: z.coerce
    .number()
    .int()
    .min(24 * 60 * 60 * 1000)
    .default(48 * 60 * 60 * 1000),
  /** POST /beacon: how long concurrent requests' records wait to share one Kafka produce call */
  BEACON_LINGER_MS: z.coerce.number().min(0).max(50).default(2),
  /** POST /beacon: worker threads validating and encoding events (-1 = one per core beyond the first, at most 4; 0 = inline) */
  BEACON_WORKERS: z.coerce.number().int().min(-1).max(64).default(-1),
  /** storefront API: token bucket per store, requests per second (0 = off) and bucket size */
  STOREFRONT_RATE_LIMIT_PER_SEC: z.coerce.number().min(0).default(500),
  STOREFRONT_RATE_LIMIT_BURST: z.coerce.number().min(1).default(1000),
  /** storefront API: token bucket per client IP within a store (0 = off) and bucket size */
  STOREFRONT_RATE_LIMIT_PER_IP_PER_SEC: z.coerce.number().min(0).default(100),
  STOREFRONT_RATE_LIMIT_PER_IP_BURST: z.coerce.number().min(1).default(200),
  /** storefront API: maximum request body, bytes (413 above) */
  STOREFRONT_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(16 * 1024 * 1024)
    .default(256 * 1024),
  /** autocomplete: full reload of the trending index from ClickHouse every this many ms (deltas arrive in between) */
  AUTOCOMPLETE_REFRESH_MS: z.coerce.number().int().min(1000).default(60_000),
  /** product results: the ranking signals (7-day revenue, trending, popularity) are re-read every this many ms */
  RESULTS_SIGNALS_REFRESH_MS: z.coerce.number().int().min(500).default(60_000),
  /** product results: how long a response stays in the Redis results cache (seconds) */
  RESULTS_CACHE_TTL_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
  /** product results: bytes of responses one process writes to the Redis results cache per TTL window at most */
  RESULTS_CACHE_REDIS_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(64 * 1024 * 1024),
  /** autocomplete: a country needs this many distinct trending queries to get its own suggestions */
  AUTOCOMPLETE_REGION_MIN_QUERIES: z.coerce.number().int().min(1).default(10),
  /** streams: run the stream processors inside the app process (single-node mode) */
  STREAMS_ENABLED: bool(true),
  /** streams: run them on a worker thread of their own (false: on the app's event loop, next to the reads) */
  STREAMS_THREAD: bool(true),
  /** streams: comma-separated processor names to run, or 'all' */
  STREAMS_PROCESSORS: z
    .string()
    .regex(/^[a-z0-9_,-]+$/, 'expected processor names, comma-separated')
    .default('all'),
  /** streams: how long a fetch waits for more data before a batch is written (freshness vs batch size) */
  STREAMS_LINGER_MS: z.coerce.number().int().min(0).max(1_000).default(100),
  /** streams: the same for processors of high-rate topics that write per chunk (request events; docs/streams.md) */
  STREAMS_BATCHED_LINGER_MS: z.coerce.number().int().min(0).max(5_000).default(500),
  /** streams: after a fetch that found nothing, how long the next waits for the first message (0 = every fetch lingers) */
  STREAMS_IDLE_FETCH_WAIT_MS: z.coerce.number().int().min(0).max(10_000).default(IDLE_FETCH_WAIT_MS),
  /** streams: most messages in one ClickHouse insert */
  STREAMS_MAX_BATCH_MESSAGES: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
  /** streams: most bytes fetched per partition per batch */
  STREAMS_MAX_BATCH_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(256 * 1024 * 1024)
    .default(4 * 1024 * 1024),
  /** streams: consumer-group session timeout (how fast a crashed processor's partitions move on) */
  STREAMS_SESSION_TIMEOUT_MS: z.coerce.number().int().min(6_000).max(300_000).default(30_000),
  /** streams: how long an event_id / request_id / order_id is remembered for deduplication, hours */
  STREAMS_DEDUP_HORIZON_HOURS: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 30)
    .default(72),
  /** streams: retention of the raw event, request and order tables (ALTER … MODIFY TTL at start-up) */
  EVENTS_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(395),
  /** streams: retention of rejected_events_raw (beacon events dropped by validation), same mechanism */
  REJECTED_EVENTS_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  /** streams: bearer token of POST /internal/replay; unset = generated and written to DATA_DIR/replay.token */
  STREAMS_REPLAY_TOKEN: z.string().min(16).optional(),
  /** catalog webhooks: HMAC-SHA256 secret for stores without a `webhook_secret` config item; unset = generated into DATA_DIR/catalog-webhook.secret */
  CATALOG_WEBHOOK_SECRET: z.string().min(16).optional(),
  /** catalog webhooks: maximum request body, bytes (413 above) */
  CATALOG_WEBHOOK_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(5 * 1024 * 1024),
  /** catalog webhooks: how long an X-Shopify-Webhook-Id is remembered (redeliveries answered without producing), hours */
  CATALOG_WEBHOOK_DEDUP_HOURS: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 30)
    .default(48),
  /** catalog webhooks and import: how long a produce waits for Kafka's acknowledgement before failing (503) */
  CATALOG_PRODUCE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
});

export type Env = z.infer<typeof EnvSchema>;

export interface Config extends Env {
  dataDir: string;
  kafkaBrokers: string[];
  schemaRegistryUrl: string;
  redisUrl: string;
  /** which components the local stack runs itself */
  embedded: { kafka: boolean; clickhouse: boolean; redis: boolean; schemaRegistry: boolean };
  build: string;
}

export class ConfigError extends Error {
  readonly issues: { variable: string; message: string }[];
  constructor(issues: { variable: string; message: string }[]) {
    super(`Invalid configuration:\n${issues.map((i) => `  ${i.variable}: ${i.message}`).join('\n')}`);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => ({
        variable: String(i.path[0] ?? '(environment)'),
        message: `${i.message} (got ${JSON.stringify(env[String(i.path[0])])})`,
      })),
    );
  }
  const e = parsed.data;
  if (e.IMAGE_FEATURES === 'http') {
    const missing = (['IMAGE_MODEL_URL', 'IMAGE_MODEL'] as const).filter((k) => !e[k]);
    if (missing.length)
      throw new ConfigError(missing.map((variable) => ({ variable, message: 'required when IMAGE_FEATURES=http' })));
  }
  if (e.CLICKHOUSE_CLUSTER && !e.CLICKHOUSE_URL)
    throw new ConfigError([
      {
        variable: 'CLICKHOUSE_CLUSTER',
        message: 'needs CLICKHOUSE_URL (chDB in process is one server, not a cluster)',
      },
    ]);
  const dataDir = path.resolve(e.DATA_DIR);
  return {
    ...e,
    dataDir,
    kafkaBrokers: e.KAFKA_BROKERS ? e.KAFKA_BROKERS.split(',') : [`${e.HOST}:${e.KAFKA_PORT}`],
    schemaRegistryUrl: e.SCHEMA_REGISTRY_URL ?? `http://${e.HOST}:${e.SCHEMA_REGISTRY_PORT}`,
    redisUrl: e.REDIS_URL ?? `redis://${e.HOST}:${e.REDIS_PORT}`,
    embedded: {
      kafka: !e.KAFKA_BROKERS,
      clickhouse: !e.CLICKHOUSE_URL,
      redis: !e.REDIS_URL,
      schemaRegistry: !e.SCHEMA_REGISTRY_URL,
    },
    build: e.SERVICE_BUILD ?? `${process.env.npm_package_version ?? '0.1.0'}-dev`,
  };
}

/** For process entry points: load the configuration or exit with a message naming the variable. */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
}

/** Prefix a topic name with KAFKA_TOPIC_PREFIX. */
export function topicName(config: Pick<Config, 'KAFKA_TOPIC_PREFIX'>, name: string): string {
  return `${config.KAFKA_TOPIC_PREFIX}${name}`;
}
