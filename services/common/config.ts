// The one configuration schema: every environment variable the platform reads is declared here,
// validated once at start-up, with defaults that make `npm start` work on a fresh machine.
import path from 'node:path';
import { z } from 'zod';

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
  /** build identifier sent as x-service-build */
  SERVICE_BUILD: z.string().min(1).optional(),
  /** start the analysts' read-only SQL endpoint (single-node mode) */
  CLICKHOUSE_HTTP_ENABLED: bool(true),
  /** load the demo store on first start */
  DEMO_STORE: bool(true),
  /** maximum request body size for JSON endpoints, bytes */
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
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
