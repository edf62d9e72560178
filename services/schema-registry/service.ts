// The registry's operations (Confluent Schema Registry semantics) over the state and the log. Reads are
// answered from memory; writes are serialized (one writer), checked, appended to the log and returned
// once applied.
import { type CompatibilityLevel, checkCompatibility, InvalidSchemaError, parseAvroSchema } from './compat.ts';
import type { RegistryLog } from './log.ts';
import {
  configKey,
  ID_WATERMARK_KEY,
  type LogRecord,
  type RegistryState,
  schemaKey,
  schemaRecord,
  type VersionRecord,
} from './state.ts';

/** An error answered as Confluent does: HTTP status + `{error_code, message}`. */
export class RegistryHttpError extends Error {
  readonly status: number;
  readonly errorCode: number;
  constructor(status: number, errorCode: number, message: string) {
    super(message);
    this.status = status;
    this.errorCode = errorCode;
  }
}

export const errors = {
  subjectNotFound: (s: string) => new RegistryHttpError(404, 40401, `Subject '${s}' not found.`),
  versionNotFound: (s: string, v: number | string) =>
    new RegistryHttpError(404, 40402, `Version ${v} not found for subject '${s}'.`),
  schemaNotFound: (what = 'Schema not found') => new RegistryHttpError(404, 40403, what),
  subjectSoftDeleted: (s: string) =>
    new RegistryHttpError(404, 40404, `Subject '${s}' was soft deleted. Set permanent=true to delete permanently`),
  subjectNotSoftDeleted: (s: string) =>
    new RegistryHttpError(404, 40405, `Subject '${s}' was not deleted first before being permanently deleted`),
  versionSoftDeleted: (s: string, v: number) =>
    new RegistryHttpError(
      404,
      40406,
      `Subject '${s}' Version ${v} was soft deleted. Set permanent=true to delete permanently`,
    ),
  versionNotSoftDeleted: (s: string, v: number) =>
    new RegistryHttpError(
      404,
      40407,
      `Subject '${s}' Version ${v} was not deleted first before being permanently deleted`,
    ),
  subjectLevelNotConfigured: (s: string) =>
    new RegistryHttpError(404, 40408, `Subject '${s}' does not have subject-level compatibility configured`),
  incompatible: (s: string, problems: string[]) =>
    new RegistryHttpError(
      409,
      409,
      `Schema being registered is incompatible with an earlier schema for subject "${s}", details: ${problems.join('; ')}`,
    ),
  invalidSchema: (message: string) => new RegistryHttpError(422, 42201, message),
  invalidVersion: (v: string) =>
    new RegistryHttpError(
      422,
      42202,
      `The specified version '${v}' is not a valid version id. Allowed values are between [1, 2^31-1] and the string "latest"`,
    ),
  invalidCompatibility: (message: string) => new RegistryHttpError(422, 42203, message),
  store: (message: string) => new RegistryHttpError(500, 50001, `Error in the backend data store: ${message}`),
};

export type VersionRef = number | 'latest';

/** Parse a version path segment: a positive 32-bit integer, `latest` or -1 (= latest). */
export function parseVersion(v: string): VersionRef {
  if (v === 'latest' || v === '-1') return 'latest';
  if (/^\d{1,10}$/.test(v)) {
    const n = Number(v);
    if (n >= 1 && n <= 2 ** 31 - 1) return n;
  }
  throw errors.invalidVersion(v);
}

export class SchemaRegistryService {
  private readonly state: RegistryState;
  private readonly log: RegistryLog;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(state: RegistryState, log: RegistryLog) {
    this.state = state;
    this.log = log;
  }

  /** one writer: each write decides on the state left by the previous one */
  private serialize<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async append(records: LogRecord[]): Promise<void> {
    try {
      await this.log.append(records);
    } catch (err) {
      throw errors.store((err as Error).message);
    }
  }

  private parse(text: string) {
    try {
      return parseAvroSchema(text);
    } catch (err) {
      if (err instanceof InvalidSchemaError) throw errors.invalidSchema(err.message);
      throw err;
    }
  }

  // ------------------------------------------------------------------------------------- reads

  subjects(includeDeleted: boolean): string[] {
    return this.state.subjectNames(includeDeleted);
  }

  versions(subject: string, includeDeleted: boolean): number[] {
    const vs = this.state.versions(subject, includeDeleted);
    if (vs.length === 0) throw errors.subjectNotFound(subject);
    return vs.map((v) => v.version);
  }

  getVersion(subject: string, version: VersionRef, includeDeleted = false): VersionRecord {
    const all = this.state.versions(subject, true);
    if (all.length === 0) throw errors.subjectNotFound(subject);
    const visible = all.filter((v) => includeDeleted || !v.deleted);
    const found = version === 'latest' ? visible.at(-1) : visible.find((v) => v.version === version);
    if (!found) {
      if (visible.length === 0 && version === 'latest') throw errors.subjectNotFound(subject);
      throw errors.versionNotFound(subject, version);
    }
    return found;
  }

  schemaById(id: number): string {
    const s = this.state.schemaById(id);
    if (!s) throw errors.schemaNotFound();
    return s.text;
  }

  usagesOf(id: number, includeDeleted: boolean): { subject: string; version: number }[] {
    if (!this.state.schemaById(id)) throw errors.schemaNotFound();
    return this.state.usagesOf(id, includeDeleted).map((v) => ({ subject: v.subject, version: v.version }));
  }

  lookup(subject: string, schemaText: string, includeDeleted: boolean): VersionRecord {
    const versions = this.state.versions(subject, includeDeleted);
    if (versions.length === 0) throw errors.subjectNotFound(subject);
    const parsed = this.parse(schemaText);
    const found = [...versions].reverse().find((v) => this.state.schemaById(v.id)?.canonical === parsed.canonical);
    if (!found) throw errors.schemaNotFound();
    return found;
  }

  globalCompatibility(): CompatibilityLevel {
    return this.state.globalCompatibility();
  }

  subjectCompatibility(subject: string, defaultToGlobal: boolean): CompatibilityLevel {
    const level = this.state.subjectCompatibility(subject);
    if (level) return level;
    if (defaultToGlobal) return this.state.globalCompatibility();
    throw errors.subjectLevelNotConfigured(subject);
  }

  /** Is `schemaText` compatible with one version (`version`) or, when omitted, with what the level demands? */
  testCompatibility(subject: string, version: VersionRef | undefined, schemaText: string): string[] {
    const parsed = this.parse(schemaText);
    const level = this.state.effectiveCompatibility(subject);
    const live = this.state.versions(subject);
    if (version === undefined) {
      return checkCompatibility(
        level,
        parsed.type,
        live.map((v) => ({ version: v.version, type: this.state.typeOf(v.id) })),
      );
    }
    if (live.length === 0 && version === 'latest') return [];
    const v = this.getVersion(subject, version);
    const nonTransitive = level.replace('_TRANSITIVE', '') as CompatibilityLevel;
    return checkCompatibility(nonTransitive, parsed.type, [{ version: v.version, type: this.state.typeOf(v.id) }]);
  }

  // ------------------------------------------------------------------------------------- writes

  /** Register a schema under a subject; an identical live schema returns its existing id. */
  register(subject: string, schemaText: string): Promise<{ id: number; version: number; created: boolean }> {
    const parsed = this.parse(schemaText);
    const same = (): VersionRecord | undefined =>
      this.state.versions(subject).find((v) => this.state.schemaById(v.id)?.canonical === parsed.canonical);
    const known = same();
    if (known) return Promise.resolve({ id: known.id, version: known.version, created: false });
    return this.serialize(async () => {
      const again = same();
      if (again) return { id: again.id, version: again.version, created: false };
      const live = this.state.versions(subject);
      const level = this.state.effectiveCompatibility(subject);
      const problems = checkCompatibility(
        level,
        parsed.type,
        live.map((v) => ({ version: v.version, type: this.state.typeOf(v.id) })),
      );
      if (problems.length) throw errors.incompatible(subject, problems);
      const existingId = this.state.idForCanonical(parsed.canonical);
      const id = existingId ?? this.state.nextId();
      const text = existingId ? (this.state.schemaById(existingId)?.text ?? parsed.text) : parsed.text;
      const version = this.state.maxVersion(subject) + 1;
      const records: LogRecord[] = [];
      if (existingId === undefined) records.push({ key: ID_WATERMARK_KEY, value: JSON.stringify({ max_id: id }) });
      records.push(schemaRecord({ subject, version, id, schema: text, deleted: false }));
      await this.append(records);
      return { id, version, created: true };
    });
  }

  setGlobalCompatibility(level: CompatibilityLevel): Promise<void> {
    return this.serialize(() =>
      this.append([{ key: configKey(null), value: JSON.stringify({ compatibilityLevel: level }) }]),
    );
  }

  setSubjectCompatibility(subject: string, level: CompatibilityLevel): Promise<void> {
    return this.serialize(() =>
      this.append([{ key: configKey(subject), value: JSON.stringify({ compatibilityLevel: level }) }]),
    );
  }

  deleteSubjectCompatibility(subject: string): Promise<CompatibilityLevel> {
    return this.serialize(async () => {
      const level = this.state.subjectCompatibility(subject);
      if (!level) throw errors.subjectLevelNotConfigured(subject);
      await this.append([{ key: configKey(subject), value: null }]);
      return level;
    });
  }

  /** Soft delete (hidden, id still resolvable) or, for an already soft-deleted version, permanent delete. */
  deleteVersion(subject: string, version: VersionRef, permanent: boolean): Promise<number> {
    return this.serialize(async () => {
      const all = this.state.versions(subject, true);
      if (all.length === 0) throw errors.subjectNotFound(subject);
      const target =
        version === 'latest'
          ? (permanent ? all : all.filter((v) => !v.deleted)).at(-1)
          : all.find((v) => v.version === version);
      if (!target) throw errors.versionNotFound(subject, version);
      if (permanent) {
        if (!target.deleted) throw errors.versionNotSoftDeleted(subject, target.version);
        await this.append([{ key: schemaKey(subject, target.version), value: null }]);
      } else {
        if (target.deleted) throw errors.versionSoftDeleted(subject, target.version);
        await this.append([schemaRecord({ ...target, deleted: true })]);
      }
      return target.version;
    });
  }

  /** Soft-delete every live version of a subject, or permanently delete an already soft-deleted subject. */
  deleteSubject(subject: string, permanent: boolean): Promise<number[]> {
    return this.serialize(async () => {
      const all = this.state.versions(subject, true);
      if (all.length === 0) throw errors.subjectNotFound(subject);
      const live = all.filter((v) => !v.deleted);
      if (permanent) {
        if (live.length > 0) throw errors.subjectNotSoftDeleted(subject);
        const records: LogRecord[] = all.map((v) => ({ key: schemaKey(subject, v.version), value: null }));
        if (this.state.subjectCompatibility(subject)) records.push({ key: configKey(subject), value: null });
        await this.append(records);
        return all.map((v) => v.version);
      }
      if (live.length === 0) throw errors.subjectSoftDeleted(subject);
      await this.append(live.map((v) => schemaRecord({ ...v, deleted: true })));
      return live.map((v) => v.version);
    });
  }
}
