// The catalog projections: one stream processor per compacted catalog topic (the strategy shape of
// streams/runtime/types.ts: parse → process into rows per table), writing the versioned tables of
// migrations 0210-0230. They are registered in streams/registry.ts, so the streams service runs them
// (consumer groups `streams.<name>`) and the replay tool rebuilds their tables like any other's.
//
// Versioning. Every table is a ReplacingMergeTree(_version, is_deleted) keyed by store and id. `_version`
// is a UInt128: the record's updated_at in milliseconds in the high 64 bits and the Kafka offset in the
// low 64 bits, so the newest platform state wins whatever order records arrive in (a late, older update
// never replaces a newer one), and equal timestamps fall back to log order. A tombstone (null value)
// becomes a row with is_deleted = 1 whose version is the record's timestamp (the producer sets it past
// the newest version it wrote for the key, see writer.ts), so a delete wins over everything before it.
// Replaying a topic produces the same rows and the same versions, so a replay is harmless.
//
// Tombstones. The runtime hands a message without a value to the processor's `parseTombstone(key)`
// (streams/runtime/runtime.ts); here the record key names what is deleted (`parseCatalogKey`), and the
// broker timestamp of the message (`Decoded.brokerTime`) is the delete's version. A key this platform
// never writes goes to the DLQ with the reason.
import { type CatalogKeyRef, type CatalogTopicKey, parseCatalogKey } from '../../schemas/catalog.ts';
import type { CompareSpec, Decoded, ParseResult, Processor } from '../runtime/types.ts';
import { chTime, zodParse } from '../runtime/util.ts';
import type { z } from 'zod';

// ------------------------------------------------------------------------------------------------
// shared

export type Change<R> = { op: 'upsert'; record: R } | { op: 'delete'; ref: CatalogKeyRef };

/** A catalog processor: a runtime strategy whose tombstones are deletes (`parseTombstone` is required). */
export interface CatalogProcessor<R> extends Processor<Change<R>> {
  catalogTopic: CatalogTopicKey;
  parseTombstone(key: Buffer | null): ParseResult<Change<R>>;
}

/** `_version` as a decimal string: updated_at ms (high 64 bits) then offset (low 64 bits). */
export function versionOf(ms: number, offset: bigint): string {
  return ((BigInt(Math.max(0, Math.trunc(ms))) << 64n) | (offset & 0xffffffffffffffffn)).toString();
}

export function parser<R>(schema: z.ZodType<R>): (v: unknown) => ParseResult<Change<R>> {
  return (v) => {
    const r = zodParse(schema, v);
    return r.ok ? { ok: true, value: { op: 'upsert', record: r.value as R } } : r;
  };
}

/** A tombstone's record key → the delete it stands for; a key this platform never writes is refused. */
export function tombstoneParser<R>(topic: CatalogTopicKey): (key: Buffer | null) => ParseResult<Change<R>> {
  return (key) => {
    if (key === null || key.length === 0) return { ok: false, reason: 'a tombstone without a record key' };
    const text = key.toString('utf8');
    const ref = parseCatalogKey(topic, text);
    return ref
      ? { ok: true, value: { op: 'delete', ref } }
      : { ok: false, reason: `unrecognised ${topic} key ${JSON.stringify(text.slice(0, 200))}` };
  };
}

/**
 * How a replay compares live and shadow tables: the latest state (FINAL: deleted keys and superseded
 * versions left out, whatever the background merges did), per store and day of the current version's
 * updated_at — the number of current keys and a checksum over their whole rows. Compaction of the log
 * drops only superseded records (the writer makes the last record of a key its newest version) and
 * tombstones past delete.retention.ms (whose keys are gone from the latest state either way), so a
 * rebuild equals the live tables unless processing changed. (`tuple(*)`: cityHash64 of several
 * arguments is NULL when any is, and the tables have Nullable columns.)
 */
export const LATEST: CompareSpec = {
  day: 'updated_at',
  measure: "concat(toString(count()), ' current, checksum ', hex(sum(cityHash64(tuple(*)))))",
  final: true,
};

export const meta = (d: Decoded<unknown>, ms: number) => ({
  _version: versionOf(ms, d.position.offset),
  _partition: d.position.partition,
  _offset: d.position.offset.toString(),
});

export const tombstoneTime = (d: Decoded<unknown>) =>
  Number.isFinite(d.brokerTime) && d.brokerTime > 0 ? d.brokerTime : 0;
export const isoOf = (ms: number) => chTime(new Date(ms).toISOString());
export const nullableTime = (iso: string | null) => (iso === null ? null : chTime(iso));
export const json = (v: unknown) => (v === null || v === undefined ? '' : JSON.stringify(v));

export function decMin(values: string[], pick: (a: number, b: number) => boolean): string {
  let best: string | undefined;
  for (const v of values) if (best === undefined || pick(Number(v), Number(best))) best = v;
  return best ?? '0';
}
