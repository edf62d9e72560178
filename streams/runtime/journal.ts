// The batch journal: makes batch boundaries deterministic across crashes.
//
// insert_deduplication_token only protects a re-insert if the retried batch has exactly the same
// boundaries as the first attempt. After a crash between insert and commit, a fresh fetch may return
// more (or fewer) messages than the lost attempt saw, so the runtime records each batch's [first, last]
// offsets in Redis *before* writing it; when it meets `first` again it cuts the batch at the recorded
// `last`, producing the same rows under the same token, which ClickHouse drops. Entries below the
// offset this process last saw *committed* are pruned on the next write — not below the chunk being
// begun: kafkajs fetches on from the offsets the runtime resolved even when a commit failed (the group
// coordinator unreachable), so a chunk can begin while the ones before it are still uncommitted, and a
// re-joined consumer reads those again from the committed offset. One hash per (consumer group, topic,
// partition): field = first offset, value = last offset.
import type { Redis } from 'ioredis';

export class BatchJournal {
  private readonly redis: Redis;
  private readonly prefix: string;

  constructor(redis: Redis, groupId: string) {
    this.redis = redis;
    this.prefix = `sd:streams:journal:${groupId}`;
  }

  private key(topic: string, partition: number) {
    return `${this.prefix}:${topic}:${partition}`;
  }

  /** the recorded last offset of a batch that started at `first`, if one was begun and not committed */
  async recordedEnd(topic: string, partition: number, first: bigint): Promise<bigint | undefined> {
    const v = await this.redis.hget(this.key(topic, partition), first.toString());
    return v === null ? undefined : BigInt(v);
  }

  /** record a batch before writing it; prunes the entries that start before `committed` (the partition's
   *  offset known to be committed; none when unknown) */
  async begin(topic: string, partition: number, first: bigint, last: bigint, committed?: bigint): Promise<void> {
    const key = this.key(topic, partition);
    const fields = committed === undefined ? [] : await this.redis.hkeys(key);
    const stale = fields.filter((f) => committed !== undefined && BigInt(f) < committed);
    const tx = this.redis.multi();
    if (stale.length) tx.hdel(key, ...stale);
    tx.hset(key, first.toString(), last.toString());
    await tx.exec();
  }

  /** forget every entry of a partition (the group's offsets were moved, e.g. after a replay swap) */
  async reset(topic: string, partitions: number[]): Promise<void> {
    if (partitions.length) await this.redis.del(...partitions.map((p) => this.key(topic, p)));
  }
}
