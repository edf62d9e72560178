import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stack } from '../helpers/stack.ts';

const url = () => stack().clickhouseUrl;
const get = (q: string, extra = '') => fetch(`${url()}/?query=${encodeURIComponent(q)}${extra}`);

describe("analysts' SQL endpoint", () => {
  it('answers SELECT 1 like ClickHouse', async () => {
    const r = await get('SELECT 1');
    expect(r.status).toBe(200);
    expect(await r.text()).toBe('1\n');
    expect(r.headers.get('x-clickhouse-format')).toBe('TabSeparated');
    expect(await (await fetch(`${url()}/ping`)).text()).toBe('Ok.\n');
  });

  it('takes POST bodies, FORMAT clauses, default_format and param_ parameters', async () => {
    const r = await fetch(`${url()}/?param_n=41&param_s=${encodeURIComponent("it's")}`, {
      method: 'POST',
      body: 'SELECT {n:UInt32} + 1 AS answer, {s:String} AS s FORMAT JSONEachRow',
    });
    expect(r.status).toBe(200);
    expect(JSON.parse(await r.text())).toEqual({ answer: 42, s: "it's" });
    const j = await get('SELECT number FROM system.numbers LIMIT 3', '&default_format=JSONCompact');
    expect(((await j.json()) as { data: unknown }).data).toEqual([['0'], ['1'], ['2']].map((x) => [Number(x[0])]));
  });

  it('selects the database with `database` and lists the migrations table', async () => {
    const r = await get('SELECT currentDatabase()', '&database=system');
    expect(await r.text()).toBe('system\n');
    const t = await get(
      "SELECT count() > 0 FROM system.tables WHERE database = 'discovery' AND name = 'schema_migrations'",
    );
    expect(await t.text()).toBe('1\n');
  });

  const post = (q: string) => fetch(`${url()}/`, { method: 'POST', body: q });
  const migrations = async () =>
    Number((await (await get('SELECT count() FROM discovery.schema_migrations')).text()).trim());

  it("refuses every write, DDL, admin statement and outside access with ClickHouse's READONLY error, the data unchanged", async () => {
    const before = await migrations();
    expect(before).toBeGreaterThan(0);
    const refused = [
      // a write behind a read's first word
      'WITH x AS (SELECT 1) INSERT INTO discovery.schema_migrations SELECT * FROM discovery.schema_migrations LIMIT 1',
      'INSERT INTO schema_migrations SELECT * FROM schema_migrations LIMIT 1',
      "INSERT INTO FUNCTION file('/tmp/sd-analyst-out.csv', 'CSV', 'a UInt8') SELECT 1",
      // table functions and the scalar file(), nested in a subquery or a JOIN too
      "SELECT file('/etc/hostname')",
      "SELECT * FROM file('/etc/hostname', 'LineAsString')",
      "SELECT * FROM url('http://127.0.0.1:9/x', 'LineAsString')",
      "SELECT * FROM s3('https://bucket.s3.amazonaws.com/x.csv', 'CSV', 'a String')",
      "SELECT * FROM schema_migrations WHERE version IN (SELECT length(line) FROM file('/etc/hostname', 'LineAsString'))",
      "SELECT * FROM schema_migrations AS m JOIN (SELECT 1 AS version FROM url('http://127.0.0.1:9/x', 'LineAsString')) AS u USING version",
      "SELECT * FROM remote('127.0.0.1:9', system.one)",
      "SELECT 1 INTO OUTFILE '/tmp/sd-analyst-outfile.txt'",
      "SHOW TABLES INTO OUTFILE '/tmp/sd-analyst-outfile.txt'",
      // settings cannot be lifted
      'SELECT 1 SETTINGS readonly = 0',
      'SELECT count() FROM numbers(10) SETTINGS max_execution_time = 0',
      'SET readonly = 0',
      // DDL
      'CREATE TABLE evil (a UInt8) ENGINE = Memory',
      'DROP TABLE schema_migrations',
      'ALTER TABLE schema_migrations DELETE WHERE 1',
      'TRUNCATE TABLE schema_migrations',
      // admin
      'SYSTEM FLUSH LOGS',
      'SYSTEM SHUTDOWN',
      'KILL QUERY WHERE 1',
      'OPTIMIZE TABLE schema_migrations FINAL',
      'USE system',
    ];
    for (const q of refused) {
      const r = await post(q);
      expect(r.status, q).toBe(500); // ClickHouse answers READONLY with a 500 (exceptionCodeToHTTPStatus.cpp)
      expect(r.headers.get('x-clickhouse-exception-code'), q).toBe('164');
      expect(await r.text(), q).toMatch(/^Code: 164\. DB::Exception: .*\(READONLY\)/);
    }
    // more than one statement: the engine parses one, as a ClickHouse server does over HTTP
    for (const q of [
      'SELECT 1; INSERT INTO schema_migrations SELECT * FROM schema_migrations LIMIT 1',
      'SELECT 1; DROP TABLE schema_migrations',
    ]) {
      const r = await post(q);
      expect(r.status, q).toBe(400);
      expect(await r.text(), q).toMatch(/^Code: 62\. DB::Exception: Syntax error \(Multi-statements are not allowed\)/);
    }
    expect(await migrations()).toBe(before);
    expect(existsSync('/tmp/sd-analyst-out.csv')).toBe(false);
    expect(existsSync('/tmp/sd-analyst-outfile.txt')).toBe(false);
  });

  it('answers reads: SELECT, WITH, SHOW, DESCRIBE, EXPLAIN, EXISTS, numbers()', async () => {
    const reads: [string, RegExp][] = [
      ['WITH 2 AS x SELECT x * 21', /^42\n$/],
      ['SHOW TABLES FROM discovery', /(^|\n)schema_migrations\n/],
      ['DESCRIBE TABLE discovery.schema_migrations', /^version\t/],
      ['EXPLAIN SELECT 1', /ReadFromSystemOne/],
      ['EXISTS TABLE discovery.schema_migrations', /^1\n$/],
      ['SELECT sum(number) FROM numbers(10)', /^45\n$/],
      ["SELECT getSetting('readonly')", /^1\n$/],
      ["SELECT 'INTO OUTFILE' AS `file()`", /^INTO OUTFILE\n$/],
    ];
    for (const [q, expected] of reads) {
      const r = await post(q);
      const text = await r.text();
      expect(r.status, `${q}: ${text}`).toBe(200);
      expect(text, q).toMatch(expected);
    }
  });

  it('stops a query at the time and result bounds (TIMEOUT_EXCEEDED, TOO_MANY_ROWS_OR_BYTES)', async () => {
    const limit = await get(
      "SELECT getSetting('max_execution_time'), getSetting('max_result_rows'), getSetting('max_memory_usage')",
    );
    const [seconds, rows, memory] = (await limit.text()).trim().split('\t').map(Number);
    expect(seconds).toBeGreaterThan(0);
    expect(memory).toBeGreaterThan(0);
    const big = await get(`SELECT number FROM numbers(${rows + 1})`);
    expect(big.status).toBe(500);
    expect(big.headers.get('x-clickhouse-exception-code')).toBe('396');
  });

  it('reports engine errors with their ClickHouse code and a 4xx', async () => {
    const r = await get('SELECT * FROM no_such_table');
    expect(r.status).toBe(404);
    expect(r.headers.get('x-clickhouse-exception-code')).toBe('60');
    const s = await get('SELECT FROM WHERE');
    expect(s.status).toBe(400);
    expect(await s.text()).toMatch(/^Code: 62\. DB::Exception:.*\(SYNTAX_ERROR\)/);
  });

  it("answers the README's analyst examples", async () => {
    const readme = readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## For analysts'), readme.indexOf('## Documentation'));
    const examples = [
      ...section.matchAll(/curl '(http:\/\/127\.0\.0\.1:8123\/[^']*)'(?: --data-binary \\\n\s*'([^']*)')?/g),
    ];
    expect(examples.length).toBeGreaterThanOrEqual(2);
    for (const [, target, body] of examples) {
      const r = await fetch(target.replace('http://127.0.0.1:8123', url()), body ? { method: 'POST', body } : {});
      expect(r.status, `${target} ${body ?? ''}: ${await r.clone().text()}`).toBe(200);
    }
  });

  it('serves @clickhouse/client running in another process', () => {
    const script = `
      import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
      // the refusals below are expected: the client's own error log stays off
      const c = createClient({ url: process.env.CH_URL, log: { level: ClickHouseLogLevel.OFF } });
      const ping = await c.ping();
      const rs = await c.query({ query: 'SELECT {a:UInt8} * 2 AS doubled, version() AS v', query_params: { a: 21 }, format: 'JSONEachRow' });
      const rows = await rs.json();
      let writeError = '';
      try { await c.command({ query: 'CREATE TABLE evil (a UInt8) ENGINE = Memory' }); } catch (e) { writeError = e.code + ' ' + e.type; }
      let settingError = '';
      try { await c.query({ query: 'SELECT 1 SETTINGS readonly = 0', format: 'JSONEachRow' }); } catch (e) { settingError = e.code + ' ' + e.type; }
      await c.close();
      console.log(JSON.stringify({ ping: ping.success, rows, writeError, settingError }));
    `;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, CH_URL: url() },
      encoding: 'utf8',
    });
    const result = JSON.parse(out.trim().split('\n').pop()!);
    expect(result.ping).toBe(true);
    expect(result.rows[0].doubled).toBe(42);
    expect(result.rows[0].v).toMatch(/^\d+\.\d+/);
    expect(result.writeError).toBe('164 READONLY');
    expect(result.settingError).toBe('164 READONLY');
  });
});
