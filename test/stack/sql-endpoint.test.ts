import { execFileSync } from 'node:child_process';
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

  it('rejects writes and anything that is not a read with a ClickHouse-style 4xx', async () => {
    for (const q of [
      'CREATE TABLE x (a UInt8) ENGINE = Memory',
      'INSERT INTO schema_migrations (version) VALUES (999)',
      'DROP TABLE schema_migrations',
      'SELECT 1; DROP TABLE schema_migrations',
      "SELECT * FROM file('/etc/passwd', 'LineAsString')",
      "SELECT 1 INTO OUTFILE '/tmp/x'",
      'SET readonly = 0',
      'SYSTEM SHUTDOWN',
    ]) {
      const r = await fetch(`${url()}/`, { method: 'POST', body: q });
      expect(r.status, q).toBe(403);
      expect(r.headers.get('x-clickhouse-exception-code')).toBe('164');
      expect(await r.text()).toMatch(/^Code: 164\. DB::Exception: .*\(READONLY\)/);
    }
    const still = await get('SELECT count() FROM schema_migrations WHERE version = 999');
    expect(await still.text()).toBe('0\n');
  });

  it('reports engine errors with their ClickHouse code and a 4xx', async () => {
    const r = await get('SELECT * FROM no_such_table');
    expect(r.status).toBe(404);
    expect(r.headers.get('x-clickhouse-exception-code')).toBe('60');
    const s = await get('SELECT FROM WHERE');
    expect(s.status).toBe(400);
    expect(await s.text()).toMatch(/^Code: 62\. DB::Exception:.*\(SYNTAX_ERROR\)/);
  });

  it('serves @clickhouse/client running in another process', () => {
    const script = `
      import { createClient } from '@clickhouse/client';
      const c = createClient({ url: process.env.CH_URL });
      const ping = await c.ping();
      const rs = await c.query({ query: 'SELECT {a:UInt8} * 2 AS doubled, version() AS v', query_params: { a: 21 }, format: 'JSONEachRow' });
      const rows = await rs.json();
      let writeError = '';
      try { await c.command({ query: 'CREATE TABLE evil (a UInt8) ENGINE = Memory' }); } catch (e) { writeError = e.code + ' ' + e.type; }
      await c.close();
      console.log(JSON.stringify({ ping: ping.success, rows, writeError }));
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
  });
});
