// A Confluent-compatible schema registry whose state lives in a compacted Kafka topic (`_schemas`).
// `startSchemaRegistry` runs it on its own Fastify instance and port: inside the app (module.ts), as its
// own process (main.ts) or in tests.
import Fastify, { type FastifyBaseLogger, LogController } from 'fastify';
import { createKafka, type Kafka } from '../common/kafka/index.ts';
import { createLogger, type Logger } from '../common/logger.ts';
import { RegistryLog } from './log.ts';
import { schemaRegistryRoutes } from './routes.ts';
import { SchemaRegistryService } from './service.ts';
import { RegistryState } from './state.ts';

export { SchemaRegistryService } from './service.ts';
export { RegistryState } from './state.ts';

export interface SchemaRegistryOptions {
  /** a kafkajs client, or the brokers to create one for */
  kafka?: Kafka;
  brokers?: string[];
  /** the compacted state topic (physical name, prefix applied), e.g. `_schemas` */
  topic: string;
  host?: string;
  /** 0 = any free port */
  port: number;
  logger?: Logger;
  bodyLimitBytes?: number;
  /** how long a write waits for Kafka's acknowledgement before answering 500 (default 30 s) */
  writeTimeoutMs?: number;
  /** create the state topic when missing (default true: standalone and tests; the app's composer creates
   *  every topic at start and passes false) */
  ensureTopic?: boolean;
}

export interface RunningSchemaRegistry {
  url: string;
  port: number;
  state: RegistryState;
  service: SchemaRegistryService;
  /** throws when the registry cannot serve writes (consumer stopped, closed) */
  check(): void;
  close(): Promise<void>;
}

export async function startSchemaRegistry(opts: SchemaRegistryOptions): Promise<RunningSchemaRegistry> {
  const logger = opts.logger ?? createLogger('schema-registry');
  const kafka = opts.kafka ?? (opts.brokers ? createKafka(opts.brokers, 'schema-registry', logger) : undefined);
  if (!kafka) throw new Error('startSchemaRegistry: pass kafka or brokers');
  const state = new RegistryState();
  const log = new RegistryLog({
    kafka,
    topic: opts.topic,
    state,
    logger,
    ensureTopic: opts.ensureTopic ?? true,
    ...(opts.writeTimeoutMs ? { writeTimeoutMs: opts.writeTimeoutMs } : {}),
  });
  try {
    await log.start();
  } catch (err) {
    await log.close();
    throw err;
  }
  const service = new SchemaRegistryService(state, log);

  const http = Fastify({
    loggerInstance: logger.child({ component: 'schema-registry' }) as FastifyBaseLogger,
    bodyLimit: opts.bodyLimitBytes ?? 4 * 1024 * 1024,
    logController: new LogController({ disableRequestLogging: true }),
  });
  await http.register(schemaRegistryRoutes, { service });
  try {
    await http.listen({ host: opts.host ?? '127.0.0.1', port: opts.port });
  } catch (err) {
    await log.close();
    throw err;
  }
  const port = (http.server.address() as { port: number }).port;
  const host = opts.host && opts.host !== '0.0.0.0' && opts.host !== '::' ? opts.host : '127.0.0.1';
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger.info({ url, topic: opts.topic }, 'schema registry listening');

  let closed = false;
  return {
    url,
    port,
    state,
    service,
    check: () => log.check(),
    async close() {
      if (closed) return;
      closed = true;
      await http.close();
      await log.close();
    },
  };
}
