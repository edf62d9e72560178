// ConsumerClient over kafkajs: eachBatch with autoCommit off and auto-resolve off, so the runtime alone
// decides when the fetch position moves (resolve) and when offsets become durable (commit, after the
// ClickHouse write). Linger is the fetch's own: the broker holds a fetch up to `lingerMs` waiting for
// `minBytes`, so one fetch response per partition is one batch (split further by count in the runtime).
import type { Consumer, Kafka } from 'kafkajs';
import type { Logger } from '../../services/common/logger.ts';
import type { ConsumerClient, ConsumerClientOptions, SourceBatch } from './types.ts';

export function kafkajsClientFactory(kafka: Kafka, logger: Logger) {
  return (opts: ConsumerClientOptions): ConsumerClient => new KafkajsConsumerClient(kafka, logger, opts);
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
    const consumer = this.kafka.consumer({
      groupId: o.groupId,
      minBytes: o.minBytes,
      maxBytesPerPartition: o.maxBytesPerPartition,
      maxBytes: Math.max(o.maxBytesPerPartition * 4, 10 * 1024 * 1024),
      maxWaitTimeInMs: o.lingerMs,
      sessionTimeout: o.sessionTimeoutMs,
      rebalanceTimeout: Math.max(o.sessionTimeoutMs * 2, 10_000),
      heartbeatInterval: Math.max(500, Math.floor(o.sessionTimeoutMs / 10)),
      allowAutoTopicCreation: false,
      retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 5_000 },
    });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe({ topics: o.topics, fromBeginning: o.fromBeginning });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      // partitions are independent (state is keyed by session/order, which never spans partitions):
      // while one partition's chunk is being written, another's is decoded and deduplicated
      partitionsConsumedConcurrently: 3,
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
}
