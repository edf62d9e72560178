// avsc logical types that map Avro values to the platform's JS representation:
//   timestamp-millis (long) ↔ ISO 8601 UTC string ("2026-01-02T03:04:05.678Z")
//   json (string)           ↔ any JSON value (objects such as contextual_data)
// Readers without these logical types (other languages, @kafkajs/confluent-schema-registry) see the
// underlying long / string, which is the standard Avro fallback for logical types.
import avro, { type Schema, type Type } from 'avsc';
import { isoFromMs, toIsoStringMs } from '../fields.ts';

class TimestampMillisIso extends avro.types.LogicalType {
  // both directions run once per timestamp of every message encoded or decoded: the fast paths of
  // schemas/fields.ts, equal to Date's (new Date(ms).toISOString(), Date.parse) for every value
  protected override _fromValue(val: number): string {
    return isoFromMs(val);
  }
  protected override _toValue(val: unknown): number {
    const ms = typeof val === 'string' ? fastOrDateParse(val) : val instanceof Date ? val.getTime() : (val as number);
    if (typeof ms !== 'number' || !Number.isFinite(ms)) throw new Error(`invalid timestamp: ${String(val)}`);
    return ms;
  }
  protected override _resolve(type: Type): ((v: unknown) => unknown) | undefined {
    if (avro.Type.isType(type, 'logical:timestamp-millis')) return (v) => v;
    if (avro.Type.isType(type, 'long', 'int')) return (v) => this._fromValue(v as number);
    return undefined;
  }
}

function fastOrDateParse(v: string): number {
  const ms = toIsoStringMs(v);
  return Number.isNaN(ms) ? Date.parse(v) : ms;
}

class JsonString extends avro.types.LogicalType {
  protected override _fromValue(val: string): unknown {
    return JSON.parse(val);
  }
  protected override _toValue(val: unknown): string {
    return JSON.stringify(val) ?? 'null';
  }
  protected override _resolve(type: Type): ((v: unknown) => unknown) | undefined {
    if (avro.Type.isType(type, 'logical:json')) return (v) => v;
    if (avro.Type.isType(type, 'string')) return (v) => JSON.parse(v as string);
    return undefined;
  }
}

export const LOGICAL_TYPES = {
  'timestamp-millis': TimestampMillisIso,
  json: JsonString,
} as unknown as Record<string, new (schema: Schema, opts?: unknown) => avro.types.LogicalType>;

/** An avsc Type with the platform's logical types (what the codec and tests use). */
export function avroType(schema: Schema | string): Type {
  return avro.Type.forSchema(typeof schema === 'string' ? (JSON.parse(schema) as Schema) : schema, {
    logicalTypes: LOGICAL_TYPES,
    wrapUnions: 'auto',
    // decoded records carry their fields only: no clone/toBuffer/… on their prototype, so that a key
    // walk (the processors' compiled validation, streams/runtime/validate.ts) sees the fields alone
    omitRecordMethods: true,
  });
}
