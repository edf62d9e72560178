// Avro schema parsing, identity and compatibility, with avsc's schema resolution as the judge: a reader
// can read a writer's data exactly when `readerType.createResolver(writerType)` succeeds.
import avro, { type Schema, type Type } from 'avsc';

export const COMPATIBILITY_LEVELS = [
  'NONE',
  'BACKWARD',
  'BACKWARD_TRANSITIVE',
  'FORWARD',
  'FORWARD_TRANSITIVE',
  'FULL',
  'FULL_TRANSITIVE',
] as const;
export type CompatibilityLevel = (typeof COMPATIBILITY_LEVELS)[number];
export const DEFAULT_COMPATIBILITY: CompatibilityLevel = 'BACKWARD';

export function isCompatibilityLevel(v: unknown): v is CompatibilityLevel {
  return typeof v === 'string' && (COMPATIBILITY_LEVELS as readonly string[]).includes(v);
}

export interface ParsedSchema {
  /** the schema as stored and served: the submitted JSON without insignificant whitespace */
  text: string;
  /** identity: JSON with object keys sorted (two submissions are the same schema when equal) */
  canonical: string;
  type: Type;
}

export class InvalidSchemaError extends Error {}

/** Parse an Avro schema given as JSON text; throws InvalidSchemaError with avsc's reason. */
export function parseAvroSchema(text: string): ParsedSchema {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new InvalidSchemaError(`Invalid schema: not JSON (${(err as Error).message})`);
  }
  let type: Type;
  try {
    type = avro.Type.forSchema(json as Schema, { wrapUnions: 'auto' });
  } catch (err) {
    throw new InvalidSchemaError(`Invalid schema: ${(err as Error).message}`);
  }
  return { text: JSON.stringify(json), canonical: stableStringify(json), type };
}

function stableStringify(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableStringify).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v as Record<string, unknown>).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${stableStringify((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** Why `reader` cannot read data written with `writer`, or undefined when it can. */
export function resolutionError(reader: Type, writer: Type): string | undefined {
  try {
    reader.createResolver(writer);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * Check `candidate` against the existing versions of a subject (oldest first) under `level`.
 * Returns the incompatibilities found (empty = compatible).
 */
export function checkCompatibility(
  level: CompatibilityLevel,
  candidate: Type,
  existing: { version: number; type: Type }[],
): string[] {
  if (level === 'NONE' || existing.length === 0) return [];
  const transitive = level.endsWith('_TRANSITIVE');
  const against = transitive ? existing : existing.slice(-1);
  const backward = level.startsWith('BACKWARD') || level.startsWith('FULL');
  const forward = level.startsWith('FORWARD') || level.startsWith('FULL');
  const problems: string[] = [];
  for (const old of against) {
    if (backward) {
      const e = resolutionError(candidate, old.type);
      if (e) problems.push(`new schema cannot read data written with version ${old.version} (BACKWARD): ${e}`);
    }
    if (forward) {
      const e = resolutionError(old.type, candidate);
      if (e) problems.push(`version ${old.version} cannot read data written with the new schema (FORWARD): ${e}`);
    }
  }
  return problems;
}
