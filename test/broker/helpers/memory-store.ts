// A minimal in-memory LogStore (no durability, no idempotence checks, no compaction) used to test the
// wire protocol in isolation from the storage layer.
import { randomBytes } from 'node:crypto';
import {
  type AppendResult,
  type LogStore,
  type PartitionStore,
  type ReadResult,
  type TopicConfig,
  type TopicInfo,
  TopicExistsError,
  UnknownTopicError,
} from '../../../services/kafka-broker/storage/api.ts';
import { KAFKA_DEFAULT_TOPIC_CONFIG } from '../../../services/kafka-broker/topic-config.ts';

class MemPartition implements PartitionStore {
  readonly topic: string;
  readonly partition: number;
  private readonly batches: { base: bigint; last: bigint; buf: Buffer; maxTs: bigint }[] = [];
  private next = 0n;
  private start = 0n;
  private readonly listeners = new Set<() => void>();
  constructor(topic: string, partition: number) {
    this.topic = topic;
    this.partition = partition;
  }
  async append(records: Buffer): Promise<AppendResult> {
    const base = this.next;
    let at = 0;
    while (at + 61 <= records.length) {
      const len = records.readInt32BE(at + 8);
      const buf = Buffer.from(records.subarray(at, at + 12 + len));
      const lastDelta = buf.readInt32BE(23);
      buf.writeBigInt64BE(this.next, 0);
      this.batches.push({ base: this.next, last: this.next + BigInt(lastDelta), buf, maxTs: buf.readBigInt64BE(35) });
      this.next += BigInt(lastDelta) + 1n;
      at += 12 + len;
    }
    for (const l of this.listeners) l();
    return { errorCode: 0, baseOffset: base, logAppendTimeMs: -1n, logStartOffset: this.start };
  }
  async read(fetchOffset: bigint, maxBytes: number): Promise<ReadResult> {
    if (fetchOffset > this.next || fetchOffset < this.start) {
      return { errorCode: 1, chunks: [], bytes: 0, highWatermark: this.next, logStartOffset: this.start };
    }
    const chunks: Buffer[] = [];
    let bytes = 0;
    for (const b of this.batches) {
      if (b.last < fetchOffset) continue;
      if (chunks.length > 0 && bytes + b.buf.length > maxBytes) break;
      chunks.push(b.buf);
      bytes += b.buf.length;
    }
    return { errorCode: 0, chunks, bytes, highWatermark: this.next, logStartOffset: this.start };
  }
  highWatermark(): bigint {
    return this.next;
  }
  logStartOffset(): bigint {
    return this.start;
  }
  async offsetForTimestamp(ts: bigint) {
    const b = this.batches.find((x) => x.maxTs >= ts);
    return b ? { offset: b.base, timestamp: b.maxTs } : null;
  }
  async deleteRecordsBefore(offset: bigint): Promise<bigint> {
    if (offset > this.start) this.start = offset;
    return this.start;
  }
  onAppend(listener: () => void): () => void {
    const l = () => listener();
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
}

export function memoryLogStore(): LogStore {
  const topics = new Map<string, { info: TopicInfo; parts: MemPartition[] }>();
  return {
    listTopics: () => [...topics.values()].map((t) => t.info),
    getTopic: (name) => topics.get(name)?.info,
    async createTopic(name, partitions, config, internal = false) {
      if (topics.has(name)) throw new TopicExistsError(name);
      const info: TopicInfo = {
        name,
        topicId: randomBytes(16),
        partitions,
        config: { ...KAFKA_DEFAULT_TOPIC_CONFIG, ...config } as TopicConfig,
        internal,
      };
      topics.set(name, { info, parts: Array.from({ length: partitions }, (_, i) => new MemPartition(name, i)) });
      return info;
    },
    async deleteTopic(name) {
      if (!topics.delete(name)) throw new UnknownTopicError(name);
    },
    async createPartitions(name, total) {
      const t = topics.get(name);
      if (!t) throw new UnknownTopicError(name);
      while (t.parts.length < total) t.parts.push(new MemPartition(name, t.parts.length));
      t.info = { ...t.info, partitions: total };
    },
    async alterTopicConfig(name, config) {
      const t = topics.get(name);
      if (!t) throw new UnknownTopicError(name);
      t.info = { ...t.info, config: { ...t.info.config, ...config } };
      return t.info;
    },
    partition: (topic, p) => topics.get(topic)?.parts[p],
    async runMaintenance() {},
    async close() {},
  };
}
