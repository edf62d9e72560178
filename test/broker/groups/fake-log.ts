// In-memory LogStore/PartitionStore for unit tests of the coordinator state machine only.
import type {
  AppendResult,
  LogStore,
  PartitionStore,
  ReadResult,
  TopicConfig,
  TopicInfo,
} from '../../../services/kafka-broker/storage/api.ts';
import { lastOffsetOf, readBatchHeader, splitBatches } from '../../../services/kafka-broker/storage/record-batch.ts';

const DEFAULT_CONFIG: TopicConfig = {
  cleanupPolicy: 'delete',
  retentionMs: -1,
  retentionBytes: -1,
  segmentBytes: 1 << 30,
  segmentMs: 604800000,
  deleteRetentionMs: 86400000,
  minCompactionLagMs: 0,
  maxMessageBytes: 1048588,
  messageTimestampType: 'CreateTime',
};

export class FakePartition implements PartitionStore {
  readonly topic: string;
  readonly partition: number;
  batches: Buffer[] = [];
  next = 0n;
  failNext = 0;
  appendDelayMs = 0;
  private listeners = new Set<() => void>();
  constructor(topic: string, partition: number) {
    this.topic = topic;
    this.partition = partition;
  }
  async append(records: Buffer): Promise<AppendResult> {
    if (this.appendDelayMs > 0) await new Promise((r) => setTimeout(r, this.appendDelayMs));
    if (this.failNext > 0) {
      this.failNext--;
      return { errorCode: 2, baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset: 0n };
    }
    const base = this.next;
    for (const slice of splitBatches(records)) {
      const h = readBatchHeader(slice, 0);
      const copy = Buffer.from(slice);
      copy.writeBigInt64BE(this.next, 0);
      this.next += lastOffsetOf(h) - h.baseOffset + 1n;
      this.batches.push(copy);
    }
    for (const l of this.listeners) l();
    return { errorCode: 0, baseOffset: base, logAppendTimeMs: -1n, logStartOffset: 0n };
  }
  async read(fetchOffset: bigint, maxBytes: number): Promise<ReadResult> {
    const chunks: Buffer[] = [];
    let bytes = 0;
    for (const b of this.batches) {
      const base = b.readBigInt64BE(0);
      const last = base + BigInt(b.readInt32BE(23));
      if (last < fetchOffset) continue;
      if (chunks.length > 0 && bytes + b.length > maxBytes) break;
      chunks.push(b);
      bytes += b.length;
    }
    return { errorCode: 0, chunks, bytes, highWatermark: this.next, logStartOffset: 0n };
  }
  highWatermark(): bigint {
    return this.next;
  }
  logStartOffset(): bigint {
    return 0n;
  }
  async offsetForTimestamp(): Promise<{ offset: bigint; timestamp: bigint } | null> {
    return null;
  }
  async deleteRecordsBefore(offset: bigint): Promise<bigint> {
    return offset;
  }
  onAppend(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export class FakeLogStore implements LogStore {
  topics = new Map<string, { info: TopicInfo; parts: FakePartition[] }>();
  listTopics(): TopicInfo[] {
    return [...this.topics.values()].map((t) => t.info);
  }
  getTopic(name: string): TopicInfo | undefined {
    return this.topics.get(name)?.info;
  }
  async createTopic(
    name: string,
    partitions: number,
    config?: Partial<TopicConfig>,
    internal = false,
  ): Promise<TopicInfo> {
    if (this.topics.has(name)) throw new Error('exists');
    const info: TopicInfo = {
      name,
      topicId: Buffer.alloc(16),
      partitions,
      config: { ...DEFAULT_CONFIG, ...config },
      internal,
    };
    const parts = Array.from({ length: partitions }, (_, i) => new FakePartition(name, i));
    this.topics.set(name, { info, parts });
    return info;
  }
  async deleteTopic(name: string): Promise<void> {
    this.topics.delete(name);
  }
  async createPartitions(): Promise<void> {}
  async alterTopicConfig(name: string): Promise<TopicInfo> {
    return this.topics.get(name)!.info;
  }
  partition(topic: string, partition: number): PartitionStore | undefined {
    return this.topics.get(topic)?.parts[partition];
  }
  fake(topic: string, partition = 0): FakePartition {
    return this.topics.get(topic)!.parts[partition];
  }
  async runMaintenance(): Promise<void> {}
  async close(): Promise<void> {}
}
