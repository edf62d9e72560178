// Duplicate suppression by business id (event_id, request_id, order_id) that stays correct under replay.
//
// The first message carrying an id *claims* it in Redis with its own log position as the value
// (`SET key <topic/partition/offset> NX GET EX horizon`). A later message with the same id finds a
// different position and is a duplicate; the claiming message itself, read again after a crash or by a
// replay, finds its own position and is kept. So the decision is a function of the log, not of timing:
// a batch re-read after a crash yields the same rows (and the same dedup token), and a duplicate counts
// once in every table fed by the processor. Claims expire after the dedup horizon
// (STREAMS_DEDUP_HORIZON_HOURS); a duplicate arriving later than that counts again.
import type { Redis } from 'ioredis';

export class Claims {
  private readonly redis: Redis;
  private readonly ttlSeconds: number;

  constructor(redis: Redis, horizonHours: number) {
    this.redis = redis;
    this.ttlSeconds = Math.max(1, Math.round(horizonHours * 3600));
  }

  /** For each (key, position), whether the message is the owner of its key (true) or a duplicate. */
  async claim(topic: string, items: { key: string; position: string }[]): Promise<boolean[]> {
    if (items.length === 0) return [];
    const pipe = this.redis.pipeline();
    for (const it of items) pipe.call('SET', `sd:streams:dedup:${topic}:${it.key}`, it.position, 'NX', 'GET', 'EX', String(this.ttlSeconds));
    const replies = (await pipe.exec()) ?? [];
    return replies.map(([err, prior], i) => {
      if (err) throw err;
      return prior === null || prior === items[i].position;
    });
  }
}
