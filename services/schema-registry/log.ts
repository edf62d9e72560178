// The registry's durable state: the compacted single-partition `_schemas` topic. On start the topic is
// created if missing and replayed from the beginning into the state; afterwards a consumer keeps
// applying records in log order. A write is produced with acks=all (idempotent producer) and returns
// once the consumer has applied it, so the state a caller sees always contains its own write and is
// exactly what a rebuild from the log gives.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import kafkajs, { type Admin, type Consumer, type Kafka, type Producer } from 'kafkajs';
import { TOPICS } from '../../schemas/topics.ts';
import type { Logger } from '../common/logger.ts';
import { gauge } from '../common/metrics.ts';
import type { LogRecord, RegistryState } from './state.ts';

export interface RegistryLogOptions {
  kafka: Kafka;
  topic: string;
  state: RegistryState;
  logger: Logger;
  /** how long start() may take to replay the topic */
  replayTimeoutMs?: number;
  /** how long a write waits for its acknowledgement and application */
  writeTimeoutMs?: number;
}

export class LogUnavailableError extends Error {}

const schemasGauge = gauge('schema_registry_schemas', 'Distinct schemas (ids) held by the schema registry', ['topic']);
const subjectsGauge = gauge(
  'schema_registry_subjects',
  'Subjects (including soft-deleted) held by the schema registry',
  ['topic'],
);
const offsetGauge = gauge(
  'schema_registry_applied_offset',
  'Last offset of the state topic applied by the schema registry',
  ['topic'],
);

export class RegistryLog {
  private readonly opts: Required<RegistryLogOptions>;
  private admin?: Admin;
  private producer?: Producer;
  private consumer?: Consumer;
  /** highest offset applied to the state (-1 = none) */
  private applied = -1;
  private waiters: { offset: number; resolve: () => void }[] = [];
  private crashed: Error | undefined;
  private closed = false;

  constructor(opts: RegistryLogOptions) {
    this.opts = { replayTimeoutMs: 60_000, writeTimeoutMs: 30_000, ...opts };
  }

  get appliedOffset(): number {
    return this.applied;
  }

  /** healthy = the consumer is running and no write is stuck */
  check(): void {
    if (this.closed) throw new Error('schema registry log is closed');
    if (this.crashed) throw new Error(`schema registry consumer stopped: ${this.crashed.message}`);
  }

  async start(): Promise<void> {
    const { kafka, topic, logger } = this.opts;
    this.admin = kafka.admin();
    await this.admin.connect();
    // create only when missing (asking to create an existing topic makes kafkajs log an error)
    const exists = (await this.admin.listTopics()).includes(topic);
    const created =
      !exists &&
      (await this.admin.createTopics({
        waitForLeaders: true,
        topics: [
          {
            topic,
            numPartitions: TOPICS.schemas.partitions,
            // the registry's configuration (schemas/topics.ts): compacted, kept forever
            configEntries: [
              { name: 'cleanup.policy', value: TOPICS.schemas.cleanupPolicy },
              { name: 'retention.ms', value: String(TOPICS.schemas.retentionMs) },
            ],
          },
        ],
      }));
    if (created) logger.info({ topic }, 'schema registry topic created (compacted)');
    if (exists) await this.assertCompacted();
    const [offsets] = await this.admin.fetchTopicOffsets(topic);
    const high = Number(offsets.high);
    const low = Number(offsets.low);

    this.producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
    await this.producer.connect();

    // a group of its own per instance: every registry reads the whole topic and commits nothing
    this.consumer = kafka.consumer({
      groupId: `schema-registry-${os.hostname()}-${process.pid}-${randomUUID()}`,
      maxWaitTimeInMs: 200,
      allowAutoTopicCreation: false,
    });
    this.consumer.on(this.consumer.events.CRASH, (e) => {
      const err = e.payload.error;
      if (!e.payload.restart) this.crashed = err;
      logger.error({ err: err.message, restart: e.payload.restart }, 'schema registry consumer crashed');
    });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic, fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, heartbeat }) => {
        for (const m of batch.messages) {
          const offset = Number(m.offset);
          // after a rebalance or reconnect the group starts over from the beginning: skip what we have
          if (offset <= this.applied) continue;
          this.opts.state.apply(m.key?.toString('utf8') ?? null, m.value ? m.value.toString('utf8') : null);
          this.applied = offset;
        }
        this.release();
        const stats = this.opts.state.stats();
        const labels = { topic: this.opts.topic };
        schemasGauge.set(labels, stats.schemas);
        subjectsGauge.set(labels, stats.subjects);
        offsetGauge.set(labels, this.applied);
        await heartbeat();
      },
    });

    if (high > low) {
      // replay until the last record present at start-up is applied (the active segment is never compacted)
      await this.waitFor(high - 1, this.opts.replayTimeoutMs, 'replaying the schema registry topic');
    }
    logger.info(
      { topic, records: high - low, appliedOffset: this.applied, ...this.opts.state.stats() },
      'schema registry state loaded',
    );
  }

  /** A `_schemas` topic under time/size retention would lose schemas: refuse to run on it (as Confluent does). */
  private async assertCompacted(): Promise<void> {
    const { topic, logger } = this.opts;
    let policy: string | undefined;
    try {
      const res = await this.admin!.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configNames: ['cleanup.policy'] }],
      });
      policy = res.resources[0]?.configEntries.find((e) => e.configName === 'cleanup.policy')?.configValue;
    } catch (err) {
      logger.warn(
        { topic, err: (err as Error).message },
        'could not read the cleanup policy of the schema registry topic',
      );
      return;
    }
    if (
      policy !== undefined &&
      !policy
        .split(',')
        .map((p) => p.trim())
        .includes('compact')
    ) {
      throw new Error(
        `the schema registry topic ${topic} has cleanup.policy=${policy}; it must be 'compact' or schemas would be deleted by retention`,
      );
    }
  }

  /** Append records atomically (one batch), then wait until they are applied to the state. */
  async append(records: LogRecord[]): Promise<void> {
    this.check();
    if (!this.producer) throw new LogUnavailableError('schema registry log not started');
    let lastOffset: number;
    try {
      const [meta] = await withTimeout(
        this.producer.send({
          topic: this.opts.topic,
          acks: -1,
          messages: records.map((r) => ({ key: r.key, value: r.value, partition: 0 })),
        }),
        this.opts.writeTimeoutMs,
        'writing to the schema registry topic',
      );
      lastOffset = Number(meta.baseOffset) + records.length - 1;
    } catch (err) {
      throw new LogUnavailableError(`could not write to ${this.opts.topic}: ${(err as Error).message}`);
    }
    await this.waitFor(lastOffset, this.opts.writeTimeoutMs, 'applying a schema registry write');
  }

  private waitFor(offset: number, timeoutMs: number, what: string): Promise<void> {
    if (this.applied >= offset) return Promise.resolve();
    let waiter: { offset: number; resolve: () => void } | undefined;
    return withTimeout(
      new Promise<void>((resolve) => {
        waiter = { offset, resolve };
        this.waiters.push(waiter);
      }),
      timeoutMs,
      what,
    ).catch((err) => {
      this.waiters = this.waiters.filter((w) => w !== waiter);
      throw new LogUnavailableError((err as Error).message);
    });
  }

  private release(): void {
    if (this.waiters.length === 0) return;
    const still: typeof this.waiters = [];
    for (const w of this.waiters) {
      if (this.applied >= w.offset) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([this.consumer?.disconnect(), this.producer?.disconnect(), this.admin?.disconnect()]);
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
