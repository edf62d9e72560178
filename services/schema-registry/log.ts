// The registry's durable state: the compacted single-partition `_schemas` topic. On start the topic is
// created if missing and replayed from the beginning into the state; afterwards a consumer keeps
// applying records in log order. A write is produced with acks=all (idempotent producer) and returns
// once the consumer has applied it, so the state a caller sees always contains its own write and is
// exactly what a rebuild from the log gives.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import {
  type ConsumerClient,
  createConsumerClient,
  IDLE_FETCH_WAIT_MS,
  createProducerClient,
  ensureTopics,
  type Kafka,
  type LocatingProducerClient,
  topicCleanupPolicy,
  topicConfig,
} from '../common/kafka/index.ts';
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
  /** create the topic when missing (default true; the app's composer creates every topic at start) */
  ensureTopic?: boolean;
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
  private producer?: LocatingProducerClient;
  private consumer?: ConsumerClient;
  /** highest offset applied to the state (-1 = none) */
  private applied = -1;
  private waiters: { offset: number; resolve: () => void }[] = [];
  private crashed: Error | undefined;
  private closed = false;

  constructor(opts: RegistryLogOptions) {
    this.opts = { replayTimeoutMs: 60_000, writeTimeoutMs: 30_000, ensureTopic: true, ...opts };
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
    // the registry's configuration (schemas/topics.ts): compacted, kept forever
    if (this.opts.ensureTopic) await ensureTopics(kafka, [topicConfig('schemas', topic)], logger);
    await this.assertCompacted();

    // a group of its own per instance: every registry reads the whole topic and commits nothing
    this.consumer = createConsumerClient(kafka, logger, {
      groupId: `schema-registry-${os.hostname()}-${process.pid}-${randomUUID()}`,
      topics: [topic],
      fromBeginning: true,
      lingerMs: 200,
      idleWaitMs: IDLE_FETCH_WAIT_MS,
      autoResolve: true,
      onCrash: (err, restart) => {
        if (!restart) this.crashed = err;
        logger.error({ err: err.message, restart }, 'schema registry consumer crashed');
      },
    });
    const [marks] = (await this.consumer.watermarks(topic)).values();
    const high = Number(marks?.high ?? 0n);
    const low = Number(marks?.low ?? 0n);

    this.producer = createProducerClient(kafka, { maxInFlightRequests: 1 });
    await this.producer.connect();

    await this.consumer.start(async (batch) => {
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
      await batch.heartbeat();
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
      policy = await topicCleanupPolicy(this.opts.kafka, topic);
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
        this.producer.sendLocated(
          records.map((r) => ({ topic: this.opts.topic, key: r.key, value: r.value, partition: 0 })),
        ),
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
    await Promise.allSettled([this.consumer?.stop(), this.producer?.close()]);
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
