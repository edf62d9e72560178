// event_id deduplication, the fast path in Redis: a client retry of an event that Kafka already
// acknowledged is not produced again. The sinks are idempotent by event_id as well, so this layer only
// has to be right in one direction: it must never mark an event as seen that Kafka did not store.
//
// Per request, two round trips over the whole batch:
//   check   before producing: one MGET; a key holding "1" means Kafka already stored that event
//           (duplicate, not produced); anything else is produced.
//   commit  after Kafka acknowledged: one Lua call setting every produced key to "1" for the horizon.
// A key is only ever written after the acknowledgement, so a failed or crashed attempt leaves nothing
// behind and its retry is produced. Two attempts in flight at once (a client retrying before the first
// answer) are both produced; the sinks drop the second copy by event_id.
// Keys are `dedup:{<store>}:<event_id>`: the braces are a Redis Cluster hash tag, so one store's keys
// share a slot and the multi-key MGET and script stay valid on a cluster.
import type { Redis } from 'ioredis';

const COMMIT = `
for _, key in ipairs(KEYS) do
  redis.call('SET', key, '1', 'PX', ARGV[1])
end
return #KEYS`;

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

type ScriptRunner = (numKeys: number, ...args: (string | number)[]) => Promise<unknown>;

export interface DedupOptions {
  redis: Redis;
  horizonMs: number;
  /** give up on Redis after this long and fail open */
  timeoutMs?: number;
  onError?: (op: 'check' | 'commit', err: Error) => void;
}

export function dedupKey(storeId: string, eventId: string): string {
  return `dedup:{${storeId}}:${eventId}`;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`redis ${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

export function createEventDedup(opts: DedupOptions): EventDedup {
  const { redis } = opts;
  const timeoutMs = opts.timeoutMs ?? 500;
  const onError = opts.onError ?? (() => {});
  // ioredis: EVALSHA with a transparent EVAL fallback on NOSCRIPT
  if (!(redis as unknown as Record<string, unknown>).beaconDedupCommit) redis.defineCommand('beaconDedupCommit', { lua: COMMIT });
  const commitScript = (redis as unknown as Record<'beaconDedupCommit', ScriptRunner>).beaconDedupCommit.bind(redis);

  return {
    async check(storeId, eventIds) {
      const keys = eventIds.map((id) => dedupKey(storeId, id));
      let states: CheckState[];
      let checked = true;
      try {
        const values = await withTimeout(redis.mget(keys), timeoutMs, 'check');
        states = values.map((v) => (v === '1' ? 'duplicate' : 'new'));
      } catch (err) {
        onError('check', err as Error);
        states = keys.map(() => 'new');
        checked = false;
      }
      const produced = keys.filter((_, i) => states[i] === 'new');
      return {
        states,
        checked,
        async commit() {
          if (produced.length === 0) return;
          try {
            await withTimeout(commitScript(produced.length, ...produced, opts.horizonMs), timeoutMs, 'commit');
          } catch (err) {
            // the events are stored; a retry would only be produced again and dropped by the sinks
            onError('commit', err as Error);
          }
        },
      };
    },
  };
}
