// Flag parsers. Commander reports an InvalidArgumentError as
// "error: option '--x <n>' argument 'y' is invalid. <reason>" (exit 2, the flag named).
//
// Bounds and choices are not written here: they are read from the zod schemas of schemas/config.ts
// (the same ones validateConfig applies when the item is written), so a flag rejects early exactly what
// the schema would reject later, and changing a bound in the schema changes the flag and its help.
import { InvalidArgumentError } from 'commander';
import { z } from 'zod';

// ---------------------------------------------------------------------------------------------------
// reading a field out of a zod schema

/** strips what wraps a field (default, optional, nullable, a transform's input side) */
function unwrap(schema: z.core.$ZodType): z.core.$ZodType {
  let s = schema;
  for (;;) {
    const def = s._zod.def as { type: string; innerType?: z.core.$ZodType; in?: z.core.$ZodType };
    if (def.innerType && ['default', 'prefault', 'optional', 'nullable', 'readonly', 'catch'].includes(def.type))
      s = def.innerType;
    else if (def.type === 'pipe' && def.in) s = def.in;
    else return s;
  }
}

/** the field at `path` ("safeguards.max_products", "fallback[].mode", "srcset_sizes[]") of an object schema */
export function field(schema: z.core.$ZodType, path: string): z.core.$ZodType {
  let s = unwrap(schema);
  for (const part of path.split('.')) {
    const [key, ...items] = part.split('[]');
    if (key) {
      const shape = (s._zod.def as { shape?: Record<string, z.core.$ZodType> }).shape;
      if (!shape?.[key]) throw new Error(`schema has no field ${JSON.stringify(key)} (path ${path})`);
      s = unwrap(shape[key]);
    }
    for (let i = 0; i < items.length; i++) {
      const element = (s._zod.def as { element?: z.core.$ZodType }).element;
      if (!element) throw new Error(`${path}: ${key} is not an array`);
      s = unwrap(element);
    }
  }
  return s;
}

/** the options of an enum field */
export function choices(schema: z.core.$ZodType, path: string): string[] {
  const f = field(schema, path);
  if (!(f instanceof z.ZodEnum)) throw new Error(`${path} is not an enum`);
  return f.options.map(String);
}

/** inclusive bounds of a number field, or of a string field's length */
export function bounds(schema: z.core.$ZodType, path: string): { min: number; max: number } {
  const f = field(schema, path);
  if (f instanceof z.ZodNumber) return { min: f.minValue ?? -Infinity, max: f.maxValue ?? Infinity };
  if (f instanceof z.ZodString) return { min: f.minLength ?? 0, max: f.maxLength ?? Infinity };
  throw new Error(`${path} is neither a number nor a string`);
}

/** the flag parser of an integer field, with the schema's bounds */
export function intOf(schema: z.core.$ZodType, path: string): (v: string) => number {
  const { min, max } = bounds(schema, path);
  return int(min, max);
}

/** the flag parser of a number field, with the schema's bounds */
export function numberOf(schema: z.core.$ZodType, path: string): (v: string) => number {
  const { min, max } = bounds(schema, path);
  return num(min, max);
}

// ---------------------------------------------------------------------------------------------------
// parsers

export const int = (min: number, max: number) => (v: string) => {
  if (!/^-?\d+$/.test(v)) throw new InvalidArgumentError('expected an integer');
  const n = Number(v);
  if (n < min || n > max) throw new InvalidArgumentError(`expected an integer from ${min} to ${max}`);
  return n;
};
export const num = (min: number, max: number) => (v: string) => {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError('expected a number');
  if (n < min || n > max) throw new InvalidArgumentError(`expected a number from ${min} to ${max}`);
  return n;
};
export const bool = (v: string) => {
  if (['true', 'yes', '1', 'on'].includes(v.toLowerCase())) return true;
  if (['false', 'no', '0', 'off'].includes(v.toLowerCase())) return false;
  throw new InvalidArgumentError('expected true or false');
};
export const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
export const repeat = (v: string, prev: string[] | undefined) => [...(prev ?? []), v];
export const jsonArg = (v: string) => {
  try {
    return JSON.parse(v);
  } catch (err) {
    throw new InvalidArgumentError(`not valid JSON (${(err as Error).message})`);
  }
};
