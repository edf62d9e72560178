// Real infrastructure for the standalone stream-processing suites: a redis-server child process on a
// free port, the embedded broker and the schema registry in this process, a codec with the platform
// schemas registered, and generators of enriched events / request events / orders.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { Redis } from 'ioredis';
import { newUlid } from '../../services/common/ids.ts';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { ensureRedisServer, freePorts, tcpOpen } from '../../deploy/local/stack.ts';
import { EMPTY_EVENT_FIELDS, type EnrichedEvent } from '../../schemas/events.ts';
import type { Order } from '../../schemas/orders.ts';
import type { RequestEvent } from '../../schemas/requests.ts';
import { requestEvent } from '../../schemas/requests.ts';
import { createValueCodec, registerPlatformSchemas, type ValueCodec } from '../../services/common/kafka/codec.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { type Config, loadConfig } from '../../services/common/config.ts';
import { createKafka, type Kafka, type Producer } from '../../services/common/kafka/index.ts';
import { createLogger, type Logger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { type Broker, startBroker } from '../../services/kafka-broker/index.ts';
import { startSchemaRegistry, type RunningSchemaRegistry } from '../../services/schema-registry/index.ts';
import { selectProcessors } from '../../streams/registry.ts';
import type { ReplayEnv } from '../../streams/replay/replay.ts';
import { type Streams, startStreams } from '../../streams/service.ts';
import type { Processor } from '../../streams/runtime/types.ts';
import { privateDb } from '../helpers/chdb.ts';

export const REPO = path.resolve(import.meta.dirname, '../..');
export const NODE = path.join(REPO, 'node_modules/.bin/node');

export interface Infra {
  dir: string;
  brokers: string[];
  kafka: Kafka;
  redisUrl: string;
  registryUrl: string;
  codec: ValueCodec;
  prefix: string;
  topic(key: 'events' | 'requests' | 'orders' | 'rejected'): string;
  producer: Producer;
  stop(): Promise<void>;
}

export async function startInfra(opts: { prefix?: string } = {}): Promise<Infra> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sd-streams-'));
  const [redisPort] = await freePorts(1);
  const redis = spawn(
    ensureRedisServer(),
    ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'],
    {
      stdio: 'ignore',
    },
  );
  const deadline = Date.now() + 10_000;
  while (!(await tcpOpen('127.0.0.1', redisPort))) {
    if (Date.now() > deadline) throw new Error('redis-server did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  const broker: Broker = await startBroker({
    port: 0,
    dataDir: path.join(dir, 'kafka'),
    fsync: 10,
    logger: pino({ level: 'warn' }),
    groupOptions: { initialRebalanceDelayMs: 50 },
  });
  const brokers = [`127.0.0.1:${broker.port}`];
  // kafkajs' own connection timeout and retries (fault suites restart the broker under the processors)
  const kafka = createKafka(brokers, 'streams-test', pino({ level: 'silent' }), {
    connectionTimeout: 1_000,
    retry: {},
  });
  const prefix = opts.prefix ?? `t${newUlid().slice(-8).toLowerCase()}.`;
  const registry: RunningSchemaRegistry = await startSchemaRegistry({
    kafka,
    topic: `${prefix}_schemas`,
    port: 0,
    logger: pino({ level: 'warn' }),
  });
  const codec = createValueCodec({ registryUrl: registry.url });
  await registerPlatformSchemas(codec, { KAFKA_TOPIC_PREFIX: prefix });
  const admin = kafka.admin();
  await admin.connect();
  const names = { events: TOPICS.events, requests: TOPICS.requests, orders: TOPICS.orders, rejected: TOPICS.rejected };
  await admin.createTopics({
    waitForLeaders: true,
    topics: Object.values(names).flatMap((t) => [
      { topic: `${prefix}${t.name}`, numPartitions: t.partitions },
      { topic: `${prefix}${t.name}.dlq`, numPartitions: 1 },
    ]),
  });
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 5, allowAutoTopicCreation: false });
  await producer.connect();
  return {
    dir,
    brokers,
    kafka,
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    registryUrl: registry.url,
    codec,
    prefix,
    topic: (key) => `${prefix}${names[key].name}`,
    producer,
    async stop() {
      await producer.disconnect().catch(() => {});
      await registry.close().catch(() => {});
      await broker.close().catch(() => {});
      redis.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Produce values (encoded with the topic's registered schema), keyed, in one batch per call. */
export async function produce(
  infra: Infra,
  key: 'events' | 'requests' | 'orders' | 'rejected',
  records: { key: string; value: unknown }[],
) {
  const topic = infra.topic(key);
  for (let i = 0; i < records.length; i += 500) {
    await infra.producer.send({
      topic,
      acks: -1,
      messages: records.slice(i, i + 500).map((r) => ({ key: r.key, value: infra.codec.encode(topic, r.value) })),
    });
  }
}

/** Produce raw bytes (poison messages). */
export async function produceRaw(
  infra: Infra,
  key: 'events' | 'requests' | 'orders' | 'rejected',
  records: { key: string; value: Buffer }[],
) {
  await infra.producer.send({ topic: infra.topic(key), acks: -1, messages: records });
}

// ------------------------------------------------------------------ generators

export function enrichedEvent(
  fields: Partial<EnrichedEvent> & Pick<EnrichedEvent, 'event_type' | 'store_id' | 'session_id' | 'timestamp'>,
): EnrichedEvent {
  return {
    event_id: newUlid(),
    received_at: fields.timestamp,
    timestamp_clamped: false,
    ...EMPTY_EVENT_FIELDS,
    shopping_channel: 'web',
    contextual_data: {},
    geo_country: 'US',
    geo_region: null,
    geo_city: null,
    device_type: 'desktop',
    browser: 'Chrome',
    os: 'Linux',
    is_bot: false,
    ...fields,
  };
}

export function searchRequest(fields: {
  store_id: string;
  query: string;
  session_id: string | null;
  country: string;
  at: string;
  total?: number;
}): RequestEvent {
  return requestEvent({
    request_id: newUlid(),
    store_id: fields.store_id,
    kind: 'search',
    occurred_at: fields.at,
    device_type: 'desktop',
    status_code: 200,
    latency_ms: 12,
    session_id: fields.session_id,
    query: fields.query,
    normalized_query: fields.query.toLowerCase().trim(),
    geo_country: fields.country,
    total_results: fields.total ?? 10,
    result_product_ids: ['1', '2'],
  });
}

export function order(
  fields: Partial<Order> & Pick<Order, 'store_id' | 'order_id' | 'created_at' | 'line_items'>,
): Order {
  return {
    customer_id: null,
    session_id: null,
    updated_at: null,
    currency: 'USD',
    total_price: '0',
    cancelled: false,
    source: 'webhook',
    ...fields,
  };
}

/** A deterministic PRNG (mulberry32) so generated streams are reproducible from a seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Spawn `streams/main.ts` as a child process with the given environment. */
export function spawnStreams(
  env: Record<string, string>,
  args: string[],
): { child: ChildProcess; ready: Promise<{ sql?: string }>; logs: string[] } {
  const child = spawn(NODE, [path.join(REPO, 'streams/main.ts'), ...args], {
    cwd: REPO,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const logs: string[] = [];
  for (const s of [child.stdout, child.stderr])
    s?.on('data', (d: Buffer) => logs.push(...d.toString().split('\n').filter(Boolean)));
  const ready = new Promise<{ sql?: string }>((resolve, reject) => {
    child.on('message', (m: { type?: string; sql?: string }) => {
      if (m?.type === 'ready') resolve({ sql: m.sql });
    });
    child.once('exit', (code, signal) =>
      reject(
        new Error(`streams child exited before ready (code ${code}, signal ${signal}):\n${logs.slice(-30).join('\n')}`),
      ),
    );
  });
  ready.catch(() => {});
  return { child, ready, logs };
}

/** resolves once every group has committed up to the high watermark of every partition */
export async function waitCaughtUp(
  kafka: Kafka,
  groups: { group: string; topic: string }[],
  timeoutMs: number,
): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let behind = 0;
      for (const { group, topic } of groups) {
        const high = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, BigInt(p.high)]));
        const committed = await admin.fetchOffsets({ groupId: group, topics: [topic] });
        for (const p of committed[0]?.partitions ?? []) {
          const h = high.get(p.partition) ?? 0n;
          const c = BigInt(p.offset) < 0n ? 0n : BigInt(p.offset);
          if (c < h) behind += Number(h - c);
        }
      }
      if (behind === 0) return;
      if (Date.now() > deadline) throw new Error(`consumers still ${behind} messages behind after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 300));
    }
  } finally {
    await admin.disconnect();
  }
}

export interface StreamsHarness {
  infra: Infra;
  db: Db;
  redis: Redis;
  streams: Streams;
  config: Config;
  logger: Logger;
  /** what runReplay needs to replay against these live processors */
  replayEnv(): ReplayEnv;
  /** stops the processors, then Redis, chDB and the infrastructure */
  stop(): Promise<void>;
}

/**
 * The stream processors in this process against real infrastructure (startInfra) and a private, migrated
 * chDB database: what the standalone processor suites share. `env` adds to the streams' configuration;
 * `beforeStart` runs once the infrastructure is up (e.g. to register schemas or produce a backlog).
 */
export async function startStreamsHarness(
  name: string,
  opts: {
    /** processor names (selectProcessors), or the processors themselves */
    processors: string | Processor<any>[];
    env?: Record<string, string>;
    beforeStart?: (infra: Infra) => Promise<void>;
  },
): Promise<StreamsHarness> {
  const logger = createLogger(`${name}-test`, 'warn');
  const infra = await startInfra();
  await opts.beforeStart?.(infra);
  const db = await privateDb(`${name.replaceAll('-', '_')}_${newUlid().toLowerCase()}`);
  await migrate(db);
  const config = loadConfig({
    KAFKA_BROKERS: infra.brokers.join(','),
    REDIS_URL: infra.redisUrl,
    SCHEMA_REGISTRY_URL: infra.registryUrl,
    KAFKA_TOPIC_PREFIX: infra.prefix,
    DATA_DIR: infra.dir,
    LOG_LEVEL: 'warn',
    STREAMS_SESSION_TIMEOUT_MS: '6000',
    ...opts.env,
  });
  const redis = createRedis(infra.redisUrl);
  const streams = await startStreams({
    config,
    db,
    redis,
    kafka: createKafka(infra.brokers, `${name}-test`, logger),
    logger,
    processors: typeof opts.processors === 'string' ? selectProcessors(opts.processors) : opts.processors,
  });
  return {
    infra,
    db,
    redis,
    streams,
    config,
    logger,
    replayEnv: () => ({
      config,
      db,
      redis,
      kafka: infra.kafka,
      logger,
      streams,
      deps: streams.deps,
      runOptions: streams.runOptions,
    }),
    async stop() {
      await streams.stop();
      redis.disconnect();
      await db.close();
      await infra.stop();
    },
  };
}
