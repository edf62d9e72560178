// event_id deduplication, the fast path in Redis: a client retry of an event that Kafka already
// acknowledged is not produced again. The sinks are idempotent by event_id as well, so this layer only
// has to be right in one direction: it must never mark an event as seen that Kafka did not store.
//
// Marks live in per-store sets of event ids, one set per time bucket of half the horizon:
// `dedup:{<store>}:bucket:<n>` holds the ids committed during bucket n and expires when bucket n + 3
// begins. A check reads the current bucket and the two before it, so an id is recognised for at least the
// horizon after its commit and at most 1.5× the horizon. One variadic SADD per request instead of a SET
// with its own TTL per event halves Redis' CPU per event (no per-key expiry, one command and one AOF entry
// per request); the price is that a whole bucket expires at once, which is why the local stack runs Redis
// with lazyfree-lazy-expire (a large set is freed off Redis' main thread) — set it on any Redis used here.
//
// Per request, two round trips over the whole batch, each one Lua script:
//   check   before producing: SMISMEMBER on the three buckets; an id in any of them means Kafka
//           already stored that event (duplicate, not produced); anything else is produced.
//   commit  after Kafka acknowledged: SADD of every produced id to the current bucket + PEXPIREAT.
// The ids travel once per script as one space-separated argument (event ids are validated ULIDs or
// UUIDs: no spaces), and the check answers only the positions it found, almost always none. Sent as
// one argument per id to three SMISMEMBERs, the ids cost the intake's main thread ≈ 2 µs per event in
// ioredis' command strings and the 300-integer replies; with the scripts ≈ 0.7 µs, for ≈ 1 µs more
// of Redis' CPU: ≈ 1–2 µs less per event in all (bench/beacon.ts, docs/beacon.md). A script that splits into another count than it was
// given fails the call, which fails open.
// An id is only ever written after the acknowledgement, so a failed or crashed attempt leaves nothing
// behind and its retry is produced. Two attempts in flight at once (a client retrying before the first
// answer) are both produced; the sinks drop the second copy by event_id.
// The braces in the keys are a Redis Cluster hash tag: one store's buckets share a slot, so the
// scripts' keys stay valid on a cluster.
import type { Redis } from 'ioredis';

/** what the check said about one event */
export type CheckState = 'new' | 'duplicate';

export interface DedupCheck {
  /** per event, in the order given */
  states: CheckState[];
  /** false when Redis could not be asked: everything is produced (fail open; the sinks dedup) */
  checked: boolean;
  /** record that Kafka acknowledged the produced events (those not `duplicate`) */
  commit(): Promise<void>;
}

export interface EventDedup {
  check(storeId: string, eventIds: readonly string[]): Promise<DedupCheck>;
}

export interface DedupOptions {
  redis: Redis;
  horizonMs: number;
  /** give up on Redis after this long and fail open */
  timeoutMs?: number;
  onError?: (op: 'check' | 'commit', err: Error) => void;
  /** the clock that picks the bucket (tests) */
  now?: () => number;
}

/** the bucket keys at `nowMs`: where commits go, what a check reads, and when the written bucket expires */
export function dedupBuckets(
  storeId: string,
  horizonMs: number,
  nowMs: number,
): { write: string; read: string[]; expireAtMs: number } {
  const size = Math.ceil(horizonMs / 2);
  const n = Math.floor(nowMs / size);
  const key = (b: number) => `dedup:{${storeId}}:bucket:${b}`;
  return { write: key(n), read: [key(n), key(n - 1), key(n - 2)], expireAtMs: (n + 3) * size };
}

/** the ids of the last argument (split at each space by plain search: cheaper in Redis than a pattern) */
const SPLIT = `local s, ids, p = ARGV[#ARGV], {}, 1
while true do
  local q = string.find(s, ' ', p, true)
  if not q then ids[#ids + 1] = string.sub(s, p) break end
  ids[#ids + 1] = string.sub(s, p, q - 1)
  p = q + 1
end`;

/** KEYS: the buckets a check reads; ARGV: the ids joined by spaces → [id count, 1-based positions found…] */
const CHECK_SCRIPT = `${SPLIT}
local found = {#ids}
for k = 1, #KEYS do
  for i = 1, #ids, 4000 do
    local r = redis.call('SMISMEMBER', KEYS[k], unpack(ids, i, math.min(i + 3999, #ids)))
    for j = 1, #r do if r[j] == 1 then found[#found + 1] = i + j - 1 end end
  end
end
return found`;

/** KEYS[1]: the bucket written; ARGV: its expiry (epoch ms), the ids joined by spaces → id count */
const COMMIT_SCRIPT = `${SPLIT}
for i = 1, #ids, 4000 do redis.call('SADD', KEYS[1], unpack(ids, i, math.min(i + 3999, #ids))) end
redis.call('PEXPIREAT', KEYS[1], ARGV[1])
return #ids`;

type WithScripts = Redis & {
  beaconDedupCheck(...args: (string | number)[]): Promise<number[]>;
  beaconDedupCommit(key: string, expireAtMs: string, ids: string): Promise<number>;
};

function scripts(redis: Redis): WithScripts {
  const r = redis as WithScripts;
  if (typeof r.beaconDedupCheck !== 'function') r.defineCommand('beaconDedupCheck', { lua: CHECK_SCRIPT });
  if (typeof r.beaconDedupCommit !== 'function') {
    r.defineCommand('beaconDedupCommit', { lua: COMMIT_SCRIPT, numberOfKeys: 1 });
  }
  return r;
}

/** an id holding a space (never a valid event id) splits into more: the call fails, and so fails open */
function expectCount(count: number, eventIds: readonly string[]): void {
  if (count !== eventIds.length) throw new Error(`dedup script split ${count} ids, ${eventIds.length} were sent`);
}

/** per id, whether it is marked as stored (in any bucket a check reads at `nowMs`) */
export async function markedEventIds(
  redis: Redis,
  storeId: string,
  eventIds: readonly string[],
  horizonMs: number,
  nowMs = Date.now(),
): Promise<boolean[]> {
  if (eventIds.length === 0) return [];
  const { read } = dedupBuckets(storeId, horizonMs, nowMs);
  const [count, ...found] = await scripts(redis).beaconDedupCheck(read.length, ...read, eventIds.join(' '));
  expectCount(count, eventIds);
  const marked = new Array<boolean>(eventIds.length).fill(false);
  for (const position of found) marked[position - 1] = true;
  return marked;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`redis ${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

export function createEventDedup(opts: DedupOptions): EventDedup {
  const { redis, horizonMs } = opts;
  const timeoutMs = opts.timeoutMs ?? 500;
  const onError = opts.onError ?? (() => {});
  const now = opts.now ?? Date.now;

  return {
    async check(storeId, eventIds) {
      let states: CheckState[];
      let checked = true;
      try {
        const marked = await withTimeout(
          markedEventIds(redis, storeId, eventIds, horizonMs, now()),
          timeoutMs,
          'check',
        );
        states = marked.map((m) => (m ? 'duplicate' : 'new'));
      } catch (err) {
        onError('check', err as Error);
        states = eventIds.map(() => 'new');
        checked = false;
      }
      const produced = eventIds.filter((_, i) => states[i] === 'new');
      return {
        states,
        checked,
        async commit() {
          if (produced.length === 0) return;
          const { write, expireAtMs } = dedupBuckets(storeId, horizonMs, now());
          try {
            const count = await withTimeout(
              scripts(redis).beaconDedupCommit(write, String(expireAtMs), produced.join(' ')),
              timeoutMs,
              'commit',
            );
            expectCount(count, produced);
          } catch (err) {
            // the events are stored; a retry would only be produced again and dropped by the sinks
            onError('commit', err as Error);
          }
        },
      };
    },
  };
}
