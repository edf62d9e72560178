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
// Claims live in time buckets of half the dedup horizon (STREAMS_DEDUP_HORIZON_HOURS), one per topic and
// scope (the store): `sd:streams:claims:v4:<topic>:{<scope>}:<n>`, each a linear hash table of small
// hashes (CLAIM_SCRIPT), field = 63 bits of the id's hash (claimField), value = `<partition>/<offset>`. A claim is written to the current
// bucket and looked up in it and the two before, and a bucket expires as a whole when bucket n + 3 begins:
// an id is recognised for at least the horizon and at most 1.5× it; a duplicate arriving later than that
// counts again. Redis memory per claim (`used_memory` over 200 000 claims; docs/streams.md): a key of its
// own (`SET … NX GET EX`, before 2026-11-27) 222 B; a field of one hash per bucket 96-103 B (a hash that
// large is a hash table: an entry, two strings and a bucket slot per field); the id as a field of a shard of
// a few dozen, which Redis keeps as one packed listpack, ≈ 45 B; 63 bits of the id's hash instead, ≈ 27 B.
//
// When Redis loses its data (a FLUSHALL, a new instance, a restore without the AOF) the claims are gone,
// and a client retry of an event stored before would be claimed afresh. The claim pipeline therefore
// also keeps a marker key per topic (`sd:streams:claims-epoch:<topic>`, no expiry, a value unique per
// creation): finding it missing, or holding another value than the one this process knew (a concurrent
// partition or another replica re-created it first), means Redis forgot, and for one dedup horizon from then every fresh claim is checked against the processor's
// ledger — the raw table that holds every owned id with its log position (`events_raw.event_id`,
// `requests_raw.request_id`). An id found there at another position is a duplicate, and its Redis claim
// is restored to that position, so the decision stays a function of the log.
import { hash } from 'node:crypto';
import type { ChainableCommander, Redis } from 'ioredis';
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

/** the length of a claim field (claimField) */
export const CLAIM_FIELD_CHARS = 9;

/** the mean claims per shard a bucket grows to before it splits one (see CLAIM_SCRIPT) */
export const SHARD_CLAIMS = 48;

/**
 * every claim of a chunk. KEYS: per scope, its current bucket and the two before; ARGV: the current
 * bucket's expiry (epoch ms), the mode ('claim': keep the first position; 'set': overwrite with the given
 * one), then every claim in one string: per claim `<k> <position> <field>`, k the 0-based offset of its
 * scope's keys and the field its CLAIM_FIELD_CHARS characters (taken by width: a field may hold a space).
 * Answers the prior position per claim (nil = claimed now). Three arguments per claim cost the processors'
 * thread ≈ 1.5 KB of allocation per message in ioredis' command building (a chunk's thousands of
 * arguments); one string is built once (docs/decisions.md).
 *
 * A bucket is a linear hash table (Litwin 1980) of small Redis hashes: its key holds the shape (L, p: the
 * table has 2^L + p shards) and the claim count c; shard a is the hash `<bucket>:<a>`. An id's shard is
 * h mod 2^L, or h mod 2^(L+1) when that is below p. Whenever c exceeds SHARD_CLAIMS per shard, shard p is
 * split: its ids whose h mod 2^(L+1) is p + 2^L move to that new shard, and p advances (L too when p
 * reaches 2^L). So every shard stays a few dozen fields long, small enough for Redis' compact listpack
 * encoding (hash-max-listpack-entries, 128 by default), whatever the volume.
 */
const CLAIM_SCRIPT = `
local cap, expireAt, mode = ${SHARD_CLAIMS}, ARGV[1], ARGV[2]
local shapes, touched, out, n = {}, {}, {}, 0
local byte = string.byte
-- a field's address: its first four characters, 7 bits each (the field is a hash of the id: claimField)
local function addr(f)
  local a, b, c, d = byte(f, 1, 4)
  return ((a * 128 + b) * 128 + c) * 128 + d
end
local function shape(key)
  local s = shapes[key]
  if not s then
    local v = redis.call('HMGET', key, 'L', 'p', 'c')
    local L = tonumber(v[1]) or 0
    s = { L = L, size = 2 ^ L, p = tonumber(v[2]) or 0, c = tonumber(v[3]) or 0 }
    shapes[key] = s
  end
  return s
end
-- ':<a>' per shard number, formatted once per call (a number's tostring is the costly part of a name)
local suffixes = {}
local function suffix(a)
  local sfx = suffixes[a]
  if not sfx then
    sfx = ':' .. a
    suffixes[a] = sfx
  end
  return sfx
end
local function shard(key, s, x)
  local a = x % s.size
  if a < s.p then a = x % (2 * s.size) end
  return key .. suffix(a)
end
local function split(key, s)
  local size = s.size
  local from, to = key .. suffix(s.p), key .. suffix(s.p + size)
  local fields, moved, gone = redis.call('HGETALL', from), {}, {}
  for i = 1, #fields, 2 do
    if addr(fields[i]) % (2 * size) ~= s.p then
      moved[#moved + 1] = fields[i]
      moved[#moved + 1] = fields[i + 1]
      gone[#gone + 1] = fields[i]
    end
  end
  if #gone > 0 then
    redis.call('HSET', to, unpack(moved))
    redis.call('HDEL', from, unpack(gone))
    touched[to] = true
  end
  s.p = s.p + 1
  if s.p == size then s.L, s.size, s.p = s.L + 1, 2 * size, 0 end
end
local packed, at, width = ARGV[3], 1, ${CLAIM_FIELD_CHARS}
local size, find, sub = #packed, string.find, string.sub
while at <= size do
  local a = find(packed, ' ', at, true)
  local b = find(packed, ' ', a + 1, true)
  local k, pos, f = tonumber(sub(packed, at, a - 1)), sub(packed, a + 1, b - 1), sub(packed, b + 1, b + width)
  at = b + 1 + width
  local x, prior = addr(f), false
  local key = KEYS[k + 1]
  local s = shape(key)
  local at = shard(key, s, x)
  if mode == 'claim' then
    if s.c > 0 then prior = redis.call('HGET', at, f) end
    for j = 2, 3 do
      if prior then break end
      local older = KEYS[k + j]
      local o = shape(older)
      if o.c > 0 then prior = redis.call('HGET', shard(older, o, x), f) end
    end
  end
  if not prior then
    s.c = s.c + redis.call('HSET', at, f, pos)
    s.dirty, touched[at] = true, true
    while s.c > cap * (s.size + s.p) do split(key, s) end
  end
  n = n + 1
  out[n] = prior
end
for key, s in pairs(shapes) do
  if s.dirty then
    redis.call('HSET', key, 'L', s.L, 'p', s.p, 'c', s.c)
    touched[key] = true
  end
end
for key in pairs(touched) do redis.call('PEXPIREAT', key, expireAt) end
return out`;

type ClaimRunner = (numKeys: number, ...args: string[]) => Promise<(string | null)[]>;

// v2 since the claims moved into bucket hashes, v3 since the buckets became linear hash tables, v4 since
// their fields are hashes of the ids: a process of a new layout finds no marker, takes it for a loss, and
// verifies fresh claims against the ledger for one horizon (the old layout's claims are not read)
const epochKey = (topic: string) => `sd:streams:claims-epoch:v4:${topic}`;
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
    const positions = items.map((it) => shortPosition(topic, it.position));
    this.script(pipe, topic, items, 'claim', buckets);
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
    const restored: ClaimItem[] = [];
    items.forEach((it, i) => {
      const original = prior[i] === null ? stored.get(it.key) : undefined;
      if (original === undefined || original === it.position) return;
      owners[i] = false;
      restored.push({ key: it.key, position: original });
    });
    if (restored.length) {
      const pipe = this.redis.pipeline();
      this.script(pipe, topic, restored, 'set', buckets);
      const [[err]] = (await pipe.exec()) ?? [[null]];
      if (err) throw err;
    }
    return owners;
  }

  /** queues the claim script on `pipe` for these items (see CLAIM_SCRIPT) */
  private script(
    pipe: ChainableCommander,
    topic: string,
    items: ClaimItem[],
    mode: 'claim' | 'set',
    buckets: { read: number[]; expireAtMs: number },
  ): void {
    const keys: string[] = [];
    const scopes = new Map<string, number>();
    const claims: string[] = [];
    for (const it of items) {
      const { scope, id } = splitKey(it.key);
      let k = scopes.get(scope);
      if (k === undefined) {
        k = keys.length;
        scopes.set(scope, k);
        for (const n of buckets.read) keys.push(bucketKey(topic, scope, n));
      }
      claims.push(`${k} ${shortPosition(topic, it.position)} ${claimField(id)}`);
    }
    (pipe as unknown as Record<'streamsClaimInBuckets', ClaimRunner>).streamsClaimInBuckets(
      keys.length,
      ...keys,
      String(buckets.expireAtMs),
      mode,
      claims.join(''),
    );
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

/**
 * the key of one scope's claims in time bucket n: a hash holding the table's shape, its shards being
 * `<key>:<a>` (CLAIM_SCRIPT); the braces keep a scope's buckets and shards in one cluster slot. A new
 * layout gets a new version (v3: linear hash tables; v4: hashed fields): the older layout's keys are not
 * read (they expire), and the epoch marker moved too, so the claims they held are verified against the
 * ledger for one horizon.
 */
export function bucketKey(topic: string, scope: string, n: number): string {
  return `sd:streams:claims:v4:${topic}:{${scope}}:${n}`;
}

/**
 * A claim's field: 63 bits of the id's MD5 as 9 ASCII characters of 7 bits each (any well-mixed hash would
 * do; MD5 is Node's fastest here, ≈ 1 µs). ASCII so that the claim script's arguments stay one JS string
 * (ioredis builds a command with any Buffer argument by concatenating buffers: slower for a chunk's
 * thousands of arguments) that is also its UTF-8. 9 bytes instead of a 26-character ULID take a claim from
 * ≈ 45 to ≈ 27 B of Redis memory, and the script reads a shard address from the field instead of hashing
 * the id in Lua. Two different ids of one scope and bucket share a field with probability 2^-63 per pair:
 * at 10 million claims in one bucket, ≈ 5 × 10^-6 expected false duplicates.
 */
export function claimField(id: string): string {
  const h = hash('md5', id, 'buffer');
  return String.fromCharCode(
    h[0] & 0x7f,
    h[1] & 0x7f,
    h[2] & 0x7f,
    h[3] & 0x7f,
    h[4] & 0x7f,
    h[5] & 0x7f,
    h[6] & 0x7f,
    h[7] & 0x7f,
    h[8] & 0x7f,
  );
}

/** every claim of one scope's time bucket n, field (claimField) → `<partition>/<offset>`, and the shard keys (inspection, tests) */
export async function bucketClaims(
  redis: Redis,
  topic: string,
  scope: string,
  n: number,
): Promise<{ claims: Record<string, string>; shards: string[] }> {
  const key = bucketKey(topic, scope, n);
  const [L, p] = (await redis.hmget(key, 'L', 'p')).map((v) => Number(v ?? 0));
  const claims: Record<string, string> = {};
  const shards: string[] = [];
  for (let a = 0; a < 2 ** L + p; a++) {
    shards.push(`${key}:${a}`);
    Object.assign(claims, await redis.hgetall(`${key}:${a}`));
  }
  return { claims, shards };
}

/** the time buckets a scope has claims in (newest first) */
export async function scopeBuckets(redis: Redis, topic: string, scope: string): Promise<number[]> {
  const prefix = bucketKey(topic, scope, 0).slice(0, -1);
  const found = await redis.keys(`${prefix}*`);
  return found
    .map((k) => k.slice(prefix.length))
    .filter((rest) => /^\d+$/.test(rest))
    .map(Number)
    .sort((a, b) => b - a);
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
