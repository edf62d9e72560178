// Avro schemas generated from the zod contracts, so zod stays the one source of truth for every Kafka
// value. Mapping (zod output side → Avro):
//   string → string · ISO datetime (z.iso.datetime) → long timestamp-millis · int32 → int · other
//   integers → long · number → double · boolean → boolean · enum → string (symbols in the doc; strings
//   evolve without breaking old readers) · array → array · object with fields → record ·
//   record/unknown object → string with logicalType "json" · nullable → ["null", T] with default null ·
//   an integer with `.meta({ avroLogicalType: 'timestamp-millis' })` (epoch milliseconds kept as a number
//   on the JS side) → long timestamp-millis.
// Descriptions become `doc`. Field order is the zod shape order.
import type { Schema } from 'avsc';
import { z } from 'zod';

type JsonSchema = {
  type?: string | string[];
  anyOf?: JsonSchema[];
  $ref?: string;
  format?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  description?: string;
  default?: unknown;
  $defs?: Record<string, JsonSchema>;
  /** zod `.meta({ avroLogicalType })`: the logical type of an integer carried as an Avro long */
  avroLogicalType?: 'timestamp-millis';
};

export interface AvroRecordOptions {
  name: string;
  namespace: string;
  doc?: string;
}

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

/** The Avro record schema for a zod object schema (output side). */
export function avroFromZod(schema: z.ZodType, opts: AvroRecordOptions): Schema {
  const js = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  const defs = js.$defs ?? {};
  const emitted = new Set<string>();

  const nullableInner = (s: JsonSchema): JsonSchema | undefined => {
    if (Array.isArray(s.type) && s.type.includes('null')) {
      const rest = s.type.filter((t) => t !== 'null');
      if (rest.length === 1) return { ...s, type: rest[0] };
    }
    if (s.anyOf) {
      const rest = s.anyOf.filter((b) => b.type !== 'null');
      if (rest.length === 1 && s.anyOf.length === 2)
        return { ...rest[0], description: s.description ?? rest[0].description };
    }
    return undefined;
  };

  const conv = (s: JsonSchema, nameHint: string): unknown => {
    if (s.$ref) {
      const name = s.$ref.replace(/^#\/\$defs\//, '');
      const def = defs[name];
      if (!def) throw new Error(`avroFromZod: unresolved reference ${s.$ref}`);
      if (emitted.has(name)) return name;
      emitted.add(name);
      return record(def, name);
    }
    const inner = nullableInner(s);
    if (inner) return ['null', conv(inner, nameHint)];
    if (s.anyOf) throw new Error(`avroFromZod: unions other than T | null are not supported (${nameHint})`);
    switch (s.type) {
      case 'string':
        if (s.format === 'date-time') return { type: 'long', logicalType: 'timestamp-millis' };
        return 'string';
      case 'integer': {
        const min = s.minimum ?? -Infinity;
        const max = s.maximum ?? Infinity;
        if (min >= INT32_MIN && max <= INT32_MAX) return 'int';
        // avsc encodes JS numbers as long only strictly inside ±(2^53 - 1): zod must not allow the bounds
        if (min <= -Number.MAX_SAFE_INTEGER || max >= Number.MAX_SAFE_INTEGER) {
          throw new Error(
            `avroFromZod: integer ${nameHint} must be bounded inside ±(2^53 - 1) to be encodable as an Avro long`,
          );
        }
        if (s.avroLogicalType === 'timestamp-millis') return { type: 'long', logicalType: 'timestamp-millis' };
        return 'long';
      }
      case 'number':
        return 'double';
      case 'boolean':
        return 'boolean';
      case 'array':
        if (!s.items) throw new Error(`avroFromZod: array without items (${nameHint})`);
        return { type: 'array', items: conv(s.items, `${nameHint}Item`) };
      case 'object':
        if (s.properties) return record(s, nameHint);
        return { type: 'string', logicalType: 'json' };
      default:
        throw new Error(`avroFromZod: unsupported JSON schema type ${JSON.stringify(s.type)} (${nameHint})`);
    }
  };

  const record = (s: JsonSchema, name: string, doc?: string) => {
    const fields = Object.entries(s.properties ?? {}).map(([field, fs]) => {
      const type = conv(fs, pascal(field));
      const inner = nullableInner(fs) ?? fs;
      const docParts = [
        fs.description ?? inner.description,
        inner.enum ? `one of: ${inner.enum.join(', ')}` : undefined,
      ].filter(Boolean);
      const out: Record<string, unknown> = { name: field, type };
      if (docParts.length) out.doc = docParts.join('; ');
      if (fs.default !== undefined) out.default = fs.default;
      else if (Array.isArray(type) && type[0] === 'null') out.default = null;
      else if (typeof type === 'object' && type !== null && (type as { type?: string }).type === 'array')
        out.default = [];
      return out;
    });
    return { type: 'record', name, ...(doc ? { doc } : {}), fields };
  };

  return { namespace: opts.namespace, ...record(js, opts.name, opts.doc ?? js.description) } as Schema;
}

function pascal(s: string): string {
  return s.replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());
}
