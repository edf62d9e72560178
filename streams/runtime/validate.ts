// A compiled check in front of zod for the processors' validation (`zodParse`, util.ts).
//
// zod's parse of a decoded value builds a full copy of it: for an engagement event that was ≈ 3 µs of
// the processors' thread and a third of all the bytes the sustained pipeline allocated (the garbage its
// collector then spent V8's helper threads on; docs/decisions.md, issue #21). Where a zod schema only
// checks — no transform, default, coercion or custom refinement anywhere in it — zod's output of a valid
// value is that value again, field for field. For such a schema the same rules are compiled into a
// JSON Schema validator (zod's own JSON Schema of the schema, input side, compiled by Ajv), which reads
// the value in place and allocates nothing: a value it accepts is passed on as it is; anything it
// rejects goes through zod, whose answer (its output, or the reason) is the result either way.
//
// Whether a schema qualifies is decided by walking its definition against the kinds below, whose JSON
// Schema says everything zod checks (anything else: no compiled check, zod alone). The equivalence on the
// values a decoder produces (plain objects, arrays, primitives, avsc records) is a property test:
// test/streams/validate.test.ts.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { z } from 'zod';

/** zod definition types whose JSON Schema (input side) is exactly what zod checks */
const PLAIN_TYPES = new Set([
  'object',
  'string',
  'number',
  'boolean',
  'enum',
  'nullable',
  'array',
  'record',
  'unknown',
]);
/** zod checks with an exact JSON Schema: regex-backed string formats, numeric formats and bounds (the
 *  kinds the property test exercises; string lengths, which no hot schema has, are left to zod) */
const PLAIN_CHECKS = new Set(['string_format', 'number_format', 'greater_than', 'less_than']);
const PLAIN_STRING_FORMATS = new Set(['datetime', 'regex']);
const PLAIN_NUMBER_FORMATS = new Set(['int32', 'safeint']);

interface ZodDefLike {
  type: string;
  check?: string;
  format?: string;
  pattern?: RegExp;
  checks?: { _zod: { def: ZodDefLike } }[];
  shape?: Record<string, { _zod: { def: ZodDefLike } }>;
  catchall?: unknown;
  innerType?: { _zod: { def: ZodDefLike } };
  element?: { _zod: { def: ZodDefLike } };
  keyType?: { _zod: { def: ZodDefLike } };
  valueType?: { _zod: { def: ZodDefLike } };
}

function plainCheck(def: ZodDefLike): boolean {
  if (def.check === undefined) return true;
  if (!PLAIN_CHECKS.has(def.check)) return false;
  // a pattern's flags are not in its JSON Schema: a flagless one only
  if (def.check === 'string_format')
    return PLAIN_STRING_FORMATS.has(def.format ?? '') && (def.pattern === undefined || def.pattern.flags === '');
  if (def.check === 'number_format') return PLAIN_NUMBER_FORMATS.has(def.format ?? '');
  return true;
}

/** true when zod's output of any value it accepts is that value (so a pure check can stand in for it) */
export function onlyChecks(schema: z.ZodType): boolean {
  const def = (schema as unknown as { _zod: { def: ZodDefLike } })._zod.def;
  if (!PLAIN_TYPES.has(def.type) || !plainCheck(def)) return false;
  for (const c of def.checks ?? []) if (!plainCheck(c._zod.def)) return false;
  const inner = (s: { _zod: { def: ZodDefLike } } | undefined) =>
    s === undefined || onlyChecks(s as unknown as z.ZodType);
  switch (def.type) {
    case 'object':
      // a strip object (no catchall): zod drops unknown keys, the compiled check refuses them (closeObjects)
      return def.catchall === undefined && Object.values(def.shape ?? {}).every((s) => inner(s));
    case 'nullable':
      return inner(def.innerType);
    case 'array':
      return inner(def.element);
    case 'record':
      return inner(def.keyType) && inner(def.valueType);
    default:
      return true;
  }
}

// strictNumbers: NaN and ±Infinity are no numbers, as in zod; unicodeRegExp off: patterns run without the
// `u` flag, as zod runs them; formats are their patterns (zod emits both)
const ajv = new Ajv2020({
  strict: false,
  strictNumbers: true,
  unicodeRegExp: false,
  allErrors: false,
  validateFormats: false,
});

/** zod's input side lets unknown keys through (its output drops them): a key not in the shape is refused
 *  here instead, so that an accepted value is exactly zod's output. Where every property is required, as
 *  in the processors' flat records, that is a count of the own keys (a present field read through a
 *  prototype would escape it: neither a decoder nor JSON text puts one there) */
function closeObjects(o: Record<string, unknown>): void {
  if (o.type === 'object' && o.properties !== undefined && o.additionalProperties === undefined) {
    // every property required: a key count is the cheaper test (no walk over the keys)
    const names = Object.keys(o.properties as object);
    const required = new Set((o.required as string[] | undefined) ?? []);
    if (names.every((n) => required.has(n))) o.maxProperties = names.length;
    else o.additionalProperties = false;
  }
}

/** `visit` on every object of a JSON Schema document, its children first */
function eachNode(node: unknown, visit: (o: Record<string, unknown>) => void): void {
  if (Array.isArray(node)) {
    for (const n of node) eachNode(n, visit);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  for (const v of Object.values(o)) eachNode(v, visit);
  visit(o);
}

/** keywords that constrain only values of their own type: `null` passes them whatever they say */
const TYPED_KEYWORDS = new Set([
  'type',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'properties',
  'required',
  'additionalProperties',
  'maxProperties',
  'minProperties',
  'propertyNames',
  'items',
  'prefixItems',
  'minItems',
  'maxItems',
  'description',
  'enum',
]);

/**
 * zod writes a nullable field with constraints as `anyOf: [X, {type: 'null'}]`. Ajv runs an anyOf branch by
 * branch and records the first one's failure for every null (an error object and its path string: with
 * ≈ 25 null fields an engagement event, the largest allocation of the processors' thread, 1.5 KB a
 * message). The same set as one schema: X's type or null, X's typed keywords unchanged (JSON Schema applies
 * them to values of their type only), null added to an `enum`. Only where X has a single type and nothing
 * that also constrains null.
 */
function mergeNullable(o: Record<string, unknown>): void {
  const any = o.anyOf;
  if (!Array.isArray(any) || any.length !== 2) return;
  if (!Object.keys(o).every((k) => k === 'anyOf' || k === 'description')) return;
  const nullAt = any.findIndex((b) => JSON.stringify(b) === '{"type":"null"}');
  if (nullAt < 0) return;
  const x = any[1 - nullAt] as Record<string, unknown>;
  if (typeof x !== 'object' || x === null || typeof x.type !== 'string' || x.type === 'null') return;
  if (!Object.keys(x).every((k) => TYPED_KEYWORDS.has(k))) return;
  delete o.anyOf;
  Object.assign(o, x, { type: [x.type, 'null'] });
  if (Array.isArray(x.enum)) o.enum = [...x.enum, null];
}

const compiled = new WeakMap<z.ZodType, ((value: unknown) => boolean) | null>();

/** The compiled check of a schema that only checks (onlyChecks), else undefined; compiled once per schema. */
export function compiledCheck(schema: z.ZodType): ((value: unknown) => boolean) | undefined {
  let fn = compiled.get(schema);
  if (fn === undefined) {
    if (onlyChecks(schema)) {
      const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'throw', target: 'draft-2020-12' });
      eachNode(json, closeObjects);
      eachNode(json, mergeNullable);
      fn = ajv.compile(json) as (value: unknown) => boolean;
    } else fn = null;
    compiled.set(schema, fn);
  }
  return fn ?? undefined;
}
