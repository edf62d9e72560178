// The analysts' read-only session over chDB: a session of its own on the app's data directory. It sees the
// app's rows, the engine refuses its writes (readonly=1), and nothing of it reaches the app's session.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db, ReadOnlySession } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { type AnalystSql, openAnalystSql } from '../../clickhouse/readonly.ts';
import { privateDb } from '../helpers/chdb.ts';

const DB = 'readonly_session_test';
let db: Db;
let session: ReadOnlySession;
let analyst: AnalystSql;

beforeAll(async () => {
  db = await privateDb(DB);
  await db.command(`CREATE TABLE IF NOT EXISTS ${DB}.t (x UInt32) ENGINE = MergeTree ORDER BY x`);
  await db.command(`TRUNCATE TABLE ${DB}.t`);
  session = await db.openReadOnlySession({ max_execution_time: 2, max_result_rows: 1_000_000, max_threads: 1 });
  analyst = await openAnalystSql(db, {
    maxExecutionSeconds: 2,
    maxResultRows: 10_000,
    maxResultBytes: 1e8,
    maxMemoryBytes: 1e9,
    maxThreads: 1,
  });
});
afterAll(async () => {
  await analyst?.close();
  await session?.close();
  await db?.close();
});

const read = async (s: ReadOnlySession, sql: string) =>
  (await s.exec(sql, { database: DB, format: 'TabSeparated' })).toString().trim();
const failure = (p: Promise<unknown>) =>
  p.then(
    () => 'no error',
    (e: { code?: unknown; type?: unknown }) => `${e.code} ${e.type}`,
  );

describe("analysts' read-only session", () => {
  it("sees rows the app's session writes after it opened", async () => {
    await db.insert(`${DB}.t`, [{ x: 1 }, { x: 2 }]);
    expect(await read(session, 'SELECT count() FROM t')).toBe('2');
  });

  it('is refused writes by the engine itself (readonly=1), and cannot lift it or its limits', async () => {
    expect(await failure(session.exec('INSERT INTO t VALUES (3)', { database: DB, format: 'TabSeparated' }))).toBe(
      '164 READONLY',
    );
    for (const sql of [
      'SET readonly = 0',
      'SELECT 1 SETTINGS readonly = 0',
      'SELECT 1 SETTINGS max_execution_time = 0',
    ]) {
      expect(await failure(session.exec(sql, { database: DB, format: 'TabSeparated' })), sql).toBe('164 READONLY');
    }
    expect(await read(session, "SELECT getSetting('readonly'), getSetting('max_result_rows')")).toBe('1\t1000000');
  });

  it("leaves the app's session writable and its settings untouched", async () => {
    const [row] = await db.query<{ ro: string; rows: string }>(
      "SELECT getSetting('readonly') AS ro, getSetting('max_result_rows') AS rows",
    );
    expect(row).toEqual({ ro: 0, rows: 0 });
    await db.insert(`${DB}.t`, [{ x: 4 }]);
    expect(await read(session, 'SELECT count() FROM t')).toBe('3');
  });

  it("does not hold up the app's queries while a long analyst query runs", async () => {
    const order: string[] = [];
    const long = failure(
      session.exec('SELECT count() FROM numbers(1e13)', { database: DB, format: 'TabSeparated' }),
    ).then((outcome) => order.push(`analyst ${outcome}`));
    await db.insert(`${DB}.t`, [{ x: 5 }]);
    await db.query(`SELECT count() FROM ${DB}.t`);
    order.push('app insert and read');
    await long;
    expect(order).toEqual(['app insert and read', 'analyst 159 TIMEOUT_EXCEEDED']);
  });

  it("never hands a failed query's partial output to the next statement", async () => {
    // the engine writes the first blocks (65 505 rows each) before the throwIf in a later one fails
    expect(
      await failure(
        session.exec('SELECT throwIf(number = 200000) FROM numbers(300000)', { database: DB, format: 'TabSeparated' }),
      ),
    ).toBe('395 FUNCTION_THROW_IF_VALUE_IS_NON_ZERO');
    expect(await read(session, "SELECT 'next'")).toBe('next');
  });

  it('refuses, with the engine parser, what readonly=1 leaves open: KILL, USE, INTO OUTFILE, file(), two statements', async () => {
    const opts = { database: DB, format: 'TabSeparated' };
    for (const sql of [
      'KILL QUERY WHERE 1',
      'USE system',
      "SELECT 1 INTO OUTFILE '/tmp/sd-ro-test.txt'",
      "SELECT file('/etc/hostname')",
    ]) {
      expect(await failure(analyst.run(sql, opts)), sql).toBe('164 READONLY');
    }
    expect(await failure(analyst.run('SELECT 1; SELECT 2', opts))).toBe('62 SYNTAX_ERROR');
    expect((await analyst.run('SELECT {n:UInt8} + 1', { ...opts, params: { n: '41' } })).toString()).toBe('42\n');
    expect((await analyst.run('SELECT currentDatabase()', { ...opts, database: 'system' })).toString()).toBe(
      'system\n',
    );
  });

  it("runs every docs/analytics.md example under the analysts' limits", async () => {
    const docsDb = `docs_ro_${Date.now()}`;
    const app = await privateDb(docsDb);
    try {
      await migrate(app);
      const text = readFileSync(path.resolve(import.meta.dirname, '../../docs/analytics.md'), 'utf8');
      const statements = [...text.matchAll(/```sql\n([\s\S]*?)```/g)].flatMap((m) =>
        m[1]
          .replace(/--.*$/gm, '')
          .split(/;\s*(?:\n|$)/)
          .map((s) => s.trim())
          .filter(Boolean),
      );
      expect(statements.length).toBeGreaterThan(15);
      const failures: string[] = [];
      for (const sql of statements) {
        await analyst
          .run(sql, { database: docsDb, format: 'JSONEachRow', params: { store: 'docs_store' } })
          .catch((e: Error) => failures.push(`${sql.slice(0, 100)} → ${e.message.split('\n')[0]}`));
      }
      expect(failures).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
