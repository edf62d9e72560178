// The analysts' endpoint: a read-only, ClickHouse-compatible HTTP interface over the embedded engine
// (single-node mode), so curl, @clickhouse/client and BI tools can query the aggregates.
//
// Supported: GET/POST `/?query=…` (a POST body is appended to the URL query, as ClickHouse does),
// `default_format` or a `FORMAT` clause, `param_<name>` server-side parameters, `database`, `query_id`,
// gzip responses with `enable_http_compression=1`, `/ping`. Reads only, enforced by the engine on a
// session of the analysts' own with per-statement limits: see readonly.ts. Errors use ClickHouse's text
// form (`Code: N. DB::Exception: … (NAME)`), its HTTP status and the X-ClickHouse-Exception-Code header.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { Logger } from '../services/common/logger.ts';
import { counter, histogram } from '../services/common/metrics.ts';
import { assertIdentifier, type Db, retryVanishedPart } from './client.ts';
import { type AnalystLimits, openAnalystSql } from './readonly.ts';

const MAX_QUERY_BYTES = 1024 * 1024;

const queries = counter('analyst_sql_queries_total', "Queries on the analysts' SQL endpoint", ['outcome']);
const latency = histogram('analyst_sql_query_seconds', "Latency of the analysts' SQL endpoint");

/** ClickHouse error code → HTTP status, as the server maps them (src/Server/HTTP/exceptionCodeToHTTPStatus.cpp);
 *  every other code is a 500 there, READONLY (164) included. */
const STATUS_BY_CODE: Record<number, number> = {
  194: 401, // REQUIRED_PASSWORD
  497: 403, // ACCESS_DENIED
  36: 400, // BAD_ARGUMENTS
  427: 400, // CANNOT_COMPILE_REGEXP
  6: 400, // CANNOT_PARSE_TEXT
  25: 400, // CANNOT_PARSE_ESCAPE_SEQUENCE
  26: 400, // CANNOT_PARSE_QUOTED_STRING
  38: 400, // CANNOT_PARSE_DATE
  41: 400, // CANNOT_PARSE_DATETIME
  72: 400, // CANNOT_PARSE_NUMBER
  441: 400, // CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING
  27: 400, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
  15: 400, // DUPLICATE_COLUMN
  44: 400, // ILLEGAL_COLUMN
  8: 400, // THERE_IS_NO_COLUMN
  167: 400, // TOO_DEEP_AST
  168: 400, // TOO_BIG_AST
  62: 400, // SYNTAX_ERROR
  117: 400, // INCORRECT_DATA
  53: 400, // TYPE_MISMATCH
  60: 404, // UNKNOWN_TABLE
  46: 404, // UNKNOWN_FUNCTION
  47: 404, // UNKNOWN_IDENTIFIER
  50: 404, // UNKNOWN_TYPE
  56: 404, // UNKNOWN_STORAGE
  81: 404, // UNKNOWN_DATABASE
  115: 404, // UNKNOWN_SETTING
  63: 404, // UNKNOWN_AGGREGATE_FUNCTION
  73: 404, // UNKNOWN_FORMAT
  48: 501, // NOT_IMPLEMENTED
  159: 408, // TIMEOUT_EXCEEDED
};

const CONTENT_TYPES: Record<string, string> = {
  json: 'application/json; charset=UTF-8',
  jsoncompact: 'application/json; charset=UTF-8',
  jsonstrings: 'application/json; charset=UTF-8',
  jsoneachrow: 'application/x-ndjson; charset=UTF-8',
  jsoncompacteachrow: 'application/x-ndjson; charset=UTF-8',
  jsonstringseachrow: 'application/x-ndjson; charset=UTF-8',
  tabseparated: 'text/tab-separated-values; charset=UTF-8',
  tsv: 'text/tab-separated-values; charset=UTF-8',
  tabseparatedwithnames: 'text/tab-separated-values; charset=UTF-8',
  tsvwithnames: 'text/tab-separated-values; charset=UTF-8',
  csv: 'text/csv; charset=UTF-8; header=absent',
  csvwithnames: 'text/csv; charset=UTF-8; header=present',
};

class HttpError extends Error {
  readonly status: number;
  readonly code: number;
  readonly codeName: string;
  constructor(status: number, code: number, codeName: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.codeName = codeName;
  }
}

export interface SqlEndpoint {
  port: number;
  url: string;
  close(): Promise<void>;
}

export async function startSqlEndpoint(opts: {
  db: Db;
  host: string;
  port: number;
  logger: Logger;
  version: string;
  /** per-statement bounds (config: CLICKHOUSE_HTTP_MAX_*) */
  limits: AnalystLimits;
}): Promise<SqlEndpoint> {
  const { db, logger } = opts;
  const analyst = await openAnalystSql(db, opts.limits);
  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      logger.error({ err }, 'analyst endpoint failure');
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === '/ping' || (url.pathname === '/' && req.method === 'GET' && !url.searchParams.has('query'))) {
      res.writeHead(200, { 'content-type': 'text/plain; charset=UTF-8' });
      res.end('Ok.\n');
      return;
    }
    const started = process.hrtime.bigint();
    const queryId = url.searchParams.get('query_id') || randomUUID();
    const baseHeaders: Record<string, string> = {
      'x-clickhouse-query-id': queryId,
      'x-clickhouse-timezone': 'UTC',
      'x-clickhouse-server-display-name': 'storefront-discovery-chdb',
    };
    try {
      if (url.pathname !== '/') throw new HttpError(404, 0, 'UNKNOWN', `There is no handle ${url.pathname}`);
      if (req.method !== 'GET' && req.method !== 'POST') {
        throw new HttpError(405, 0, 'UNKNOWN', `HTTP method ${req.method} is not allowed`);
      }
      const body = req.method === 'POST' ? await readBody(req) : '';
      const sql = [url.searchParams.get('query') ?? '', body].filter((s) => s.trim() !== '').join('\n');
      if (sql.trim() === '') throw new HttpError(400, 62, 'SYNTAX_ERROR', 'Empty query');

      const params: Record<string, string> = {};
      for (const [k, v] of url.searchParams) if (k.startsWith('param_')) params[k.slice(6)] = v;
      const database = url.searchParams.get('database') || db.database;
      try {
        assertIdentifier(database);
      } catch {
        throw new HttpError(404, 81, 'UNKNOWN_DATABASE', `Database ${database} does not exist`);
      }
      const format = url.searchParams.get('default_format') || 'TabSeparated';
      const declared = /\bFORMAT\s+([A-Za-z0-9_]+)\s*;?\s*$/i.exec(sql)?.[1] ?? format;

      let output: Buffer;
      try {
        output = await retryVanishedPart(db.embedded, () => analyst.run(sql, { database, format, params, queryId }));
      } catch (err) {
        throw toHttpError(err);
      }
      const gzip =
        url.searchParams.get('enable_http_compression') === '1' &&
        /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
      const headers: Record<string, string> = {
        ...baseHeaders,
        'content-type': CONTENT_TYPES[declared.toLowerCase()] ?? 'text/plain; charset=UTF-8',
        'x-clickhouse-format': declared,
        'x-clickhouse-summary': JSON.stringify({
          read_rows: '0',
          read_bytes: '0',
          written_rows: '0',
          written_bytes: '0',
          result_bytes: String(output.length),
        }),
      };
      if (gzip) {
        output = gzipSync(output);
        headers['content-encoding'] = 'gzip';
      }
      res.writeHead(200, headers);
      res.end(output);
      queries.inc({ outcome: 'ok' });
    } catch (err) {
      const e = err instanceof HttpError ? err : new HttpError(500, 1001, 'STD_EXCEPTION', (err as Error).message);
      queries.inc({ outcome: e.code === 164 ? 'readonly' : e.status < 500 ? 'client_error' : 'error' });
      res.writeHead(e.status, {
        ...baseHeaders,
        'content-type': 'text/plain; charset=UTF-8',
        'x-clickhouse-exception-code': String(e.code),
      });
      res.end(`Code: ${e.code}. DB::Exception: ${e.message}. (${e.codeName}) (version ${opts.version})\n`);
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
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await analyst.close();
    },
  };
}

function toHttpError(err: unknown): HttpError {
  const e = err as { code?: string | number; type?: string; message?: string };
  const code = Number(e.code);
  if (Number.isFinite(code) && code > 0) {
    const message = String(e.message ?? 'error')
      .replace(/^Code: \d+\. DB::Exception: /, '')
      .replace(/\. \([A-Z_]+\)( \(version [^)]*\))?\s*$/, '')
      .replace(/[.\s]+$/, '');
    return new HttpError(STATUS_BY_CODE[code] ?? 500, code, e.type ?? 'UNKNOWN', message);
  }
  return new HttpError(500, 1001, 'STD_EXCEPTION', String(e.message ?? err));
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_QUERY_BYTES)
      throw new HttpError(413, 0, 'QUERY_IS_TOO_LARGE', `Query is too large (over ${MAX_QUERY_BYTES} bytes)`);
    chunks.push(chunk as Buffer);
  }
  let buf = Buffer.concat(chunks);
  if (String(req.headers['content-encoding'] ?? '').includes('gzip')) buf = gunzipSync(buf);
  return buf.toString('utf8');
}
