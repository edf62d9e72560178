// The ClickHouse stand-in of distributed mode (clickhouse/http-server.ts): chDB behind ClickHouse's HTTP
// interface, read-write. Our own Db (clickhouse/client.ts, openDb with a url: the HTTP code path of
// @clickhouse/client every distributed process runs) migrates, inserts with dedup tokens and binds
// parameters through it; errors come back as ClickHouse sends them.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Db, openDb } from '../../clickhouse/client.ts';
import { type ClickHouseServer, startClickHouseServer } from '../../clickhouse/http-server.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { createLogger } from '../../services/common/logger.ts';

const USER = 'writer';
const PASSWORD = 'stand-in secret';
const MAX_BODY = 256 * 1024;

let dir: string;
let server: ClickHouseServer;
let db: Db;

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const auth = { authorization: basic(USER, PASSWORD) };

async function post(qs: string, body: string | Buffer, headers: Record<string, string> = auth) {
  const r = await fetch(`${server.url}/?${qs}`, { method: 'POST', headers, body });
  return { status: r.status, code: r.headers.get('x-clickhouse-exception-code'), text: await r.text() };
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'sd-standin-'));
  server = await startClickHouseServer({
    chdbPath: path.join(dir, 'clickhouse'),
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('standin-test', 'error'),
    user: USER,
    password: PASSWORD,
    maxBodyBytes: MAX_BODY,
  });
  db = await openDb({ url: server.url, database: 'standin_test', username: USER, password: PASSWORD });
}, 60_000);

afterAll(async () => {
  await db?.close();
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the migrations run through the stand-in, and a second run applies nothing', { timeout: 180_000 }, async () => {
  const first = await migrate(db, { log: () => {} });
  expect(first.applied.length).toBeGreaterThan(10);
  const tables = await db.query<{ name: string }>(
    'SELECT name FROM system.tables WHERE database = {d:String} ORDER BY name',
    { d: 'standin_test' },
  );
  expect(tables.map((t) => t.name)).toEqual(expect.arrayContaining(['events_raw', 'product_daily_engagement']));
  const second = await migrate(db, { log: () => {} });
  expect(second.applied).toEqual([]);
});

test('an insert retried with the same dedup token is written once, in the table and its materialized view', async () => {
  await db.command(
    'CREATE TABLE IF NOT EXISTS dedup_src (k String, n UInt32) ENGINE = MergeTree ORDER BY k SETTINGS non_replicated_deduplication_window = 100',
  );
  await db.command(
    'CREATE TABLE IF NOT EXISTS dedup_sum (k String, n UInt64) ENGINE = SummingMergeTree ORDER BY k SETTINGS non_replicated_deduplication_window = 100',
  );
  await db.command('CREATE MATERIALIZED VIEW IF NOT EXISTS dedup_mv TO dedup_sum AS SELECT k, n FROM dedup_src');
  const rows = [
    { k: 'a', n: 1 },
    { k: 'b', n: 2 },
  ];
  await db.insert('dedup_src', rows, { dedupToken: 'batch-1' });
  await db.insert('dedup_src', rows, { dedupToken: 'batch-1' });
  await db.insert('dedup_src', [{ k: 'a', n: 5 }], { dedupToken: 'batch-2' });
  expect(await db.query('SELECT k, toUInt32(sum(n)) AS n FROM dedup_src GROUP BY k ORDER BY k')).toEqual([
    { k: 'a', n: 6 },
    { k: 'b', n: 2 },
  ]);
  expect(await db.query('SELECT k, toUInt32(sum(n)) AS n FROM dedup_sum GROUP BY k ORDER BY k')).toEqual([
    { k: 'a', n: 6 },
    { k: 'b', n: 2 },
  ]);
  // the token is a setting of its own insert only: the same rows under another token are a new block
  await db.insert('dedup_src', [{ k: 'c', n: 1 }], { dedupToken: 'batch-3' });
  await db.insert('dedup_src', [{ k: 'c', n: 1 }], { dedupToken: 'batch-4' });
  expect(await db.query("SELECT count() AS c FROM dedup_src WHERE k = 'c'")).toEqual([{ c: 2 }]);
});

test('parameters arrive as the client bound them: quotes, backslashes, control characters, arrays, numbers', async () => {
  const tricky = "it's a \\ back\tslash\nand 'quotes'";
  const rows = await db.query<{ s: string; arr: string[]; n: number; len: number }>(
    'SELECT {s:String} AS s, {arr:Array(String)} AS arr, {n:UInt32} + 1 AS n, length({s:String}) AS len',
    { s: tricky, arr: ["x'y", 'z\\w', ''], n: 41 },
  );
  expect(rows).toEqual([{ s: tricky, arr: ["x'y", 'z\\w', ''], n: 42, len: Buffer.byteLength(tricky) }]);
});

describe('errors, as ClickHouse answers them', () => {
  test('an unknown table: 404, X-ClickHouse-Exception-Code 60, and a ClickHouseError with the code from our Db', async () => {
    await expect(db.query('SELECT * FROM no_such_table')).rejects.toMatchObject({ code: '60', type: 'UNKNOWN_TABLE' });
    const r = await post('database=standin_test', 'SELECT * FROM no_such_table');
    expect(r.status).toBe(404);
    expect(r.code).toBe('60');
    expect(r.text).toMatch(/^Code: 60\. DB::Exception: .*no_such_table.*\(UNKNOWN_TABLE\) \(version [\d.]+\)\n$/);
  });

  test('a syntax error is a 400 with code 62; two statements in one request are refused the same way', async () => {
    expect(await post('', 'SELEC 1')).toMatchObject({ status: 400, code: '62' });
    const multi = await post('', 'SELECT 1; SELECT 2');
    expect(multi).toMatchObject({ status: 400, code: '62' });
    expect(multi.text).toContain('Multi-statements are not allowed');
  });

  test('wrong or missing credentials: 401 with 516 / 194; nothing runs', async () => {
    expect(await post('', 'SELECT 1', { authorization: basic(USER, 'wrong') })).toMatchObject({
      status: 401,
      code: '516',
    });
    expect(await post('', 'SELECT 1', {})).toMatchObject({ status: 401, code: '194' });
    expect(await post('', 'SELECT 1', { 'x-clickhouse-user': USER, 'x-clickhouse-key': PASSWORD })).toMatchObject({
      status: 200,
      text: '1\n',
    });
  });

  test('a body over the limit is refused with a 413 before it is buffered', async () => {
    const big = Buffer.alloc(MAX_BODY + 1, 'x');
    const r = await post(`query=${encodeURIComponent('INSERT INTO standin_test.dedup_src FORMAT JSONEachRow')}`, big);
    expect(r.status).toBe(413);
    expect(r.text).toContain(`over ${MAX_BODY} bytes`);
  });

  test('a setting outside the allow-list is refused (403, 452); readonly=1 refuses a write (164)', async () => {
    expect(await post('allow_ddl=1', 'SELECT 1')).toMatchObject({ status: 403, code: '452' });
    const r = await post('readonly=1&database=standin_test', "INSERT INTO dedup_src VALUES ('ro', 1)");
    expect(r).toMatchObject({ status: 500, code: '164' });
    expect(await db.query("SELECT count() AS c FROM dedup_src WHERE k = 'ro'")).toEqual([{ c: 0 }]);
  });
});

test('settings apply to their own request only, never to the next one on the same engine session', async () => {
  const get = (qs: string) => post(qs, "SELECT getSetting('max_result_rows')");
  const before = await get('');
  // more requests than the pool has sessions, so every session gets one and must be put back
  for (let i = 0; i < 8; i++) expect(await get('max_result_rows=7')).toMatchObject({ status: 200, text: '7\n' });
  for (let i = 0; i < 8; i++) expect(await get('')).toMatchObject({ status: 200, text: before.text });
  // a statement's own SET changes nothing beyond it (no HTTP session)
  expect(await post('', 'SET max_result_rows = 3')).toMatchObject({ status: 200 });
  expect(await get('')).toMatchObject({ text: before.text });
  // readonly requests keep their limits; a write request afterwards still writes
  expect(await post('readonly=1&max_result_rows=1', 'SELECT number FROM numbers(5)')).toMatchObject({
    status: 500,
    code: '396',
  });
  await db.insert('dedup_src', [{ k: 'after-ro', n: 1 }]);
  expect(await db.query("SELECT count() AS c FROM dedup_src WHERE k = 'after-ro'")).toEqual([{ c: 1 }]);
});

test('query_id, database, default_format and gzip are honoured as on the server', async () => {
  const r = await fetch(
    `${server.url}/?query_id=q-123&database=standin_test&default_format=JSONEachRow&enable_http_compression=1`,
    {
      method: 'POST',
      headers: { ...auth, 'accept-encoding': 'gzip' },
      body: 'SELECT currentDatabase() AS d',
    },
  );
  expect(r.status).toBe(200);
  expect(r.headers.get('x-clickhouse-query-id')).toBe('q-123');
  expect(r.headers.get('content-encoding')).toBe('gzip');
  expect(r.headers.get('content-type')).toContain('application/x-ndjson');
  expect(await r.json()).toEqual({ d: 'standin_test' });
  const ping = await fetch(`${server.url}/ping`, { headers: auth });
  expect(await ping.text()).toBe('Ok.\n');
});
