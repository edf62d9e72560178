// The ClickHouse stand-in of distributed mode: chDB behind ClickHouse's HTTP interface, read-write.
//
// No ClickHouse server can be installed on the project's machines, so one process owns
// DATA_DIR/clickhouse (chDB binds one data directory per process) and serves it over HTTP; every other
// process (intake, processors, read API, …) sets CLICKHOUSE_URL and runs the same @clickhouse/client HTTP
// code path it would run against a real server (clickhouse/client.ts, openDb with `url`).
//
// What it speaks, as a ClickHouse server does for @clickhouse/client:
// - `POST /?query=…` and/or the query in the body (a body after a URL query is appended to it: the rows
//   of `INSERT … FORMAT f`), GET for reads (GET runs under readonly=2, as on the server);
// - `database`, `query_id` (echoed in X-ClickHouse-Query-Id), `param_<name>` server-side parameters
//   (handed to the engine in their wire form, exactly as the client escaped them), `default_format` or a
//   FORMAT clause, gzip request bodies, gzip responses with `enable_http_compression=1`, `/ping`;
// - settings as URL parameters, from an allow-list (ALLOWED_SETTINGS); HTTP-layer settings the client
//   sends (wait_end_of_query, …) are accepted and have no effect (results are materialized anyway);
// - errors in ClickHouse's text form with its status and X-ClickHouse-Exception-Code;
// - optional Basic / X-ClickHouse-User+Key / user+password auth against CLICKHOUSE_USER/PASSWORD.
//
// Per-request settings: ClickHouse's HTTP interface without session_id has no session state, chDB's
// sessions do. Requests run on a pool of chDB sessions, one statement at a time each; a request's
// settings are SET on its session and put back to DEFAULT afterwards (a session whose reset fails is
// discarded). `readonly` can never be unset once set, so read-only requests run on sessions of their own,
// one per distinct settings set, created read-only and kept (a few, least recently used first out).
// A request carries exactly one statement: no multi-statements, and a statement's own SET / USE changes
// nothing beyond it (as over HTTP without a session), so no request's state reaches another's.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Logger } from '../services/common/logger.ts';
import { counter, histogram } from '../services/common/metrics.ts';
import { assertIdentifier } from './client.ts';
import { contentTypeOf, declaredFormat, HttpError, readBody, toHttpError, writeError } from './http-protocol.ts';

const require = createRequire(import.meta.url);

interface ChdbResult {
  bytes: Uint8Array;
  elapsed: number;
  rowsRead: number;
  bytesRead: number;
}
interface ChdbSession {
  connection: unknown;
  queryAsync(sql: string, opts?: { format?: string }): Promise<{ bytes(): Uint8Array; rowsRead: number }>;
  close(): void;
}
interface ChdbNative {
  QueryAsyncConnection(conn: unknown, sql: string, format: string, bound?: Record<string, string>): Promise<ChdbResult>;
}

const requests = counter('clickhouse_standin_requests_total', 'Requests to the ClickHouse stand-in', ['outcome']);
const latency = histogram('clickhouse_standin_request_seconds', 'Latency of the ClickHouse stand-in');

/** Engine settings a request may set as URL parameters (besides the prefixes below). */
const ALLOWED_SETTINGS = new Set([
  'readonly',
  'max_execution_time',
  'timeout_overflow_mode',
  'max_result_rows',
  'max_result_bytes',
  'result_overflow_mode',
  'max_rows_to_read',
  'max_bytes_to_read',
  'read_overflow_mode',
  'max_memory_usage',
  'max_threads',
  'max_block_size',
  'max_insert_block_size',
  'insert_deduplicate',
  'insert_deduplication_token',
  'deduplicate_blocks_in_dependent_materialized_views',
  'join_use_nulls',
  'session_timezone',
  'mutations_sync',
  'optimize_throw_if_noop',
  'allow_experimental_analyzer',
  'enable_analyzer',
]);
const ALLOWED_PREFIXES = ['input_format_', 'output_format_', 'format_', 'date_time_'];
/** HTTP-layer settings: accepted, no effect on the stand-in (it materializes results before answering). */
const HTTP_ONLY = new Set([
  'wait_end_of_query',
  'send_progress_in_http_headers',
  'http_headers_progress_interval_ms',
  'http_wait_end_of_query',
  'http_response_buffer_size',
  'http_zlib_compression_level',
  'http_native_compression_disable_checksumming_on_decompress',
  'cancel_http_readonly_queries_on_client_close',
  'buffer_size',
  'compress',
  'decompress',
  'client_protocol_version',
]);
/** URL parameters that are not settings. */
const NOT_SETTINGS = new Set([
  'query',
  'database',
  'default_format',
  'query_id',
  'user',
  'password',
  'quota_key',
  'enable_http_compression',
]);

export interface ClickHouseServerOptions {
  /** the chDB data directory this process owns (DATA_DIR/clickhouse) */
  chdbPath: string;
  host: string;
  port: number;
  logger: Logger;
  /** CLICKHOUSE_USER / CLICKHOUSE_PASSWORD: when a user is set, every request must present both */
  user?: string;
  password?: string;
  /** request bodies (INSERT rows included) beyond this are refused with a 413 */
  maxBodyBytes?: number;
  /** read-write chDB sessions statements run on side by side */
  sessions?: number;
}

export interface ClickHouseServer {
  port: number;
  url: string;
  version: string;
  close(): Promise<void>;
}

interface PooledSession {
  session: ChdbSession;
  database: string | undefined;
  tail: Promise<unknown>;
  pending: number;
  /** read-only sessions: the settings key they were created under */
  key?: string;
  /** read-only sessions: their SET (settings, then readonly) succeeded */
  readOnly?: boolean;
}

export async function startClickHouseServer(opts: ClickHouseServerOptions): Promise<ClickHouseServer> {
  const { logger } = opts;
  const maxBodyBytes = opts.maxBodyBytes ?? 256 * 1024 * 1024;
  const chdbPath = path.resolve(opts.chdbPath);
  const chdb = require('chdb') as { Session: new (path: string) => ChdbSession };
  const native = require(path.join(path.dirname(require.resolve('chdb')), 'dist/loader.js')).loadNative() as ChdbNative;
  const credentials = opts.user !== undefined ? digest(`${opts.user}\0${opts.password ?? ''}`) : undefined;

  const pool: PooledSession[] = [];
  const open = (key?: string): PooledSession => ({
    session: new chdb.Session(chdbPath),
    database: undefined,
    tail: Promise.resolve(),
    pending: 0,
    key,
  });
  for (let i = 0; i < Math.max(1, opts.sessions ?? 4); i++) pool.push(open());
  const readOnly = new Map<string, PooledSession>();
  const MAX_READONLY_SESSIONS = 8;
  // chDB runs parameter-bound statements one at a time in the whole process (its own queryBindAsync
  // does the same): the bound values are not per-connection state in libchdb
  let paramTail: Promise<unknown> = Promise.resolve();

  const [versionRow] = parseJsonEachRow(
    Buffer.from((await pool[0].session.queryAsync('SELECT version() AS v', { format: 'JSONEachRow' })).bytes()),
  );
  const version = String(versionRow?.v ?? 'unknown');

  /** Run `fn` on `s` after everything queued on it. */
  function onSession<T>(s: PooledSession, fn: () => Promise<T>): Promise<T> {
    s.pending++;
    const run = s.tail.then(fn, fn);
    s.tail = run.then(
      () => s.pending--,
      () => s.pending--,
    );
    return run;
  }

  async function exec(s: PooledSession, sql: string, format: string, params: Record<string, string>) {
    if (Object.keys(params).length === 0) return native.QueryAsyncConnection(s.session.connection, sql, format);
    const run = () => native.QueryAsyncConnection(s.session.connection, sql, format, params);
    const result = paramTail.then(run, run);
    paramTail = result.catch(() => undefined);
    return result;
  }

  async function useDatabase(s: PooledSession, database: string) {
    if (s.database === database) return;
    s.database = undefined;
    await native.QueryAsyncConnection(s.session.connection, `USE ${database}`, 'TabSeparated');
    s.database = database;
  }

  function readOnlySession(settings: Map<string, string>): PooledSession {
    const key = [...settings].map(([k, v]) => `${k}=${v}`).join('&');
    let s = readOnly.get(key);
    if (s) {
      readOnly.delete(key);
      readOnly.set(key, s); // most recently used last
      return s;
    }
    s = open(key);
    readOnly.set(key, s);
    while (readOnly.size > MAX_READONLY_SESSIONS) {
      const [oldKey, old] = readOnly.entries().next().value as [string, PooledSession];
      readOnly.delete(oldKey);
      void old.tail.then(() => old.session.close());
    }
    return s;
  }

  async function runStatement(req: {
    sql: string;
    database: string;
    format: string;
    params: Record<string, string>;
    settings: Map<string, string>;
  }): Promise<ChdbResult> {
    const ro = req.settings.get('readonly');
    if (ro !== undefined && ro !== '0') {
      const s = readOnlySession(req.settings);
      return onSession(s, async () => {
        if (!s.readOnly) {
          // readonly last: once it holds, no setting changes any more; nothing runs on the session before
          // this SET succeeded
          const assignments = [...req.settings].map(([k, v]) => `${k} = ${literal(v)}`);
          const ro = assignments.splice([...req.settings.keys()].indexOf('readonly'), 1);
          await native.QueryAsyncConnection(
            s.session.connection,
            `SET ${[...assignments, ...ro].join(', ')}`,
            'TabSeparated',
          );
          s.readOnly = true;
        }
        await useDatabase(s, req.database);
        return exec(s, req.sql, req.format, req.params);
      });
    }
    const settings = [...req.settings].filter(([k]) => k !== 'readonly');
    const s = pool.reduce((a, b) => (b.pending < a.pending ? b : a));
    return onSession(s, async () => {
      await useDatabase(s, req.database);
      if (settings.length === 0) return exec(s, req.sql, req.format, req.params);
      try {
        await native.QueryAsyncConnection(
          s.session.connection,
          `SET ${settings.map(([k, v]) => `${k} = ${literal(v)}`).join(', ')}`,
          'TabSeparated',
        );
        return await exec(s, req.sql, req.format, req.params);
      } finally {
        await native
          .QueryAsyncConnection(
            s.session.connection,
            `SET ${settings.map(([k]) => `${k} = DEFAULT`).join(', ')}`,
            'TabSeparated',
          )
          .catch((err) => {
            // the session keeps a setting another request must not see: replace it
            logger.warn(
              { err: (err as Error).message },
              'clickhouse stand-in: settings reset failed, session replaced',
            );
            const i = pool.indexOf(s);
            if (i >= 0) pool[i] = open();
            void s.tail.then(() => s.session.close());
          });
      }
    });
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      logger.error({ err }, 'clickhouse stand-in failure');
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const started = process.hrtime.bigint();
    const queryId = url.searchParams.get('query_id') || randomUUID();
    const headers: Record<string, string> = {
      'x-clickhouse-query-id': queryId,
      'x-clickhouse-timezone': 'UTC',
      'x-clickhouse-server-display-name': 'storefront-discovery-chdb-standin',
    };
    try {
      // liveness answers without credentials, as the server's /ping does
      if (
        url.pathname === '/ping' ||
        (url.pathname === '/' && req.method === 'GET' && !url.searchParams.has('query'))
      ) {
        res.writeHead(200, { 'content-type': 'text/plain; charset=UTF-8' });
        res.end('Ok.\n');
        return;
      }
      authenticate(req, url, credentials);
      if (url.pathname !== '/') throw new HttpError(404, 0, 'UNKNOWN', `There is no handle ${url.pathname}`);
      if (req.method !== 'GET' && req.method !== 'POST') {
        throw new HttpError(405, 0, 'UNKNOWN', `HTTP method ${req.method} is not allowed`);
      }
      if (url.searchParams.has('session_id')) {
        throw new HttpError(
          501,
          48,
          'NOT_IMPLEMENTED',
          'HTTP sessions (session_id) are not supported by the chDB stand-in',
        );
      }
      const body = req.method === 'POST' ? await readBody(req, maxBodyBytes, 'Request body') : Buffer.alloc(0);
      const urlQuery = url.searchParams.get('query') ?? '';
      // ClickHouse appends the body to a URL query (the data of an INSERT); one string for chDB's parser
      const sql =
        urlQuery.trim() === ''
          ? body.toString('utf8')
          : body.length === 0
            ? urlQuery
            : Buffer.concat([Buffer.from(`${urlQuery}\n`), body]).toString('utf8');
      if (sql.trim() === '') throw new HttpError(400, 62, 'SYNTAX_ERROR', 'Empty query');

      const database = url.searchParams.get('database') || 'default';
      try {
        assertIdentifier(database);
      } catch {
        throw new HttpError(404, 81, 'UNKNOWN_DATABASE', `Database ${database} does not exist`);
      }
      const params: Record<string, string> = {};
      const settings = new Map<string, string>();
      for (const [k, v] of url.searchParams) {
        if (k.startsWith('param_')) params[k.slice(6)] = v;
        else if (NOT_SETTINGS.has(k) || HTTP_ONLY.has(k)) continue;
        else if (!/^[a-z_][a-z0-9_]*$/.test(k)) {
          throw new HttpError(404, 115, 'UNKNOWN_SETTING', `Unknown setting ${k}`);
        } else if (ALLOWED_SETTINGS.has(k) || ALLOWED_PREFIXES.some((p) => k.startsWith(p))) settings.set(k, v);
        else {
          throw new HttpError(
            403,
            452,
            'SETTING_CONSTRAINT_VIOLATION',
            `Setting ${k} is not allowed as a URL parameter of the chDB stand-in (clickhouse/http-server.ts ALLOWED_SETTINGS)`,
          );
        }
      }
      // GET only reads, as on the server (readonly=2 still lets the request's settings apply)
      if (req.method === 'GET' && (settings.get('readonly') ?? '0') === '0') settings.set('readonly', '2');
      settings.delete('default_format');
      const format = url.searchParams.get('default_format') || 'TabSeparated';

      const statement = oneStatement(sql);
      let output: Buffer;
      let written = 0;
      if (statement.kind === 'session-only') {
        // SET / USE without an HTTP session change nothing beyond the request
        output = Buffer.alloc(0);
      } else {
        const sorted = new Map([...settings].sort(([a], [b]) => a.localeCompare(b)));
        let result: ChdbResult;
        try {
          result = await runStatement({ sql: statement.sql, database, format, params, settings: sorted });
        } catch (err) {
          throw toHttpError(err);
        }
        output = Buffer.from(result.bytes.buffer, result.bytes.byteOffset, result.bytes.byteLength);
        if (statement.kind === 'insert') written = result.rowsRead;
      }
      const declared = declaredFormat(statement.kind === 'insert' ? '' : sql, format);
      const out: Record<string, string> = {
        ...headers,
        'content-type': contentTypeOf(declared),
        'x-clickhouse-format': declared,
        'x-clickhouse-summary': JSON.stringify({
          read_rows: '0',
          read_bytes: '0',
          written_rows: String(written),
          written_bytes: '0',
          total_rows_to_read: '0',
          result_rows: '0',
          result_bytes: String(output.length),
        }),
      };
      if (
        url.searchParams.get('enable_http_compression') === '1' &&
        /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))
      ) {
        output = gzipSync(output);
        out['content-encoding'] = 'gzip';
      }
      res.writeHead(200, out);
      res.end(output);
      requests.inc({ outcome: 'ok' });
    } catch (err) {
      const e = toHttpError(err);
      requests.inc({ outcome: e.status < 500 ? 'client_error' : 'error' });
      if (e.status >= 500 && e.code === 1001) logger.warn({ err: e.message }, 'clickhouse stand-in error');
      // drain what the client still sends (a refused large body) so it reads the answer, not a reset
      req.resume();
      writeError(res, e, headers, version);
    } finally {
      latency.observe(Number(process.hrtime.bigint() - started) / 1e9);
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://${opts.host}:${port}`,
    version,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      server.closeAllConnections();
      const all = [...pool, ...readOnly.values()];
      await Promise.all(all.map((s) => s.tail));
      for (const s of all) s.session.close();
    },
  };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Basic auth, X-ClickHouse-User/-Key headers or user/password URL parameters, as the server accepts them;
 *  compared in constant time (digests of equal length). */
function authenticate(req: http.IncomingMessage, url: URL, expected: Buffer | undefined): void {
  if (!expected) return;
  let user: string | undefined;
  let password = '';
  const auth = String(req.headers.authorization ?? '');
  if (auth.startsWith('Basic ')) {
    const decoded = Buffer.from(auth.slice(6), 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    user = i < 0 ? decoded : decoded.slice(0, i);
    password = i < 0 ? '' : decoded.slice(i + 1);
  } else if (req.headers['x-clickhouse-user'] !== undefined) {
    user = String(req.headers['x-clickhouse-user']);
    password = String(req.headers['x-clickhouse-key'] ?? '');
  } else if (url.searchParams.has('user')) {
    user = url.searchParams.get('user') ?? '';
    password = url.searchParams.get('password') ?? '';
  }
  if (user === undefined) throw new HttpError(401, 194, 'REQUIRED_PASSWORD', 'Authentication required');
  if (!timingSafeEqual(digest(`${user}\0${password}`), expected)) {
    throw new HttpError(
      401,
      516,
      'AUTHENTICATION_FAILED',
      `${user}: Authentication failed: password is incorrect, or there is no user with such name`,
    );
  }
}

/** A setting value as a ClickHouse string literal (numeric settings accept their text form). */
function literal(v: string): string {
  return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function parseJsonEachRow(buf: Buffer): Record<string, unknown>[] {
  return buf
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/**
 * The one statement of a request, or a 62 as the server answers a multi-statement. Quotes, backquotes,
 * comments and the data of `INSERT … FORMAT f` / `VALUES` (everything after it) are skipped when looking
 * for a `;` that ends the statement before its text does.
 */
export function oneStatement(sql: string): { kind: 'insert' | 'query' | 'session-only'; sql: string } {
  const head = sql.replace(/^(\s|--[^\n]*\n|\/\*[\s\S]*?\*\/)*/, '');
  const insert = /^INSERT\b/i.test(head);
  let i = 0;
  let end = sql.length;
  while (i < sql.length) {
    const c = sql[i];
    if (c === "'" || c === '"' || c === '`') {
      i++;
      while (i < sql.length && sql[i] !== c) i += sql[i] === '\\' ? 2 : 1;
      i++;
      continue;
    }
    if (c === '-' && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? sql.length : nl + 1;
      continue;
    }
    if (c === '/' && sql[i + 1] === '*') {
      const close = sql.indexOf('*/', i + 2);
      i = close < 0 ? sql.length : close + 2;
      continue;
    }
    if (
      insert &&
      /[Ff]/.test(c) &&
      /^FORMAT\s+[A-Za-z0-9_]+/i.test(sql.slice(i, i + 64)) &&
      /\W/.test(sql[i - 1] ?? ' ')
    ) {
      break; // the rest is data
    }
    if (insert && /[Vv]/.test(c) && /^VALUES\b/i.test(sql.slice(i, i + 7)) && /\W/.test(sql[i - 1] ?? ' ')) break;
    if (c === ';') {
      end = i;
      if (sql.slice(i + 1).trim() !== '') {
        throw new HttpError(400, 62, 'SYNTAX_ERROR', 'Multi-statements are not allowed');
      }
      break;
    }
    i++;
  }
  const text = sql.slice(0, end);
  if (insert) return { kind: 'insert', sql };
  if (/^(SET|USE)\b/i.test(head)) return { kind: 'session-only', sql: text };
  return { kind: 'query', sql: text };
}
