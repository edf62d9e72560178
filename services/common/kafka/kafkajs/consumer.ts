// ConsumerClient over kafkajs: eachBatch with autoCommit off and (unless asked) auto-resolve off, so the
// caller alone decides when the fetch position moves (resolve) and when offsets become durable (commit;
// the streams runtime commits after the ClickHouse write). Linger is the fetch's own: the broker holds a fetch up to `lingerMs` waiting for
// `minBytes`, so one fetch response per partition is one batch (split further by count in the runtime).
import './swaps.ts';
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

class KafkajsConsumerClient implements ConsumerClient {
  private readonly kafka: Kafka;
  private readonly logger: Logger;
  private readonly opts: ConsumerClientOptions;
  private consumer: Consumer | undefined;
  private admin: ReturnType<Kafka['admin']> | undefined;

  constructor(kafka: Kafka, logger: Logger, opts: ConsumerClientOptions) {
    this.kafka = kafka;
    this.logger = logger;
    this.opts = opts;
  }

  async start(onBatch: (batch: SourceBatch) => Promise<void>): Promise<void> {
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
      retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 5_000 },
    });
    this.consumer = consumer;
    const onCrash = o.onCrash;
    if (onCrash) consumer.on(consumer.events.CRASH, (e) => onCrash(e.payload.error, e.payload.restart));
    await consumer.connect();
    await consumer.subscribe({ topics: o.topics, fromBeginning: o.fromBeginning });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: o.autoResolve ?? false,
      partitionsConsumedConcurrently: o.partitionsConsumedConcurrently ?? 1,
      eachBatch: async ({ batch, resolveOffset, commitOffsetsIfNecessary, isRunning, isStale, heartbeat }) => {
        await onBatch({
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
            await commitOffsetsIfNecessary({
              topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: nextOffset }] }],
            });
          },
          isActive: () => isRunning() && !isStale(),
          heartbeat,
        });
      },
    });
  }

  async stop(): Promise<void> {
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
    this.consumer?.pause(this.opts.topics.map((topic) => ({ topic })));
  }

  resume(): void {
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
