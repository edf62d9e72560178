// Duplicate suppression by business id (event_id, request_id, order_id) that stays correct under replay.
//
// The first message carrying an id *claims* it in Redis with its own log position as the value; a
// chunk's claims run as one script call, so the app's thread builds and parses one command per chunk
// instead of one per message. A later message with the same id finds a different position and is a
// duplicate; the claiming message itself, read again after a crash or by a replay, finds its own position
// and is kept. So the decision is a function of the log, not of timing: a batch re-read after a crash
// yields the same rows (and the same dedup token), and a duplicate counts once in every table fed by the
// processor.
//
// Claims live in hashes, one per topic, scope (the store) and time bucket of half the dedup horizon
// (STREAMS_DEDUP_HORIZON_HOURS): `sd:streams:claims:<topic>:{<scope>}:<n>`, field = the id, value =
// `<partition>/<offset>`. A claim is written to the current bucket and looked up in it and the two before,
// and a bucket expires as a whole when bucket n + 3 begins: an id is recognised for at least the horizon
// and at most 1.5× it; a duplicate arriving later than that counts again. A key of its own per claim
// (`SET … NX GET EX`, before 2026-11-27) cost Redis 222 B (key, value, expiry entry); a hash field costs
// 103 B (`used_memory` over 200 000 claims; docs/streams.md).
//
// When Redis loses its data (a FLUSHALL, a new instance, a restore without the AOF) the claims are gone,
// and a client retry of an event stored before would be claimed afresh. The claim pipeline therefore
// also keeps a marker key per topic (`sd:streams:claims-epoch:<topic>`, no expiry, a value unique per
// creation): finding it missing, or holding another value than the one this process knew (a concurrent
// partition or another replica re-created it first), means Redis forgot, and for one dedup horizon from then every fresh claim is checked against the processor's
// ledger — the raw table that holds every owned id with its log position (`events_raw.event_id`,
// `requests_raw.request_id`). An id found there at another position is a duplicate, and its Redis claim
// is restored to that position, so the decision stays a function of the log.
import type { Redis } from 'ioredis';
import { assertIdentifier, type Db } from '../../clickhouse/client.ts';
import type { Logger } from '../../services/common/logger.ts';

/** The raw table in which a processor stores every id it owns, with the row's log position (`_partition`,
 *  `_offset`) — read only when Redis lost what it knew: the dedup claims (here) or a processor's keyed
 *  state (`ctx.ledgerRows`, runtime/ledger.ts). */
export interface ProcessorLedger {
  table: string;
  /** the id column (the part of `dedupKey` after `<store_id>:`) */
  idColumn: string;
  /** event-time column, to bound the lookup (to the dedup horizon; to the ids' own times) */
  timeColumn: string;
  /** the columns `ctx.ledgerRows` returns (keyed state rebuilt from them) */
  columns?: string[];
}

/**
 * every claim of a chunk. KEYS: per scope, its current bucket and the two before; ARGV: the current
 * bucket's expiry (epoch ms), then per claim the 0-based offset of its scope's keys, its id and its
 * position. Answers the prior position per claim (nil = claimed now).
 */
const CLAIM_SCRIPT = `
local out, written, n = {}, {}, 0
for i = 2, #ARGV, 3 do
  local k, id = tonumber(ARGV[i]), ARGV[i + 1]
  local prior = redis.call('HGET', KEYS[k + 1], id)
  if not prior then prior = redis.call('HGET', KEYS[k + 2], id) end
  if not prior then prior = redis.call('HGET', KEYS[k + 3], id) end
  if not prior then
    redis.call('HSET', KEYS[k + 1], id, ARGV[i + 2])
    written[k + 1] = true
  end
  n = n + 1
  out[n] = prior
end
for key in pairs(written) do redis.call('PEXPIREAT', KEYS[key], ARGV[1]) end
return out`;

type ClaimRunner = (numKeys: number, ...args: string[]) => Promise<(string | null)[]>;

// v2 since the claims moved into bucket hashes: a process of the new layout finds no marker, takes it for
// a loss, and verifies fresh claims against the ledger for one horizon (the old claims are not read)
const epochKey = (topic: string) => `sd:streams:claims-epoch:v2:${topic}`;
const verifyUntilKey = (topic: string) => `sd:streams:claims-verify-until:${topic}`;

export interface ClaimItem {
  /** `<store_id>:<id>` */
  key: string;
  /** `<topic>/<partition>/<offset>` */
  position: string;
}

export class Claims {
  private readonly redis: Redis;
  private readonly ttlSeconds: number;
  private readonly ledger?: { db: Db; spec: ProcessorLedger; logger: Logger };
  /** ms until which fresh claims are verified against the ledger (0 = not verifying) */
  private verifyUntil = 0;
  private verifyLoaded = false;
  /** per topic: the first look at the epoch marker, done before any claim of this process */
  private readonly epochChecked = new Map<string, Promise<void>>();
  /** per topic: the epoch marker's value this process last saw (a different one means Redis forgot) */
  private readonly epochs = new Map<string, string>();
  /** the verification window being (re)started after a loss; every claim waits for it */
  private windowLoading: Promise<void> = Promise.resolve();

  constructor(redis: Redis, horizonHours: number, ledger?: { db: Db; spec: ProcessorLedger; logger: Logger }) {
    this.redis = redis;
    this.ttlSeconds = Math.max(1, Math.round(horizonHours * 3600));
    this.ledger = ledger;
    // ioredis: EVALSHA with a transparent EVAL fallback on NOSCRIPT
    if (!(redis as unknown as Record<string, unknown>).streamsClaimInBuckets)
      redis.defineCommand('streamsClaimInBuckets', { lua: CLAIM_SCRIPT });
    if (ledger) {
      assertIdentifier(ledger.spec.table);
      assertIdentifier(ledger.spec.idColumn);
    }
  }

  /** For each (key, position), whether the message is the owner of its key (true) or a duplicate. */
  async claim(topic: string, items: ClaimItem[]): Promise<boolean[]> {
    if (items.length === 0) return [];
    if (this.ledger) await this.checkEpochOnce(topic);
    const pipe = this.redis.pipeline();
    const mine = newEpoch();
    if (this.ledger) pipe.call('SET', epochKey(topic), mine, 'NX', 'GET');
    const buckets = this.buckets(Date.now());
    const keys: string[] = [];
    const scopes = new Map<string, number>();
    const args: string[] = [String(buckets.expireAtMs)];
    const positions = items.map((it) => shortPosition(topic, it.position));
    items.forEach((it, i) => {
      const { scope, id } = splitKey(it.key);
      let k = scopes.get(scope);
      if (k === undefined) {
        k = keys.length;
        scopes.set(scope, k);
        for (const n of buckets.read) keys.push(bucketKey(topic, scope, n));
      }
      args.push(String(k), id, positions[i]);
    });
    (pipe as unknown as Record<'streamsClaimInBuckets', ClaimRunner>).streamsClaimInBuckets(
      keys.length,
      ...keys,
      ...args,
    );
    const replies = (await pipe.exec()) ?? [];
    for (const [err] of replies) if (err) throw err;
    const epoch = this.ledger ? ((replies.shift() as [Error | null, unknown])[1] as string | null) : undefined;
    const prior = (replies[0][1] as (string | null)[]).map((v) => v ?? null);
    if (prior.length !== items.length)
      throw new Error(`claim script answered ${prior.length} of ${items.length} claims`);
    const owners = prior.map((p, i) => p === null || p === positions[i]);
    if (!this.ledger) return owners;

    // Redis forgot when the marker was missing (this pipeline re-created it) or holds another epoch than
    // the one this process knew (another pipeline — a concurrent partition, another replica — re-created
    // it after the loss, maybe in the same instant as these claims). Decided synchronously here, so a
    // pipeline answered after this one waits for the same verification window instead of racing past it.
    const known = this.epochs.get(topic);
    if (epoch === null || epoch !== known) {
      this.epochs.set(topic, epoch ?? mine);
      const loading = this.loadVerifyWindow(topic, true);
      this.windowLoading = loading;
      // a failed start fails the claims waiting for it (their chunks are retried) and is detected again
      loading.catch(() => {
        if (this.windowLoading === loading) this.windowLoading = Promise.resolve();
        this.epochs.delete(topic);
      });
    }
    await this.windowLoading;
    if (Date.now() >= this.verifyUntil) return owners;
    const fresh = items.filter((_, i) => prior[i] === null);
    if (fresh.length === 0) return owners;
    const stored = await this.ledgerPositions(
      topic,
      fresh.map((f) => f.key),
    );
    const restore = this.redis.pipeline();
    items.forEach((it, i) => {
      const original = prior[i] === null ? stored.get(it.key) : undefined;
      if (original === undefined || original === it.position) return;
      owners[i] = false;
      const { scope, id } = splitKey(it.key);
      const key = bucketKey(topic, scope, buckets.read[0]);
      restore.hset(key, id, shortPosition(topic, original)).pexpireat(key, buckets.expireAtMs);
    });
    if (restore.length) await restore.exec();
    return owners;
  }

  /** the bucket numbers a claim at `nowMs` reads (the first is where it writes), and when that one expires */
  private buckets(nowMs: number): { read: number[]; expireAtMs: number } {
    const size = Math.ceil((this.ttlSeconds * 1000) / 2);
    const n = Math.floor(nowMs / size);
    return { read: [n, n - 1, n - 2], expireAtMs: (n + 3) * size };
  }

  /**
   * The first look at the epoch marker, before this process claims (and so writes) anything. Done inside
   * the claim pipeline instead, partitions claiming concurrently raced: one re-created the marker, another
   * (seeing it) claimed and wrote its chunk, and the first then found the ledger non-empty and took a first
   * start for a loss — verifying every new id against the ledger for a whole dedup horizon (slow, never
   * wrong). Replicas of a brand-new deployment starting at the same instant can still race so (same
   * cost, same correctness). The claim pipeline keeps watching the marker for a loss while running.
   */
  private checkEpochOnce(topic: string): Promise<void> {
    let p = this.epochChecked.get(topic);
    if (!p) {
      p = (async () => {
        const mine = newEpoch();
        const prior = (await this.redis.call('SET', epochKey(topic), mine, 'NX', 'GET')) as string | null;
        this.epochs.set(topic, prior ?? mine);
        await this.loadVerifyWindow(topic, prior === null);
      })();
      p.catch(() => this.epochChecked.delete(topic)); // a transient failure is retried by the next claim
      this.epochChecked.set(topic, p);
    }
    return p;
  }

  /** Starts (or resumes) the verification window; `forgotten` = the epoch marker was re-created. */
  private async loadVerifyWindow(topic: string, forgotten: boolean): Promise<void> {
    const ledger = this.ledger as NonNullable<typeof this.ledger>;
    if (forgotten) {
      // a fresh Redis over an empty ledger is a first start, not a loss
      const [row] = await ledger.db.query<{ n: string | number }>(
        `SELECT count() AS n FROM (SELECT 1 FROM ${ledger.spec.table} LIMIT 1)`,
      );
      if (Number(row?.n ?? 0) > 0) {
        this.verifyUntil = Math.max(this.verifyUntil, Date.now() + this.ttlSeconds * 1000);
        await this.redis.set(verifyUntilKey(topic), String(this.verifyUntil), 'EX', this.ttlSeconds);
        ledger.logger.warn(
          { until: new Date(this.verifyUntil).toISOString() },
          'Redis lost the dedup claims: verifying new ids against the ledger for one dedup horizon',
        );
      }
      this.verifyLoaded = true;
      return;
    }
    if (!this.verifyLoaded) {
      this.verifyUntil = Number((await this.redis.get(verifyUntilKey(topic))) ?? 0);
      this.verifyLoaded = true;
    }
  }

  /** The log position (`topic/partition/offset`) each key was first written at, where the ledger has it. */
  private async ledgerPositions(topic: string, keys: string[]): Promise<Map<string, string>> {
    const { db, spec } = this.ledger as NonNullable<typeof this.ledger>;
    const pairs = keys.map((k) => {
      const { scope, id } = splitKey(k);
      return [scope, id] as const;
    });
    const rows = await db.query<{ store_id: string; id: string; p: number; o: string }>(
      `SELECT store_id, ${spec.idColumn} AS id, _partition AS p, toString(min(_offset)) AS o
       FROM ${spec.table}
       WHERE store_id IN {stores:Array(String)} AND ${spec.idColumn} IN {ids:Array(String)}
         AND ${spec.timeColumn} >= now() - toIntervalSecond({horizon:UInt32}) - toIntervalDay(1)
       GROUP BY store_id, id, p`,
      {
        stores: [...new Set(pairs.map((p) => p[0]))],
        ids: [...new Set(pairs.map((p) => p[1]))],
        horizon: this.ttlSeconds,
      },
    );
    const out = new Map<string, string>();
    for (const r of rows) {
      const key = `${r.store_id}:${r.id}`;
      const pos = `${topic}/${r.p}/${r.o}`;
      const prev = out.get(key);
      // the earliest position in the log owns the id
      if (prev === undefined || comparePositions(pos, prev) < 0) out.set(key, pos);
    }
    return out;
  }
}

/** an epoch marker value: unique per re-creation, so a pipeline tells a re-created marker from the one it knew */
function newEpoch(): string {
  return `${Date.now()}-${Math.random().toString(36).slice(2, 10)}`;
}

/** the hash of one scope's claims in time bucket n; the braces keep a scope's buckets in one cluster slot */
export function bucketKey(topic: string, scope: string, n: number): string {
  return `sd:streams:claims:${topic}:{${scope}}:${n}`;
}

/** `<scope>:<id>` (a dedupKey) → its parts */
function splitKey(key: string): { scope: string; id: string } {
  const cut = key.indexOf(':');
  if (cut < 0) throw new Error(`dedup key without a scope: ${key}`);
  return { scope: key.slice(0, cut), id: key.slice(cut + 1) };
}

/** `<topic>/<partition>/<offset>` → `<partition>/<offset>` (the bucket's key names the topic) */
function shortPosition(topic: string, position: string): string {
  return position.startsWith(`${topic}/`) ? position.slice(topic.length + 1) : position;
}

function comparePositions(a: string, b: string): number {
  const [, pa, oa] = a.split('/');
  const [, pb, ob] = b.split('/');
  if (pa !== pb) return Number(pa) - Number(pb);
  const d = BigInt(oa) - BigInt(ob);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}
