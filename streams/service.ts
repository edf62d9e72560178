// Starts the selected processors in this process: topics, retention, DLQ producer, registry decoder,
// one runner per processor. Used by the app module (single node) and by streams/main.ts (one process per
// processor in distributed mode, or the fault tests' child process).
import type { Redis } from 'ioredis';
import type { Db } from '../clickhouse/client.ts';
import { retentionTtlDdl, storageTable } from '../clickhouse/cluster-ddl.ts';
import { TOPICS, type TopicKey } from '../schemas/topics.ts';
import { type Config, topicName } from '../services/common/config.ts';
import {
  type ConsumerClientFactory,
  consumerClientFactory,
  createProducerClient,
  ensureTopics,
  type Kafka,
  type ProducerClient,
  topicConfigs,
  type ValueCodec,
} from '../services/common/kafka/index.ts';
import type { Logger } from '../services/common/logger.ts';
import { registryDecoder } from './runtime/decoder.ts';
import { streamMetrics } from './runtime/metrics.ts';
import { ProcessorRunner, type RunOptions } from './runtime/runtime.ts';
import type { DlqRecord, Processor, RuntimeDeps } from './runtime/types.ts';

export interface StreamsOptions {
  config: Config;
  db: Db;
  redis: Redis;
  kafka: Kafka;
  logger: Logger;
  processors: Processor<any>[];
  /** a ready codec (tests); default: one over config.schemaRegistryUrl */
  codec?: ValueCodec;
  /** create the processors' topics and their `.dlq` topics when missing (default true; the app's composer
   *  creates every topic at start and passes false) */
  ensureTopics?: boolean;
}

/** The processors' consumers (the runtime takes each fetch's batches together and decides how many
 *  partitions it works on at once: runtime.ts). */
export function streamsClientFactory(kafka: Kafka, logger: Logger): ConsumerClientFactory {
  return consumerClientFactory(kafka, logger);
}

export interface Streams {
  deps: RuntimeDeps;
  config: Config;
  runners: Map<string, ProcessorRunner<any>>;
  /** run options every live runner gets (replay derives its own from them) */
  runOptions(): Omit<RunOptions, 'stopAt'>;
  /** stop and start a processor's live runner again (after a replay swap) */
  restart(name: string): Promise<void>;
  stop(): Promise<void>;
}

/** Redis key holding the state namespace a processor's live runner uses (switched by a replay swap). */
export function namespaceKey(processor: string): string {
  return `sd:streams:ns:${processor}`;
}

export async function liveNamespace(redis: Redis, processor: string): Promise<string> {
  return (await redis.get(namespaceKey(processor))) ?? 'live';
}

/**
 * Apply EVENTS_RETENTION_DAYS to the raw event, request and order tables, and
 * REJECTED_EVENTS_RETENTION_DAYS (default 30) to rejected_events_raw, where it differs from their
 * current TTL.
 */
export async function applyRetention(db: Db, days: number, logger: Logger, rejectedDays = 30): Promise<void> {
  const want: Record<string, number> = {
    events_raw: days,
    requests_raw: days,
    orders_raw: days,
    rejected_events_raw: rejectedDays,
  };
  // on a cluster the TTL lives on each shard's local table (clickhouse/cluster-ddl.ts)
  const byStorage = new Map(Object.keys(want).map((t) => [storageTable(t, db.cluster), t]));
  const rows = await db.query<{ name: string; engine_full: string }>(
    `SELECT name, engine_full FROM system.tables WHERE database = {db:String} AND name IN {names:Array(String)}`,
    { db: db.database, names: [...byStorage.keys()] },
  );
  for (const r of rows) {
    const table = byStorage.get(r.name);
    const target = table === undefined ? undefined : want[table];
    const current = /toIntervalDay\((\d+)\)/.exec(r.engine_full)?.[1];
    if (table === undefined || target === undefined || (current !== undefined && Number(current) === target)) continue;
    // `target` is a validated integer (config schema); DDL cannot take server-side parameters for it
    await db.command(retentionTtlDdl(table, 'ts', Math.trunc(target), db.cluster));
    logger.info({ table, days: target }, 'retention changed');
  }
}

/** Redis set of the insert blocks of `table` the engine lost and no replay has rebuilt yet. */
export function lostBlocksKey(database: string, table: string): string {
  return `sd:streams:lost-blocks:${database}:${table}`;
}

/**
 * After a hard crash ClickHouse may hold a dedup record for an insert whose part it never committed (the
 * engine gap in docs/streams.md, "Known limitation"): that chunk's retry was or will be dropped, and the
 * table is short by that block. `openDb` found them on disk before the engine opened the directory; they
 * are kept in Redis (a later start no longer sees them once merges cover the gap) until a replay rebuilds
 * the table, logged with the repair command at every start and exported as `stream_engine_lost_blocks`.
 */
async function reportLostBlocks(db: Db, redis: Redis, processors: Processor<unknown>[], log: Logger): Promise<void> {
  if (!db.embedded) return;
  for (const p of processors) {
    for (const table of [...p.tables.written, ...p.tables.views.map((v) => v.target)]) {
      const key = lostBlocksKey(db.database, table);
      const found = db.lostBlocks.get(table) ?? [];
      if (found.length) await redis.sadd(key, ...found);
      const parts = await redis.smembers(key);
      streamMetrics.lostBlocks.set({ processor: p.name, table }, parts.length);
      if (parts.length) {
        log.error(
          { processor: p.name, table, parts },
          `ClickHouse lost ${parts.length} insert block(s) of ${table} in a hard crash (dedup record without its part); rebuild with: npm run replay -- --processor ${p.name} --from earliest`,
        );
      }
    }
  }
}

export async function startStreams(opts: StreamsOptions): Promise<Streams> {
  const { config, db, redis, kafka, logger } = opts;
  const log = logger.child({ component: 'streams' });
  const topics = [...new Set(opts.processors.map((p) => p.topic))].map((key) => ({
    key: key as TopicKey,
    name: topicName(config, TOPICS[key as TopicKey].name),
  }));
  if (opts.ensureTopics !== false) {
    const keys = topics.map((t) => t.key);
    await ensureTopics(kafka, topicConfigs(config, keys, keys), log);
  }
  await applyRetention(db, config.EVENTS_RETENTION_DAYS, log, config.REJECTED_EVENTS_RETENTION_DAYS);
  await reportLostBlocks(db, redis, opts.processors, log);

  let producer: ProducerClient | undefined;
  const dlq = {
    async send(records: DlqRecord[]) {
      producer ??= createProducerClient(kafka);
      await producer.send(records);
    },
  };

  const deps: RuntimeDeps = {
    db,
    redis,
    logger: log,
    decoder: registryDecoder(config.schemaRegistryUrl, topics, opts.codec),
    topicName: (key) => topicName(config, TOPICS[key].name),
    createClient: streamsClientFactory(kafka, log),
    dlq,
  };
  const runOptions = () => ({
    lingerMs: config.STREAMS_LINGER_MS,
    batchedLingerMs: config.STREAMS_BATCHED_LINGER_MS,
    idleFetchWaitMs: config.STREAMS_IDLE_FETCH_WAIT_MS || undefined,
    maxBatchMessages: config.STREAMS_MAX_BATCH_MESSAGES,
    maxBatchBytes: config.STREAMS_MAX_BATCH_BYTES,
    dedupHorizonHours: config.STREAMS_DEDUP_HORIZON_HOURS,
    sessionTimeoutMs: config.STREAMS_SESSION_TIMEOUT_MS,
  });

  const runners = new Map<string, ProcessorRunner<any>>();
  const byName = new Map(opts.processors.map((p) => [p.name, p]));
  const launch = async (p: Processor<any>) => {
    const runner = new ProcessorRunner(p, deps, {
      ...runOptions(),
      stateNamespace: await liveNamespace(redis, p.name),
    });
    runners.set(p.name, runner);
    await runner.start();
  };
  try {
    for (const p of opts.processors) await launch(p);
  } catch (err) {
    // leave nothing half-started behind (the caller may retry)
    await Promise.allSettled([...runners.values()].map((r) => r.stop()));
    await producer?.close();
    throw err;
  }

  let stopped = false;
  return {
    deps,
    config,
    runners,
    runOptions,
    async restart(name) {
      const p = byName.get(name);
      if (!p) throw new Error(`processor ${name} does not run in this process`);
      await runners.get(name)?.stop();
      await launch(p);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await Promise.all([...runners.values()].map((r) => r.stop()));
      await producer?.close();
    },
  };
}
