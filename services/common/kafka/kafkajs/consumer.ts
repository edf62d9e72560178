// ConsumerClient over kafkajs: eachBatch with autoCommit off and (unless asked) auto-resolve off, so the
// caller alone decides when the fetch position moves (resolve) and when offsets become durable (commit;
// the streams runtime commits after the ClickHouse write). Linger is the fetch's own: the broker holds a fetch up to `lingerMs` waiting for
// `minBytes`, so one fetch response per partition is one batch (split further by count in the runtime).
import { fetchSiblings, setIdleFetchWait } from './swaps.ts';
import type { Consumer, Kafka } from 'kafkajs';
import type { Logger } from '../../logger.ts';
import type { ConsumerClient, ConsumerClientFactory, ConsumerClientOptions, SourceBatch } from '../client.ts';

/** A consumer-group client on `kafka` (not connected until start). */
export function createConsumerClient(kafka: Kafka, logger: Logger, opts: ConsumerClientOptions): ConsumerClient {
  return new KafkajsConsumerClient(kafka, logger, opts);
}

/** ConsumerClients on `kafka` (for the streams runtime's RuntimeDeps.createClient); `defaults` fill the
 *  options the caller leaves out. */
export function consumerClientFactory(
  kafka: Kafka,
  logger: Logger,
  defaults: Partial<ConsumerClientOptions> = {},
): ConsumerClientFactory {
  return (opts) => new KafkajsConsumerClient(kafka, logger, { ...defaults, ...opts });
}

/**
 * One live group member per client. kafkajs restarts a crashed consumer itself (`restartOnFailure`): its
 * crash handler disconnects, then arms a timer that builds a new ConsumerGroup and Runner on the same
 * consumer object. Two crashes close together (a broker restart: the runner's fetch loop and a late error
 * of the stopped runner's batch) arm two timers; the second start overwrites the first runner without
 * stopping it, and the leaked runner keeps its member in the group (it heartbeats and is assigned
 * partitions) while nothing consumes them. So kafkajs never restarts here (`restartOnFailure` → false):
 * a crash of the current consumer makes this client disconnect it and build a new consumer, once, after
 * a back-off; crashes of a consumer that is no longer current are ignored, and batches of a consumer
 * that is no longer current are inactive, do not heartbeat and cannot commit.
 */
class KafkajsConsumerClient implements ConsumerClient {
  private readonly kafka: Kafka;
  private readonly logger: Logger;
  private readonly opts: ConsumerClientOptions;
  /** the live consumer; undefined while stopped or between a crash and its replacement */
  private consumer: Consumer | undefined;
  private admin: ReturnType<Kafka['admin']> | undefined;
  /** start: one call per batch; startFetches: the batches of one fetch gathered (FetchGatherer) */
  private handler: ((batch: object, source: SourceBatch) => Promise<void>) | undefined;
  /** kafkajs' eachBatch concurrency */
  private concurrency = 1;
  private stopped = false;
  private paused = false;
  /** consecutive restarts without a successful fetch (back-off) */
  private restarts = 0;
  private restartTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(kafka: Kafka, logger: Logger, opts: ConsumerClientOptions) {
    this.kafka = kafka;
    this.logger = logger;
    this.opts = opts;
  }

  async start(onBatch: (batch: SourceBatch) => Promise<void>): Promise<void> {
    this.handler = (_, source) => onBatch(source);
    this.concurrency = this.opts.partitionsConsumedConcurrently ?? 1;
    this.stopped = false;
    await this.launch();
  }

  async startFetches(onFetch: (batches: SourceBatch[]) => Promise<void>): Promise<void> {
    const gatherer = new FetchGatherer(onFetch);
    this.handler = (batch, source) => gatherer.arrive(batch, source);
    // every batch of a fetch must be in eachBatch at once for the gatherer to see them all together
    this.concurrency = Math.max(this.opts.partitionsConsumedConcurrently ?? 1, GATHERED_PARTITIONS);
    this.stopped = false;
    await this.launch();
  }

  /** build, connect and run a new consumer as the current one */
  private async launch(): Promise<void> {
    const o = this.opts;
    const sessionTimeout = o.sessionTimeoutMs ?? 30_000;
    const maxBytesPerPartition = o.maxBytesPerPartition ?? 1024 * 1024;
    const consumer = this.kafka.consumer({
      groupId: o.groupId,
      minBytes: o.minBytes ?? 1,
      maxBytesPerPartition,
      maxBytes: Math.max(maxBytesPerPartition * 4, 10 * 1024 * 1024),
      maxWaitTimeInMs: o.lingerMs,
      sessionTimeout,
      rebalanceTimeout: Math.max(sessionTimeout * 2, 10_000),
      heartbeatInterval: o.heartbeatIntervalMs ?? Math.max(500, Math.floor(sessionTimeout / 10)),
      allowAutoTopicCreation: false,
      // this client restarts a crashed consumer itself (see above)
      retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 5_000, restartOnFailure: async () => false },
    });
    this.consumer = consumer;
    setIdleFetchWait(o.groupId, o.idleWaitMs);
    consumer.on(consumer.events.CRASH, (e) => this.crashed(consumer, e.payload.error));
    consumer.on(consumer.events.FETCH, () => {
      if (this.consumer === consumer) this.restarts = 0;
    });
    const current = () => this.consumer === consumer && !this.stopped;
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: o.topics, fromBeginning: o.fromBeginning });
    } catch (err) {
      if (this.consumer === consumer) this.consumer = undefined;
      await consumer.disconnect().catch(() => {});
      throw err;
    }
    const handler = this.handler;
    if (!handler) throw new Error('consumer client started without a batch handler');
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: o.autoResolve ?? false,
      partitionsConsumedConcurrently: this.concurrency,
      eachBatch: async ({ batch, resolveOffset, commitOffsetsIfNecessary, isRunning, isStale, heartbeat }) => {
        if (!current()) return;
        await handler(batch, {
          topic: batch.topic,
          partition: batch.partition,
          highWatermark: batch.highWatermark,
          messages: batch.messages.map((m) => ({
            offset: m.offset,
            key: m.key ?? null,
            value: m.value ?? null,
            timestamp: m.timestamp,
            headers: (m.headers ?? {}) as Record<string, Buffer | string | undefined>,
          })),
          resolve: (offset) => resolveOffset(offset),
          commit: async (nextOffset) => {
            if (!current())
              throw new Error(`consumer of ${o.groupId} was replaced: offset ${nextOffset} not committed`);
            await commitOffsetsIfNecessary({
              topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: nextOffset }] }],
            });
          },
          isActive: () => current() && isRunning() && !isStale(),
          heartbeat: async () => {
            if (current()) await heartbeat();
          },
        });
      },
    });
    if (this.stopped && this.consumer === consumer) {
      this.consumer = undefined;
      await consumer.disconnect().catch(() => {});
    } else if (this.paused && this.consumer === consumer) {
      consumer.pause(o.topics.map((topic) => ({ topic })));
    }
  }

  /** a consumer crashed (kafkajs has already disconnected it): replace it once if it is the current one */
  private crashed(consumer: Consumer, err: Error): void {
    if (this.consumer !== consumer || this.stopped) {
      this.logger.warn(
        { err: err.message, group: this.opts.groupId },
        'a replaced consumer crashed: ignored (its replacement runs)',
      );
      return;
    }
    this.consumer = undefined;
    const restart = isRetriable(err);
    this.opts.onCrash?.(err, restart);
    void consumer.disconnect().catch(() => {});
    if (restart) this.scheduleRestart(err);
    else this.logger.error({ err: err.message, group: this.opts.groupId }, 'consumer crashed on a non-retriable error');
  }

  private scheduleRestart(err: Error): void {
    if (this.restartTimer || this.stopped) return;
    const delay = Math.min(200 * 2 ** this.restarts, 5_000);
    this.restarts++;
    this.logger.warn(
      { err: err.message, group: this.opts.groupId, restartInMs: delay, restarts: this.restarts },
      'consumer crashed: replacing it with a new one',
    );
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopped || this.consumer) return;
      this.launch().catch((e) => this.scheduleRestart(e as Error));
    }, delay);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    const c = this.consumer;
    this.consumer = undefined;
    if (c) {
      try {
        await c.disconnect();
      } catch (err) {
        this.logger.warn({ err: (err as Error).message, group: this.opts.groupId }, 'consumer disconnect failed');
      }
    }
    if (this.admin) {
      await this.admin.disconnect().catch(() => {});
      this.admin = undefined;
    }
  }

  pause(): void {
    this.paused = true;
    this.consumer?.pause(this.opts.topics.map((topic) => ({ topic })));
  }

  resume(): void {
    this.paused = false;
    this.consumer?.resume(this.opts.topics.map((topic) => ({ topic })));
  }

  private async adminClient() {
    if (!this.admin) {
      this.admin = this.kafka.admin();
      await this.admin.connect();
    }
    return this.admin;
  }

  async committed(topic: string): Promise<Map<number, bigint>> {
    const admin = await this.adminClient();
    const res = await admin.fetchOffsets({ groupId: this.opts.groupId, topics: [topic] });
    const out = new Map<number, bigint>();
    for (const t of res) for (const p of t.partitions) out.set(p.partition, BigInt(p.offset));
    return out;
  }

  async highWatermarks(topic: string): Promise<Map<number, bigint>> {
    const admin = await this.adminClient();
    const res = await admin.fetchTopicOffsets(topic);
    return new Map(res.map((p) => [p.partition, BigInt(p.high)]));
  }

  async watermarks(topic: string): Promise<Map<number, { low: bigint; high: bigint }>> {
    const admin = await this.adminClient();
    const res = await admin.fetchTopicOffsets(topic);
    return new Map(res.map((p) => [p.partition, { low: BigInt(p.low), high: BigInt(p.high) }]));
  }
}

/** kafkajs' eachBatch concurrency of `startFetches`: a fetch with more non-empty partitions than this is
 *  handed over in parts (after GATHER_WAIT_MS) */
const GATHERED_PARTITIONS = 256;

/** how long the batches that arrived wait for a sibling that has not (kafkajs skips a batch's eachBatch
 *  while the consumer stops) */
const GATHER_WAIT_MS = 200;

/**
 * Gathers the eachBatch calls of one fetch (fetchSiblings: kafkajs calls eachBatch once per partition, all
 * of them at once when its concurrency allows) into one call of the handler; every call waits for it.
 */
class FetchGatherer {
  private readonly onFetch: (batches: SourceBatch[]) => Promise<void>;
  private readonly pending = new Map<readonly object[], Gathering>();
  /** sibling sets handed over already: a latecomer of one goes alone */
  private readonly handed = new WeakSet<readonly object[]>();

  constructor(onFetch: (batches: SourceBatch[]) => Promise<void>) {
    this.onFetch = onFetch;
  }

  arrive(batch: object, source: SourceBatch): Promise<void> {
    const siblings = fetchSiblings(batch);
    if (!siblings || siblings.length < 2 || this.handed.has(siblings)) return this.onFetch([source]);
    let g = this.pending.get(siblings);
    if (!g) {
      const gathering: Gathering = { sources: [], timer: undefined, done: undefined as never, release: () => {} };
      gathering.done = new Promise<void>((resolve, reject) => {
        gathering.release = () => {
          this.pending.delete(siblings);
          this.handed.add(siblings);
          clearTimeout(gathering.timer);
          this.onFetch(gathering.sources).then(resolve, reject);
        };
      });
      gathering.timer = setTimeout(gathering.release, GATHER_WAIT_MS);
      this.pending.set(siblings, gathering);
      g = gathering;
    }
    g.sources.push(source);
    if (g.sources.length === siblings.length) g.release();
    return g.done;
  }
}

interface Gathering {
  sources: SourceBatch[];
  timer: ReturnType<typeof setTimeout> | undefined;
  done: Promise<void>;
  release: () => void;
}

/** kafkajs' own rule for restarting after a crash: retries exhausted, or a retriable original cause */
function isRetriable(err: Error): boolean {
  let cause: unknown = err;
  while ((cause as { cause?: unknown }).cause) cause = (cause as { cause: unknown }).cause;
  return err.name === 'KafkaJSNumberOfRetriesExceeded' || (cause as { retriable?: boolean }).retriable === true;
}

/**
 * Commit offsets for a consumer group that has no running member — kafkajs' `admin.setOffsets`, whose
 * helper consumer joins the group, seeks (the seeks are committed on its first fetch) and stops at that
 * fetch. The admin's helper keeps the default fetch wait (5 s, on a paused topic always spent in full);
 * this one waits 20 ms, which took ~10 s off every replay (start offsets + the swap).
 */
export async function setGroupOffsets(
  kafka: Kafka,
  admin: ReturnType<Kafka['admin']>,
  groupId: string,
  topic: string,
  offsets: Map<number, bigint>,
): Promise<void> {
  const described = await admin.describeGroups([groupId]);
  const state = described.groups[0]?.state;
  if (state && state !== 'Empty' && state !== 'Dead' && state !== 'Unknown') {
    throw new Error(`the consumer group ${groupId} must have no running instances, current state: ${state}`);
  }
  const consumer = kafka.consumer({
    groupId,
    maxWaitTimeInMs: 20,
    allowAutoTopicCreation: false,
    retry: { retries: 5 },
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      consumer.on(consumer.events.FETCH, () => consumer.stop().then(resolve, reject));
      consumer.on(consumer.events.CRASH, (e) => reject(e.payload.error));
      consumer.run({ eachBatchAutoResolve: false, eachBatch: async () => {} }).catch(reject);
      // this consumer reads nothing: its first fetch commits the seeks
      consumer.pause([{ topic }]);
      for (const [partition, offset] of offsets) consumer.seek({ topic, partition, offset: offset.toString() });
    });
  } finally {
    await consumer.disconnect().catch(() => {});
  }
  const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
  for (const p of committed[0]?.partitions ?? []) {
    const want = offsets.get(p.partition);
    if (want !== undefined && BigInt(p.offset) !== want)
      throw new Error(`setting offsets of ${groupId} failed: partition ${p.partition} is at ${p.offset}, not ${want}`);
  }
}
