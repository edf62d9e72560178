import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { MigrationError, migrate, splitStatements } from '../../clickhouse/migrate.ts';
import { privateDb } from '../helpers/chdb.ts';

let db: Db;
beforeAll(async () => {
  db = await privateDb(`mig_${process.pid}`);
});
afterAll(async () => {
  await db?.close();
});

function migrationsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sd-mig-'));
  for (const [name, sql] of Object.entries(files)) writeFileSync(path.join(dir, name), sql);
  return dir;
}

describe('migration runner', () => {
  it('applies each migration once; a second run is a no-op', async () => {
    const dir = migrationsDir({
      '0001_widgets.sql':
        '-- a table\nCREATE TABLE IF NOT EXISTS widgets (id UInt32, name String) ENGINE = MergeTree ORDER BY id;\n',
      '0002_seed.sql': "INSERT INTO widgets VALUES (1, 'one');\nINSERT INTO widgets VALUES (2, 'two;not a split');\n",
    });
    const first = await migrate(db, { dir });
    expect(first.applied).toEqual(['0001_widgets.sql', '0002_seed.sql']);
    const second = await migrate(db, { dir });
    expect(second.applied).toEqual([]);
    expect(second.skipped).toEqual(['0001_widgets.sql', '0002_seed.sql']);
    const rows = await db.query<{ n: string }>('SELECT count() AS n FROM widgets');
    expect(Number(rows[0].n)).toBe(2);
    const recorded = await db.query<{ version: number; checksum: string }>(
      'SELECT version, checksum FROM schema_migrations ORDER BY version',
    );
    expect(recorded.map((r) => r.version)).toEqual([1, 2]);
    expect(recorded[0].checksum).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses an edited, already-applied migration and applies nothing', async () => {
    const dir = migrationsDir({
      '0001_widgets.sql':
        'CREATE TABLE IF NOT EXISTS widgets (id UInt32, name String) ENGINE = MergeTree ORDER BY id;\n',
    });
    writeFileSync(
      path.join(dir, '0001_widgets.sql'),
      'CREATE TABLE IF NOT EXISTS widgets (id UInt64) ENGINE = MergeTree ORDER BY id;\n',
    );
    writeFileSync(
      path.join(dir, '0003_more.sql'),
      'CREATE TABLE IF NOT EXISTS more (id UInt8) ENGINE = MergeTree ORDER BY id;\n',
    );
    await expect(migrate(db, { dir })).rejects.toThrow(MigrationError);
    await expect(migrate(db, { dir })).rejects.toThrow(/0001_widgets\.sql was edited after it was applied/);
    const more = await db.query<{ n: string }>(
      "SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'more'",
    );
    expect(Number(more[0].n)).toBe(0);
  });

  it('rejects badly named files', async () => {
    const dir = migrationsDir({ 'widgets.sql': 'SELECT 1;' });
    await expect(migrate(db, { dir })).rejects.toThrow(/NNNN_name\.sql/);
  });

  it('splits statements on line-ending semicolons only', () => {
    expect(splitStatements("SELECT 'a;b';\n-- note;\nSELECT 2;")).toEqual(["SELECT 'a;b'", 'SELECT 2']);
  });
});

describe('query helpers', () => {
  it('passes values only as server-side parameters', async () => {
    await db.command(
      'CREATE TABLE IF NOT EXISTS people (store_id String, name String) ENGINE = MergeTree ORDER BY (store_id, name)',
    );
    await db.insert('people', [
      { store_id: 's1', name: "O'Brien" },
      { store_id: 's2', name: 'x' },
    ]);
    const hostile = "s1' OR 1=1 --";
    expect(await db.query('SELECT name FROM people WHERE store_id = {store:String}', { store: hostile })).toEqual([]);
    expect(await db.query('SELECT name FROM people WHERE store_id = {store:String}', { store: 's1' })).toEqual([
      { name: "O'Brien" },
    ]);
    const arr = await db.query<{ n: string }>('SELECT count() AS n FROM people WHERE store_id IN {ids:Array(String)}', {
      ids: ['s1', 's2'],
    });
    expect(Number(arr[0].n)).toBe(2);
  });

  it('drops a repeated insert with the same dedup token, in the table and in dependent views', async () => {
    await db.command(
      'CREATE TABLE IF NOT EXISTS ev (k String) ENGINE = MergeTree ORDER BY k SETTINGS non_replicated_deduplication_window = 1000',
    );
    await db.command(
      'CREATE TABLE IF NOT EXISTS ev_count (n UInt64) ENGINE = SummingMergeTree ORDER BY tuple() SETTINGS non_replicated_deduplication_window = 1000',
    );
    await db.command('CREATE MATERIALIZED VIEW IF NOT EXISTS ev_count_mv TO ev_count AS SELECT count() AS n FROM ev');
    for (let i = 0; i < 3; i++) await db.insert('ev', [{ k: 'a' }, { k: 'b' }], { dedupToken: 'topic/0/10-11' });
    // an insert without a token afterwards must not inherit the previous token
    await db.insert('ev', [{ k: 'a' }, { k: 'b' }]);
    const [row] = await db.query<{ t: string; v: string }>(
      'SELECT (SELECT count() FROM ev) AS t, (SELECT sum(n) FROM ev_count) AS v',
    );
    expect(Number(row.t)).toBe(4);
    expect(Number(row.v)).toBe(4);
  });

  it('refuses identifiers that are not plain names', async () => {
    await expect(db.insert('people; DROP TABLE people', [{ a: 1 }])).rejects.toThrow(/identifier/);
  });
});
