// The coordinator's persistence: the internal compacted topic `__consumer_offsets`.
// Writes go through one FIFO writer per partition that coalesces concurrent requests into one append
// (group commit), so the log order equals the order in which the coordinator enqueued them.

import type { LogStore, PartitionStore, TopicInfo } from '../storage/api.ts';
import {
  type BatchRecord,
  decodeGroupValue,
  decodeKey,
  decodeOffsetValue,
  decodeRecordBatches,
  encodeRecordBatches,
  type GroupValue,
  type OffsetValue,
} from './offsets-codec.ts';

export interface Logger {
  info(...a: any[]): void;
  warn(...a: any[]): void;
}

export interface WriteOutcome {
  /** Kafka error code to report for the records of this write (0 = durable) */
  errorCode: number;
}

/** Maps a storage append failure to the error a committer should see (as Kafka does). */
function mapAppendError(code: number): number {
  if (code === 0) return 0;
  if (code === 10) return 28; // MESSAGE_TOO_LARGE -> INVALID_COMMIT_OFFSET_SIZE
  return 15; // COORDINATOR_NOT_AVAILABLE: the client retries
}

interface PendingWrite {
  records: BatchRecord[];
  resolve: (o: WriteOutcome) => void;
}

export class PartitionWriter {
  private readonly store: PartitionStore;
  private readonly now: () => number;
  private readonly logger: Logger;
  private queue: PendingWrite[] = [];
  private running: Promise<void> | null = null;

  constructor(store: PartitionStore, now: () => number, logger: Logger) {
    this.store = store;
    this.now = now;
    this.logger = logger;
  }

  write(records: BatchRecord[]): Promise<WriteOutcome> {
    return new Promise((resolve) => {
      this.queue.push({ records, resolve });
      if (this.running === null) this.running = this.run();
    });
  }

  private async run(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      const records = batch.flatMap((w) => w.records);
      let errorCode = 0;
      try {
        const res = await this.store.append(await encodeRecordBatches(records, this.now()));
        if (res.errorCode !== 0) {
          this.logger.warn(
            {
              topic: this.store.topic,
              partition: this.store.partition,
              errorCode: res.errorCode,
              errorMessage: res.errorMessage,
            },
            'group coordinator: append to offsets topic failed',
          );
        }
        errorCode = mapAppendError(res.errorCode);
      } catch (err) {
        this.logger.warn(
          { err, topic: this.store.topic, partition: this.store.partition },
          'group coordinator: append to offsets topic threw',
        );
        errorCode = 15;
      }
      for (const w of batch) w.resolve({ errorCode });
    }
    this.running = null;
  }

  async drain(): Promise<void> {
    while (this.running !== null) await this.running;
  }
}

export type StoredOffset = OffsetValue;

export interface ReplayedGroup {
  meta: GroupValue | null;
  offsets: Map<string, Map<number, StoredOffset>>;
}

/** Kafka's partitionFor(groupId): abs(String.hashCode) % partitions. */
export function partitionForGroup(groupId: string, partitions: number): number {
  let h = 0;
  for (let i = 0; i < groupId.length; i++) h = (Math.imul(h, 31) + groupId.charCodeAt(i)) | 0;
  return (h & 0x7fffffff) % partitions;
}

export async function ensureOffsetsTopic(
  log: LogStore,
  name: string,
  partitions: number,
  logger: Logger,
): Promise<TopicInfo> {
  const existing = log.getTopic(name);
  if (existing) return existing;
  try {
    const info = await log.createTopic(
      name,
      partitions,
      // 100 MiB segments (Kafka's offsets.topic.segment.bytes) so compaction gets sealed segments to clean
      {
        cleanupPolicy: 'compact',
        maxMessageBytes: 16 * 1024 * 1024,
        retentionMs: -1,
        retentionBytes: -1,
        segmentBytes: 100 * 1024 * 1024,
      },
      true,
    );
    logger.info({ topic: name, partitions }, 'group coordinator: created offsets topic');
    return info;
  } catch (err) {
    // a concurrent creation is fine
    const again = log.getTopic(name);
    if (again) return again;
    throw err;
  }
}

const REPLAY_FETCH_BYTES = 4 * 1024 * 1024;

/** Reads one partition of the offsets topic from its start and folds it into `groups`. */
export async function replayPartition(
  store: PartitionStore,
  groups: Map<string, ReplayedGroup>,
  logger: Logger,
): Promise<number> {
  let offset = store.logStartOffset();
  const end = store.highWatermark();
  let applied = 0;
  const groupFor = (id: string): ReplayedGroup => {
    let g = groups.get(id);
    if (!g) {
      g = { meta: null, offsets: new Map() };
      groups.set(id, g);
    }
    return g;
  };
  while (offset < end) {
    const res = await store.read(offset, REPLAY_FETCH_BYTES);
    if (res.errorCode === 1 && res.logStartOffset > offset) {
      offset = res.logStartOffset;
      continue;
    }
    if (res.errorCode !== 0) {
      logger.warn(
        { topic: store.topic, partition: store.partition, offset, errorCode: res.errorCode },
        'group coordinator: replay read failed',
      );
      break;
    }
    let progressed = false;
    for (const chunk of res.chunks) {
      for (const batch of await decodeRecordBatches(chunk)) {
        if (batch.lastOffset < offset) continue;
        if (!batch.isControl) {
          for (const rec of batch.records) {
            if (rec.offset < offset || rec.key === null) continue;
            let key: ReturnType<typeof decodeKey>;
            try {
              key = decodeKey(rec.key);
            } catch {
              key = null;
            }
            if (key === null) continue;
            try {
              if (key.type === 'offset') {
                const g = groupFor(key.group);
                if (rec.value === null) {
                  const t = g.offsets.get(key.topic);
                  t?.delete(key.partition);
                  if (t && t.size === 0) g.offsets.delete(key.topic);
                } else {
                  let t = g.offsets.get(key.topic);
                  if (!t) {
                    t = new Map();
                    g.offsets.set(key.topic, t);
                  }
                  t.set(key.partition, decodeOffsetValue(rec.value));
                }
              } else if (rec.value === null) {
                const g = groups.get(key.group);
                if (g) {
                  g.meta = null;
                  // a group tombstone is written when the group is deleted: its offsets went with it
                  if (g.offsets.size === 0) groups.delete(key.group);
                }
              } else {
                groupFor(key.group).meta = decodeGroupValue(rec.value);
              }
              applied++;
            } catch (err) {
              logger.warn({ err, offset: rec.offset }, 'group coordinator: skipping undecodable offsets record');
            }
          }
        }
        offset = batch.lastOffset + 1n;
        progressed = true;
      }
    }
    if (!progressed) {
      logger.warn(
        { topic: store.topic, partition: store.partition, offset },
        'group coordinator: replay made no progress, stopping',
      );
      break;
    }
  }
  return applied;
}
