// Migration runner over numbered `.sql` files (`clickhouse/migrations/NNNN_name.sql`).
//
// Each file is applied once, in order, and recorded in `schema_migrations` with its SHA-256. A file whose
// content changed after it was applied is refused: applied migrations are immutable, a change is a new
// file. Statements are separated by a `;` at the end of a line; each statement must be idempotent
// (`IF NOT EXISTS`), so a migration interrupted half-way can simply run again.
//
// With a cluster (`opts.cluster`, else the Db's: CLICKHOUSE_CLUSTER in services/common/config.ts) each statement is rendered at apply time for
// replicated, sharded tables (clickhouse/cluster-ddl.ts); the files and their checksums stay as they are.
// Without one, the statements run exactly as the files spell them.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from './client.ts';
import { ClusterRenderError, renderMigrations, schemaMigrationsDdl } from './cluster-ddl.ts';

export const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

export class MigrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationError';
  }
}

export interface Migration {
  version: number;
  name: string;
  file: string;
  checksum: string;
  statements: string[];
}

export interface MigrationResult {
  applied: string[];
  skipped: string[];
}

const FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;

export function loadMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const out: Migration[] = [];
  const seen = new Map<number, string>();
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.sql')) continue;
    const m = FILE.exec(file);
    if (!m) throw new MigrationError(`migration file ${file} does not match NNNN_name.sql`);
    const version = Number(m[1]);
    const clash = seen.get(version);
    if (clash) throw new MigrationError(`migrations ${clash} and ${file} share version ${m[1]}`);
    seen.set(version, file);
    const text = readFileSync(path.join(dir, file), 'utf8');
    out.push({
      version,
      name: m[2],
      file,
      checksum: createHash('sha256').update(text).digest('hex'),
      statements: splitStatements(text),
    });
  }
  return out;
}

/** Split on `;` at the end of a line; `--` line comments are removed first. */
export function splitStatements(sql: string): string[] {
  const withoutComments = sql
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n');
  return withoutComments
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

export async function migrate(
  db: Db,
  opts: {
    dir?: string;
    log?: (msg: string) => void;
    /** render for this ClickHouse cluster (Replicated*, Distributed, ON CLUSTER); default the Db's (CLICKHOUSE_CLUSTER) */
    cluster?: string;
  } = {},
): Promise<MigrationResult> {
  const log = opts.log ?? (() => {});
  const cluster = opts.cluster ?? db.cluster;
  const migrations = loadMigrations(opts.dir);
  // rendered before anything runs: a statement the cluster rendering does not know changes nothing
  let rendered: string[][];
  try {
    rendered = renderMigrations(migrations, cluster ? { cluster, database: db.database } : undefined);
  } catch (err) {
    if (err instanceof ClusterRenderError) throw new MigrationError(err.message);
    throw err;
  }
  await db.command(
    cluster
      ? schemaMigrationsDdl(cluster)
      : `CREATE TABLE IF NOT EXISTS schema_migrations (
      version UInt32,
      name String,
      checksum String,
      applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
    ) ENGINE = MergeTree ORDER BY version`,
  );
  const applied = new Map(
    (
      await db.query<{ version: number; name: string; checksum: string }>(
        'SELECT version, name, checksum FROM schema_migrations ORDER BY version',
      )
    ).map((r) => [Number(r.version), r]),
  );
  const result: MigrationResult = { applied: [], skipped: [] };
  // Refuse edits before applying anything, so a bad tree changes nothing.
  for (const m of migrations) {
    const prior = applied.get(m.version);
    if (prior && prior.checksum !== m.checksum) {
      throw new MigrationError(
        `migration ${m.file} was edited after it was applied (recorded checksum ${prior.checksum.slice(0, 12)}…, ` +
          `file now ${m.checksum.slice(0, 12)}…). Applied migrations are immutable: revert the edit and add a new migration.`,
      );
    }
  }
  for (const [n, m] of migrations.entries()) {
    if (applied.has(m.version)) {
      result.skipped.push(m.file);
      continue;
    }
    for (const [i, stmt] of rendered[n].entries()) {
      try {
        await db.command(stmt);
      } catch (err) {
        throw new MigrationError(`migration ${m.file}, statement ${i + 1}: ${(err as Error).message}`);
      }
    }
    await db.insert('schema_migrations', [{ version: m.version, name: m.name, checksum: m.checksum }]);
    log(`applied migration ${m.file}`);
    result.applied.push(m.file);
  }
  return result;
}
