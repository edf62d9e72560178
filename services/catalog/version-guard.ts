// The catalog writer's version guard state: per topic, store and record key, the newest version (updated_at
// ms; a tombstone's record timestamp) the writer produced. writer.ts explains why it exists.
//
// Layout. One store's versions of one topic are spread over GUARD_SLOTS small hashes,
//   sd:catalog:version:v2:<topic>:{<store>}:<slot>   field = the record key without its `<store>:` prefix,
//                                                    value = the version (ms)
// with slot = FNV-1a(field) mod GUARD_SLOTS. A hash of up to 128 short fields is stored by Redis as one
// listpack (hash-max-listpack-entries, default 128): a field then costs its bytes plus a few, where a field
// of one large hash costs a hashtable entry, its own allocations for field and value, and the store id it
// repeated. Measured with used_memory over 200 000 inventory keys (test/catalog/version-guard.test.ts prints
// it): 121 B per key in one hash per topic and store (the layout before 2026-11-27), 50 B in 16 384 slots. A
// store's topic stays in listpacks up to about 1.5 M keys (≈ 90 per slot); beyond that Redis converts the
// fuller slots to hashtables, which is correct and as large as before. A small store pays the opposite: a
// few keys per slot, each slot a Redis key of its own (≈ 100 B more per record key for a store of a few
// thousand records; a few hundred KB in all).
//
// The braces are a Redis Cluster hash tag: one store's slots share a cluster slot, so one script call can
// check and update a batch across them.
//
// Upgrade: the first check of a (topic, store) in a process moves that store's versions out of the hash of
// the old layout (`sd:catalog:version:<topic>:<store>`, full record keys as fields) into the slots, keeping
// the newer version where both hold one, and then deletes it. A writer of the old layout still running
// meanwhile (a rolling upgrade) writes into the old hash again, which the new writers read only when they
// start: until then its versions do not guard (a lost version lets a stale record into Kafka, where the
// projections still ignore it; docs/catalog.md).
import type { Redis } from 'ioredis';

/** slots per topic and store (a power of two) */
export const GUARD_SLOTS = 16_384;

/** FNV-1a over the field's UTF-16 code units, to a slot */
export function guardSlot(field: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < field.length; i++) {
    h ^= field.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) & (GUARD_SLOTS - 1);
}

export const guardKey = (topic: string, storeId: string, slot: number) =>
  `sd:catalog:version:v2:${topic}:{${storeId}}:${slot}`;
const legacyKey = (topic: string, storeId: string) => `sd:catalog:version:${topic}:${storeId}`;

/** the record key without its store prefix (every catalog and order key starts with `<store>:`) */
function fieldOf(storeId: string, key: string): string {
  return key.startsWith(`${storeId}:`) ? key.slice(storeId.length + 1) : key;
}

// KEYS = the slots of this call; ARGV = now, then per record: its slot's 1-based KEYS index, field, version
// ms, tombstone flag. Returns per record the version to write (ms; for a tombstone its record timestamp) or
// -1 = stale. Records are applied in order, so a later record of the same key sees an earlier one's version.
const CHECK_LUA = `
local now = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV, 4 do
  local k, f, ms = KEYS[tonumber(ARGV[i])], ARGV[i + 1], tonumber(ARGV[i + 2])
  local cur = tonumber(redis.call('HGET', k, f) or '-1')
  if ARGV[i + 3] == '1' then
    local t = math.max(now, cur + 1)
    redis.call('HSET', k, f, string.format('%d', t))
    out[#out + 1] = string.format('%d', t)
  elseif ms >= cur then
    redis.call('HSET', k, f, string.format('%d', ms))
    out[#out + 1] = string.format('%d', ms)
  else
    out[#out + 1] = '-1'
  end
end
return out`;

// KEYS = slots; ARGV = per version: its slot's KEYS index, field, version → keeps the newer of the two
const MERGE_LUA = `
for i = 1, #ARGV, 3 do
  local k, f, v = KEYS[tonumber(ARGV[i])], ARGV[i + 1], tonumber(ARGV[i + 2])
  local cur = tonumber(redis.call('HGET', k, f) or '-1')
  if v > cur then redis.call('HSET', k, f, string.format('%d', v)) end
end
return 0`;

export interface GuardRecord {
  topic: string;
  storeId: string;
  key: string;
  /** the record's version (ms); ignored for tombstones */
  versionMs: number;
  tombstone: boolean;
}

/** the slot keys of a batch, each once, and each item's 1-based index among them */
function slotsOf(slotKeys: string[]): { keys: string[]; index: number[] } {
  const keys: string[] = [];
  const at = new Map<string, number>();
  const index = slotKeys.map((k) => {
    let i = at.get(k);
    if (i === undefined) {
      i = keys.push(k);
      at.set(k, i);
    }
    return i;
  });
  return { keys, index };
}

export class VersionGuard {
  private readonly redis: Redis;
  /** (topic, store) pairs whose old-layout hash this process moved (or found absent) */
  private readonly upgraded = new Map<string, Promise<void>>();

  constructor(redis: Redis) {
    this.redis = redis;
  }

  /**
   * Per record, in order: the version to produce it with, or -1 when a newer version of its key was already
   * produced (stale). Records the versions it returns.
   */
  async check(records: GuardRecord[], now = Date.now()): Promise<number[]> {
    const out = new Array<number>(records.length);
    // one script call per store: the slots of a call share a cluster slot
    const byStore = new Map<string, number[]>();
    records.forEach((r, i) => {
      const list = byStore.get(r.storeId);
      if (list) list.push(i);
      else byStore.set(r.storeId, [i]);
    });
    await Promise.all([...new Set(records.map((r) => `${r.topic}\u0000${r.storeId}`))].map((id) => this.upgrade(id)));
    const pipe = this.redis.pipeline();
    const order = [...byStore.values()];
    for (const idx of order) {
      const fields = idx.map((i) => fieldOf(records[i].storeId, records[i].key));
      const { keys, index } = slotsOf(
        idx.map((i, j) => guardKey(records[i].topic, records[i].storeId, guardSlot(fields[j]))),
      );
      const args: string[] = [String(now)];
      idx.forEach((i, j) => {
        const r = records[i];
        args.push(String(index[j]), fields[j], String(Math.max(0, Math.trunc(r.versionMs))), r.tombstone ? '1' : '0');
      });
      pipe.eval(CHECK_LUA, keys.length, ...keys, ...args);
    }
    const replies = (await pipe.exec()) ?? [];
    order.forEach((idx, g) => {
      const [err, res] = replies[g] ?? [new Error('no reply from Redis')];
      if (err) throw err;
      (res as string[]).forEach((v, j) => {
        out[idx[j]] = Number(v);
      });
    });
    return out;
  }

  /** moves (topic, store)'s versions out of the old layout's hash, once per process */
  private upgrade(id: string): Promise<void> {
    let done = this.upgraded.get(id);
    if (!done) {
      const [topic, storeId] = id.split('\u0000');
      done = this.moveLegacy(topic, storeId);
      this.upgraded.set(id, done);
      done.catch(() => this.upgraded.delete(id)); // retried by the next check
    }
    return done;
  }

  private async moveLegacy(topic: string, storeId: string): Promise<void> {
    const legacy = legacyKey(topic, storeId);
    if (!(await this.redis.exists(legacy))) return;
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(legacy, cursor, 'COUNT', 2000);
      cursor = next;
      const pairs: [string, string][] = [];
      for (let i = 0; i < flat.length; i += 2) pairs.push([fieldOf(storeId, flat[i]), flat[i + 1]]);
      if (pairs.length === 0) continue;
      const { keys, index } = slotsOf(pairs.map(([f]) => guardKey(topic, storeId, guardSlot(f))));
      const args: string[] = [];
      pairs.forEach(([f, v], j) => {
        args.push(String(index[j]), f, v);
      });
      await this.redis.eval(MERGE_LUA, keys.length, ...keys, ...args);
    } while (cursor !== '0');
    await this.redis.unlink(legacy);
  }
}
