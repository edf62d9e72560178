// The processors' compiled validation (streams/runtime/validate.ts) against zod, the reference path: on
// values of the processors' schemas — generated from each schema's own definition, decoded through Avro
// as the runtime decodes them, then damaged (a field replaced by a value of another kind, dropped, or a
// key added) — the compiled check accepts exactly the values zod accepts unchanged, and `zodParse`
// answers what zod answers.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { avroType, READER_SCHEMAS } from '../../schemas/avro/index.ts';
import { EngagementEventSchema, EnrichedEventSchema, RejectedEventSchema } from '../../schemas/events.ts';
import { SearchFeedbackRecordSchema } from '../../schemas/feedback.ts';
import { OrderInputSchema, OrderSchema } from '../../schemas/orders.ts';
import { RequestEventSchema } from '../../schemas/requests.ts';
import { SiteEventSchema } from '../../schemas/site.ts';
import type { TopicKey } from '../../schemas/topics.ts';
import { zodParse } from '../../streams/runtime/util.ts';
import { compiledCheck, onlyChecks } from '../../streams/runtime/validate.ts';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 300);

type Def = {
  type: string;
  format?: string;
  checks?: { _zod: { def: { check: string; pattern?: RegExp } } }[];
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  element?: z.ZodType;
  entries?: Record<string, string>;
};
const defOf = (s: z.ZodType) => (s as unknown as { _zod: { def: Def } })._zod.def;

/** values of a schema built from its definition (the kinds `onlyChecks` admits) */
function arbitraryOf(schema: z.ZodType): fc.Arbitrary<unknown> {
  const def = defOf(schema);
  switch (def.type) {
    case 'object':
      return fc.record(Object.fromEntries(Object.entries(def.shape ?? {}).map(([k, s]) => [k, arbitraryOf(s)])));
    case 'string': {
      if (def.format === 'datetime')
        return fc
          .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true })
          .map((d) => d.toISOString());
      const regex = def.checks?.find((c) => c._zod.def.pattern)?._zod.def.pattern;
      return regex ? fc.stringMatching(regex) : fc.string({ maxLength: 12 });
    }
    case 'enum':
      return fc.constantFrom(...Object.values(def.entries ?? {}));
    case 'nullable':
      return fc.option(arbitraryOf(def.innerType as z.ZodType), { nil: null });
    case 'number': {
      const n = schema as z.ZodNumber;
      const min = Math.max(n.minValue ?? -(2 ** 31), -(2 ** 31));
      const max = Math.min(n.maxValue ?? 2 ** 31 - 1, 2 ** 31 - 1);
      return n.isInt ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true });
    }
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(arbitraryOf(def.element as z.ZodType), { maxLength: 3 });
    case 'record':
      return fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
    case 'unknown':
      return fc.jsonValue({ maxDepth: 2 });
    default:
      throw new Error(`no arbitrary for zod type ${def.type}`);
  }
}

const DROP = Symbol('drop');
const EXTRA = Symbol('extra');
/** what a damaged field becomes: another kind of value, an edge of a number or a format, gone, or a key added */
const damage = fc
  .constantFrom<unknown>(
    DROP,
    EXTRA,
    undefined,
    null,
    '',
    'x',
    0,
    -0,
    1.5,
    -1,
    2 ** 31,
    -(2 ** 31) - 1,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    true,
    [],
    {},
    [{}],
    '2026-02-30T00:00:00.000Z',
    '2026-01-01T00:00:00Z',
    '1.5',
    '1e5',
    '-0.000001',
  )
  .map((v) => (v !== null && typeof v === 'object' ? structuredClone(v) : v));

/** the object and array slots of a value, depth first */
function slots(v: unknown, out: [Record<string, unknown> | unknown[], string | number][] = []) {
  if (Array.isArray(v))
    for (let i = 0; i < v.length; i++) {
      out.push([v, i]);
      slots(v[i], out);
    }
  else if (v !== null && typeof v === 'object')
    for (const k of Object.keys(v)) {
      out.push([v as Record<string, unknown>, k]);
      slots((v as Record<string, unknown>)[k], out);
    }
  return out;
}

function damaged(v: unknown, hits: { at: number; to: unknown }[]): unknown {
  for (const { at, to } of hits) {
    const all = slots(v);
    if (all.length === 0) return v;
    const [parent, key] = all[at % all.length];
    const obj = parent as Record<string | number, unknown>;
    if (to === DROP && !Array.isArray(parent)) delete obj[key];
    else if (to === EXTRA) {
      const inner = obj[key];
      // on an object (no decoder or JSON text puts a named key on an array)
      if (inner !== null && typeof inner === 'object' && !Array.isArray(inner))
        (inner as Record<string, unknown>).not_in_schema = 1;
      else if (!Array.isArray(parent)) parent.not_in_schema = 1;
    } else obj[key] = to;
  }
  return v;
}

/** the processors' schemas, each with the topic whose reader schema decodes it */
const PROCESSOR_SCHEMAS: [string, z.ZodType, TopicKey][] = [
  ['events', EnrichedEventSchema, 'events'],
  ['requests', RequestEventSchema, 'requests'],
  ['orders', OrderSchema, 'orders'],
  ['rejected', RejectedEventSchema, 'rejected'],
  ['site', SiteEventSchema, 'site'],
];

describe('compiled validation of the processors', () => {
  it.each(PROCESSOR_SCHEMAS)(
    'accepts exactly the %s values zod passes unchanged, decoded or not',
    (_n, schema, topic) => {
      const check = compiledCheck(schema);
      expect(check, 'the schema only checks').toBeDefined();
      const reader = (READER_SCHEMAS as Partial<Record<TopicKey, unknown>>)[topic];
      expect(reader, `a reader schema for ${topic}`).toBeDefined();
      const type = avroType(JSON.stringify(reader));
      const value = arbitraryOf(schema);
      const hits = fc.array(fc.record({ at: fc.nat(), to: damage }), { maxLength: 3 });
      let accepted = 0;
      fc.assert(
        fc.property(value, hits, fc.boolean(), (v, h, decode) => {
          // as the runtime sees it: an avsc record from the topic's reader schema, then damaged
          const input = damaged(decode ? type.fromBuffer(type.toBuffer(v)) : structuredClone(v), h);
          const reference = schema.safeParse(input);
          const unchanged = reference.success && equalsDeep(reference.data, input);
          const fast = (check as (x: unknown) => boolean)(input);
          expect(fast, JSON.stringify(input)).toBe(unchanged);
          if (fast) accepted++;
          const r = zodParse(schema, input);
          if (reference.success) expect(r).toEqual({ ok: true, value: reference.data });
          else expect(r.ok).toBe(false);
        }),
        { numRuns: RUNS },
      );
      // the undamaged values (about a fifth of the runs) are accepted on the compiled path
      expect(accepted).toBeGreaterThan(RUNS / 10);
    },
  );

  it('gives no compiled check to a schema that transforms, and zodParse answers with its output', () => {
    // transforms (the beacon's input, the order webhook), string lengths (feedback; left to zod)
    for (const schema of [EngagementEventSchema, OrderInputSchema, SearchFeedbackRecordSchema] as z.ZodType[]) {
      expect(onlyChecks(schema)).toBe(false);
      expect(compiledCheck(schema)).toBeUndefined();
    }
    const withDefault = z.object({ a: z.string(), n: z.number().default(7) });
    expect(compiledCheck(withDefault)).toBeUndefined();
    expect(zodParse(withDefault, { a: 'x' })).toEqual({ ok: true, value: { a: 'x', n: 7 } });
    const refined = z.object({ a: z.string().refine((s) => s.length > 2) });
    expect(compiledCheck(refined)).toBeUndefined();
    expect(zodParse(refined, { a: 'xy' }).ok).toBe(false);
    // a flag is not part of a JSON Schema pattern
    expect(compiledCheck(z.object({ a: z.string().regex(/^ab$/i) }))).toBeUndefined();
    expect(zodParse(z.object({ a: z.string().regex(/^ab$/i) }), { a: 'AB' }).ok).toBe(true);
    expect(compiledCheck(z.object({ a: z.string().max(3) }))).toBeUndefined();
    expect(compiledCheck(z.object({ a: z.string().regex(/^ab$/) }))).toBeDefined();
  });

  it('names the first failing field from zod when the compiled check refuses', () => {
    const r = zodParse(EnrichedEventSchema, { event_id: 'e1' });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/^event_type: /);
  });
});

/** equal own enumerable keys and values, recursively (a record's class is not a difference) */
function equalsDeep(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every(
    (k) => Object.hasOwn(b, k) && equalsDeep((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
  );
}
