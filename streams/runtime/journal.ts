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
//
// A chunk of several partitions (one small fetch written as one insert per table: runtime.ts) is
// recorded the same way in each of its partitions, the value naming the chunk (`<last> <chunk id>`), and
// its messages are kept beside it (`…:chunk:<id>`, for CHUNK_TTL_S or until every partition of it is
// committed), marked `written` once its writes and after-write hook are done. A re-read may meet the
// chunk in any one of its partitions — a fetch that returns its partitions differently, or a group member
// that owns only some of them after a rebalance. The member reading its lowest partition (the chunk's
// leader, who must read it: no partition of a chunk is committed before it is written) rebuilds it whole
// from the kept messages — same messages, same rows, same tokens — and marks it written; a member meeting
// it in another partition commits that partition once it is marked, and waits until then (so a
// partition's later chunks never run before the keyed state of this one is saved).
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { SourceMessage } from './types.ts';

/** how long the messages of a multi-partition chunk are kept when a commit of it failed (a re-read comes
 *  within a rebalance, or at the next start of a crashed processor) */
export const CHUNK_TTL_S = 7 * 24 * 3600;

/** One partition's run of messages in a chunk. */
export interface ChunkPart {
  partition: number;
  first: bigint;
  last: bigint;
  messages: SourceMessage[];
}

/** What the journal holds for a chunk that starts at an offset. */
export interface Recorded {
  last: bigint;
  /** set when the chunk spans several partitions: its id (journal.chunk() reads its messages) */
  chunk?: string;
}

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

  private chunkKey(topic: string, id: string) {
    return `${this.prefix}:${topic}:chunk:${id}`;
  }

  /** what was recorded for a batch that started at `first`, if one was begun and not committed */
  async recorded(topic: string, partition: number, first: bigint): Promise<Recorded | undefined> {
    return parseRecorded(await this.redis.hget(this.key(topic, partition), first.toString()));
  }

  /** `recorded` for the first offset of several partitions, in one round trip */
  async recordedMany(topic: string, starts: { partition: number; first: bigint }[]): Promise<(Recorded | undefined)[]> {
    const p = this.redis.pipeline();
    for (const s of starts) p.hget(this.key(topic, s.partition), s.first.toString());
    const res = (await p.exec()) ?? [];
    return res.map(([err, v]) => {
      if (err) throw err;
      return parseRecorded(v as string | null);
    });
  }

  /** record a batch before writing it; prunes the entries that start before `committed` (the partition's
   *  offset known to be committed; none when unknown) */
  async begin(topic: string, partition: number, first: bigint, last: bigint, committed?: bigint): Promise<void> {
    const tx = this.redis.multi();
    await this.prune(tx, topic, partition, committed);
    tx.hset(this.key(topic, partition), first.toString(), last.toString());
    await tx.exec();
  }

  /** record a chunk of several partitions and keep its messages, before writing it (pruning as `begin`) */
  async beginChunk(topic: string, id: string, parts: ChunkPart[], committed: Map<number, bigint>): Promise<void> {
    const tx = this.redis.multi();
    for (const p of parts) {
      await this.prune(tx, topic, p.partition, committed.get(p.partition));
      tx.hset(this.key(topic, p.partition), p.first.toString(), `${p.last} ${id}`);
    }
    const key = this.chunkKey(topic, id);
    tx.del(key);
    tx.hset(key, 'parts', encodeParts(parts));
    tx.expire(key, CHUNK_TTL_S);
    await tx.exec();
  }

  /** a multi-partition chunk: its parts and whether it was written; undefined when its messages are gone
   *  (expired, Redis lost them) */
  async chunk(topic: string, id: string): Promise<{ parts: ChunkPart[]; written: boolean } | undefined> {
    const [parts, written] = await this.redis.hmget(this.chunkKey(topic, id), 'parts', 'written');
    return parts === null ? undefined : { parts: decodeParts(parts), written: written !== null };
  }

  /** the chunk's writes and after-write hook are done (before any of its partitions is committed) */
  async chunkWritten(topic: string, id: string): Promise<void> {
    await this.redis.hset(this.chunkKey(topic, id), 'written', '1');
  }

  /** every partition of the chunk is committed: its messages are not needed any more */
  async chunkCommitted(topic: string, id: string): Promise<void> {
    await this.redis.del(this.chunkKey(topic, id));
  }

  private async prune(tx: ReturnType<Redis['multi']>, topic: string, partition: number, committed?: bigint) {
    if (committed === undefined) return;
    const key = this.key(topic, partition);
    const stale = (await this.redis.hkeys(key)).filter((f) => BigInt(f) < committed);
    if (stale.length) tx.hdel(key, ...stale);
  }

  /** forget every entry of a partition (the group's offsets were moved, e.g. after a replay swap) */
  async reset(topic: string, partitions: number[]): Promise<void> {
    if (partitions.length) await this.redis.del(...partitions.map((p) => this.key(topic, p)));
  }
}

function parseRecorded(v: string | null): Recorded | undefined {
  if (v === null) return undefined;
  const space = v.indexOf(' ');
  return space < 0 ? { last: BigInt(v) } : { last: BigInt(v.slice(0, space)), chunk: v.slice(space + 1) };
}

/** The id of a multi-partition chunk: its partitions' ranges (`p<partition>=<first>-<last>`, by partition);
 *  past CHUNK_ID_MAX characters their SHA-256 (the id is part of the insert tokens, which are bounded) */
export function chunkId(parts: readonly ChunkPart[]): string {
  const ranges = [...parts]
    .sort((a, b) => a.partition - b.partition)
    .map((p) => `p${p.partition}=${p.first}-${p.last}`)
    .join('.');
  return ranges.length <= CHUNK_ID_MAX ? ranges : `sha256=${createHash('sha256').update(ranges).digest('hex')}`;
}
export const CHUNK_ID_MAX = 300;

type Encoded = {
  p: number;
  f: string;
  l: string;
  m: { o: string; k: string | null; v: string | null; t: string; h: [string, string][] }[];
}[];

/** the parts as JSON: keys, values and headers as base64, so every byte comes back as it was */
export function encodeParts(parts: readonly ChunkPart[]): string {
  const out: Encoded = parts.map((p) => ({
    p: p.partition,
    f: p.first.toString(),
    l: p.last.toString(),
    m: p.messages.map((m) => ({
      o: m.offset,
      k: m.key ? m.key.toString('base64') : null,
      v: m.value ? m.value.toString('base64') : null,
      t: m.timestamp,
      h: Object.entries(m.headers).flatMap(([name, h]) =>
        h === undefined ? [] : [[name, Buffer.from(h).toString('base64')] as [string, string]],
      ),
    })),
  }));
  return JSON.stringify(out);
}

export function decodeParts(json: string): ChunkPart[] {
  return (JSON.parse(json) as Encoded).map((p) => ({
    partition: p.p,
    first: BigInt(p.f),
    last: BigInt(p.l),
    messages: p.m.map((m) => ({
      offset: m.o,
      key: m.k === null ? null : Buffer.from(m.k, 'base64'),
      value: m.v === null ? null : Buffer.from(m.v, 'base64'),
      timestamp: m.t,
      headers: Object.fromEntries(m.h.map(([name, h]) => [name, Buffer.from(h, 'base64')])),
    })),
  }));
}
