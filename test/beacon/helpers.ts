import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import Fastify from 'fastify';
import { newUlid } from '../../services/common/ids.ts';
import type { Redis } from 'ioredis';
import { createValueCodec } from '../../services/common/kafka/codec.ts';
import { type Beacon, type BeaconSettings, createBeacon } from '../../services/beacon/module.ts';
import { beaconPlugin } from '../../services/beacon/plugin.ts';
import { loadConfig } from '../../services/common/config.ts';
import { createKafka, type Kafka } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { type RegistryClient, RegistryError } from '../../services/common/kafka/registry-client.ts';
import { type Broker, startBroker } from '../../services/kafka-broker/index.ts';
import type { StoreDirectory, StoreRecord, StoreStatus } from '../../services/store-config/api.ts';

export { type RedisServer, startRedis } from '../helpers/redis.ts';

export interface TestBroker {
  broker: Broker;
  brokers: string[];
  dataDir: string;
  close(): Promise<void>;
  stop(): Promise<void>;
}

/** An embedded broker on a free port (or `port`), in a fresh directory (or `dataDir`, to restart one). */
export async function startTestBroker(opts: { port?: number; dataDir?: string } = {}): Promise<TestBroker> {
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'sd-beacon-broker-'));
  const broker = await startBroker({ port: opts.port ?? 0, dataDir, logLevel: 'warn' });
  let stopped = false;
  const close = async () => {
    if (!stopped) {
      stopped = true;
      await broker.close();
    }
  };
  return {
    broker,
    brokers: [`127.0.0.1:${broker.port}`],
    dataDir,
    /** stop the broker, keep its data */
    close,
    async stop() {
      await close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * An in-memory registry client for standalone suites that run without the app (which serves the real
 * registry): ids per distinct schema text, subjects → versions. Same interface as schemas/registry-client.
 */
export function memoryRegistry(): RegistryClient {
  const ids = new Map<string, number>();
  const texts = new Map<number, string>();
  const subjects = new Map<string, number[]>();
  const get = (id: number) => {
    const t = texts.get(id);
    if (t === undefined) throw new RegistryError(404, 40403, `schema ${id} not found`);
    return t;
  };
  return {
    url: 'memory://',
    async register(subject, schema) {
      let id = ids.get(schema);
      if (id === undefined) {
        id = ids.size + 1;
        ids.set(schema, id);
        texts.set(id, schema);
      }
      const versions = subjects.get(subject) ?? [];
      if (!versions.includes(id)) versions.push(id);
      subjects.set(subject, versions);
      return id;
    },
    async lookup(subject, schema) {
      const id = ids.get(schema);
      const versions = subjects.get(subject) ?? [];
      if (id === undefined || !versions.includes(id)) throw new RegistryError(404, 40403, 'schema not found');
      return { subject, id, version: versions.indexOf(id) + 1, schema };
    },
    async getSchemaById(id) {
      return get(id);
    },
    async getVersion(subject, version) {
      const versions = subjects.get(subject) ?? [];
      const id = version === 'latest' ? versions.at(-1) : versions[version - 1];
      if (id === undefined) throw new RegistryError(404, 40402, 'version not found');
      return { subject, id, version: versions.indexOf(id) + 1, schema: get(id) };
    },
    async getCompatibility() {
      return 'BACKWARD';
    },
    async setCompatibility() {},
  };
}

/** A StoreDirectory over a fixed set of stores (the standalone suites run without the store-config module). */
export function staticDirectory(
  stores: { storeId: string; token: string; status?: StoreStatus }[],
): Pick<StoreDirectory, 'authenticate'> {
  const byHash = new Map(stores.map((s) => [createHash('sha256').update(s.token).digest('hex'), s]));
  return {
    authenticate(token) {
      if (!token) return { ok: false, status: 401, code: 'missing_token', message: 'missing access token' };
      const s = byHash.get(createHash('sha256').update(token).digest('hex'));
      if (!s) return { ok: false, status: 401, code: 'invalid_token', message: 'invalid access token' };
      const store: StoreRecord = {
        storeId: s.storeId,
        name: s.storeId,
        status: s.status ?? 'active',
      } as StoreRecord;
      if (store.status === 'suspended')
        return { ok: false, status: 402, code: 'store_suspended', message: 'store suspended' };
      return { ok: true, store };
    },
  };
}

/** Read every record of `topics` from the beginning until `count` arrived or `timeoutMs` passed. */
export async function readTopic(
  kafka: Kafka,
  topic: string,
  opts: { count?: number; timeoutMs?: number } = {},
): Promise<{ key: string; value: Buffer; partition: number; offset: string }[]> {
  const admin = kafka.admin();
  await admin.connect();
  const out: { key: string; value: Buffer; partition: number; offset: string }[] = [];
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    const consumer = kafka.consumer({
      groupId: `beacon-test-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`,
    });
    await consumer.connect();
    try {
      const want = opts.count ?? offsets.reduce((n, o) => n + Number(o.high) - Number(o.low), 0);
      await consumer.subscribe({ topic, fromBeginning: true });
      const done = new Promise<void>((resolve) => {
        if (want === 0) resolve();
        void consumer.run({
          eachMessage: async ({ message, partition }) => {
            out.push({
              key: message.key?.toString() ?? '',
              value: message.value ?? Buffer.alloc(0),
              partition,
              offset: message.offset,
            });
            if (out.length >= want) resolve();
          },
        });
      });
      await Promise.race([done, new Promise((r) => setTimeout(r, opts.timeoutMs ?? 15_000))]);
    } finally {
      await consumer.disconnect();
    }
  } finally {
    await admin.disconnect();
  }
  return out;
}

export interface BeaconApp {
  url: string;
  kafka: Kafka;
  redis: Redis;
  beacon: Beacon;
  close(): Promise<void>;
}

/** The beacon plugin in a Fastify app of its own, against the given broker and Redis. */
export async function startBeaconApp(opts: {
  brokers: string[];
  redisUrl: string;
  stores: { storeId: string; token: string; status?: StoreStatus }[];
  settings?: Partial<BeaconSettings>;
  registry?: RegistryClient;
}): Promise<BeaconApp> {
  const config = loadConfig({ LOG_LEVEL: 'warn' });
  const logger = createLogger('beacon-test', process.env.LOG_LEVEL ?? 'silent');
  const kafka = createKafka(opts.brokers, `beacon-test-${process.pid}`, logger, {
    retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 500 },
  });
  const redis = createRedis(opts.redisUrl);
  redis.on('error', () => {});
  const codec = createValueCodec({ registryUrl: '', registry: opts.registry ?? memoryRegistry() });
  const beacon = await createBeacon({
    kafka,
    redis,
    directory: staticDirectory(opts.stores),
    logger,
    settings: { ...config, ...opts.settings },
    codec,
    brokers: opts.brokers,
  });
  const app = Fastify();
  await app.register(beaconPlugin, beacon.options);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    kafka,
    redis,
    beacon,
    async close() {
      await app.close();
      await beacon.close();
      redis.disconnect();
    },
  };
}

/** A fresh event id (ULID). */
export function eventId(): string {
  return newUlid();
}

export interface Collected<T> {
  topic: string;
  key: string;
  partition: number;
  value: T;
}

/**
 * A consumer that reads `topics` from the beginning for the whole suite and keeps the decoded values
 * that pass `keep` (e.g. one store's). `waitFor` resolves once the predicate holds over what arrived.
 */
export async function topicCollector<T>(
  kafka: Kafka,
  codec: { decode<V>(buf: Buffer, topic?: string): Promise<{ value: V }> },
  topics: string[],
  keep: (value: T) => boolean,
) {
  const items: Collected<T>[] = [];
  const consumer = kafka.consumer({ groupId: `beacon-collector-${process.pid}-${newUlid()}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  for (const topic of topics) await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ topic, partition, message }) => {
      const { value } = await codec.decode<T>(message.value!, topic);
      if (keep(value)) items.push({ topic, partition, key: message.key?.toString() ?? '', value });
    },
  });
  return {
    items,
    async waitFor(predicate: (items: Collected<T>[]) => boolean, timeoutMs = 20_000): Promise<Collected<T>[]> {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(items)) {
        if (Date.now() > deadline)
          throw new Error(`collector: condition not met within ${timeoutMs} ms (${items.length} records kept)`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return items;
    },
    stop: () => consumer.disconnect(),
  };
}
