// The registry's state as a fold over the records of the compacted `_schemas` topic. Record keys and
// values follow Confluent's layout (JSON keys with `keytype`), so the topic reads familiarly:
//   SCHEMA       {keytype, subject, version, magic:1} → {subject, version, id, schema, deleted} | tombstone
//   CONFIG       {keytype, subject|null, magic:0}     → {compatibilityLevel} | tombstone
//   ID_WATERMARK {keytype, magic:0}                   → {max_id}  (ids are never reused, even after a
//                                                       permanent delete compacted the schema away)
// Applying the same records again, or the compacted log, gives the same state.
import type { Type } from 'avsc';
import { type CompatibilityLevel, DEFAULT_COMPATIBILITY, isCompatibilityLevel, parseAvroSchema } from './compat.ts';

export interface VersionRecord {
  subject: string;
  version: number;
  id: number;
  schema: string;
  deleted: boolean;
}

interface SchemaEntry {
  text: string;
  canonical: string;
  /** (subject, version) pairs referencing this id */
  refs: number;
  type?: Type;
}

export interface LogRecord {
  key: string;
  value: string | null;
}

export const schemaKey = (subject: string, version: number) =>
  JSON.stringify({ keytype: 'SCHEMA', subject, version, magic: 1 });
export const configKey = (subject: string | null) => JSON.stringify({ keytype: 'CONFIG', subject, magic: 0 });
export const ID_WATERMARK_KEY = JSON.stringify({ keytype: 'ID_WATERMARK', magic: 0 });

export function schemaRecord(v: VersionRecord): LogRecord {
  return {
    key: schemaKey(v.subject, v.version),
    value: JSON.stringify({ subject: v.subject, version: v.version, id: v.id, schema: v.schema, deleted: v.deleted }),
  };
}

export class RegistryState {
  private readonly subjects = new Map<string, Map<number, VersionRecord>>();
  private readonly schemas = new Map<number, SchemaEntry>();
  private readonly idByCanonical = new Map<string, number>();
  private readonly subjectLevels = new Map<string, CompatibilityLevel>();
  private globalLevel: CompatibilityLevel | undefined;
  private maxId = 0;
  /** records that could not be understood (kept for diagnostics, never fatal) */
  skipped = 0;

  /** Apply one record of the log. Unknown or malformed records are counted and ignored. */
  apply(key: string | null, value: string | null): void {
    let k: { keytype?: string; subject?: string | null; version?: number };
    try {
      k = JSON.parse(key ?? '');
    } catch {
      this.skipped++;
      return;
    }
    try {
      switch (k.keytype) {
        case 'SCHEMA':
          this.applySchema(String(k.subject), Number(k.version), value === null ? null : JSON.parse(value));
          return;
        case 'CONFIG': {
          const raw =
            value === null ? undefined : (JSON.parse(value) as { compatibilityLevel?: string }).compatibilityLevel;
          if (value !== null && !isCompatibilityLevel(raw)) {
            this.skipped++;
            return;
          }
          const level = raw as CompatibilityLevel | undefined;
          if (k.subject === null || k.subject === undefined) this.globalLevel = level;
          else if (level) this.subjectLevels.set(k.subject, level);
          else this.subjectLevels.delete(k.subject);
          return;
        }
        case 'ID_WATERMARK':
          if (value !== null)
            this.maxId = Math.max(this.maxId, Number((JSON.parse(value) as { max_id: number }).max_id) || 0);
          return;
        default:
          this.skipped++;
      }
    } catch {
      this.skipped++;
    }
  }

  private applySchema(subject: string, version: number, v: VersionRecord | null): void {
    let versions = this.subjects.get(subject);
    const previous = versions?.get(version);
    if (previous) this.unref(previous.id);
    if (v === null) {
      versions?.delete(version);
      if (versions && versions.size === 0) this.subjects.delete(subject);
      return;
    }
    if (!Number.isSafeInteger(v.id) || v.id <= 0 || typeof v.schema !== 'string') {
      this.skipped++;
      return;
    }
    const rec: VersionRecord = { subject, version, id: v.id, schema: v.schema, deleted: v.deleted === true };
    if (!versions) this.subjects.set(subject, (versions = new Map()));
    versions.set(version, rec);
    this.maxId = Math.max(this.maxId, rec.id);
    const entry = this.schemas.get(rec.id);
    if (entry) entry.refs++;
    else {
      let canonical: string;
      try {
        canonical = parseAvroSchema(rec.schema).canonical;
      } catch {
        canonical = rec.schema;
      }
      this.schemas.set(rec.id, { text: rec.schema, canonical, refs: 1 });
      if (!this.idByCanonical.has(canonical)) this.idByCanonical.set(canonical, rec.id);
    }
  }

  private unref(id: number): void {
    const entry = this.schemas.get(id);
    if (!entry) return;
    if (--entry.refs > 0) return;
    this.schemas.delete(id);
    if (this.idByCanonical.get(entry.canonical) === id) this.idByCanonical.delete(entry.canonical);
  }

  // ---------------------------------------------------------------------------------------- queries

  subjectNames(includeDeleted = false): string[] {
    const out: string[] = [];
    for (const [name, versions] of this.subjects) {
      if (includeDeleted || [...versions.values()].some((v) => !v.deleted)) out.push(name);
    }
    return out.sort();
  }

  /** versions of a subject, oldest first */
  versions(subject: string, includeDeleted = false): VersionRecord[] {
    const versions = this.subjects.get(subject);
    if (!versions) return [];
    return [...versions.values()].filter((v) => includeDeleted || !v.deleted).sort((a, b) => a.version - b.version);
  }

  hasSubject(subject: string): boolean {
    return this.subjects.has(subject);
  }

  /** highest version number the subject has ever had among the records still in the log */
  maxVersion(subject: string): number {
    let max = 0;
    for (const v of this.subjects.get(subject)?.keys() ?? []) max = Math.max(max, v);
    return max;
  }

  schemaById(id: number): { text: string; canonical: string } | undefined {
    const e = this.schemas.get(id);
    return e ? { text: e.text, canonical: e.canonical } : undefined;
  }

  /** the parsed avsc type of a schema id (parsed once) */
  typeOf(id: number): Type {
    const e = this.schemas.get(id);
    if (!e) throw new Error(`schema ${id} not found`);
    e.type ??= parseAvroSchema(e.text).type;
    return e.type;
  }

  idForCanonical(canonical: string): number | undefined {
    return this.idByCanonical.get(canonical);
  }

  /** (subject, version) pairs using a schema id */
  usagesOf(id: number, includeDeleted = false): VersionRecord[] {
    const out: VersionRecord[] = [];
    for (const versions of this.subjects.values()) {
      for (const v of versions.values()) if (v.id === id && (includeDeleted || !v.deleted)) out.push(v);
    }
    return out.sort((a, b) => (a.subject === b.subject ? a.version - b.version : a.subject < b.subject ? -1 : 1));
  }

  nextId(): number {
    return this.maxId + 1;
  }

  globalCompatibility(): CompatibilityLevel {
    return this.globalLevel ?? DEFAULT_COMPATIBILITY;
  }

  subjectCompatibility(subject: string): CompatibilityLevel | undefined {
    return this.subjectLevels.get(subject);
  }

  /** the level that applies to a subject: its own, else the global one */
  effectiveCompatibility(subject: string): CompatibilityLevel {
    return this.subjectLevels.get(subject) ?? this.globalCompatibility();
  }

  stats(): { subjects: number; schemas: number; maxId: number; skipped: number } {
    return { subjects: this.subjects.size, schemas: this.schemas.size, maxId: this.maxId, skipped: this.skipped };
  }
}
