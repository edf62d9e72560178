// The analysts' endpoint: a read-only, ClickHouse-compatible HTTP interface over the embedded engine
// (single-node mode), so curl, @clickhouse/client and BI tools can query the aggregates.
//
// Supported: GET/POST `/?query=…` (a POST body is appended to the URL query, as ClickHouse does),
// `default_format` or a `FORMAT` clause, `param_<name>` server-side parameters, `database`, `query_id`,
// gzip responses with `enable_http_compression=1`, `/ping`. Reads only: see readonly.ts. Errors use
// ClickHouse's text form (`Code: N. DB::Exception: … (NAME)`) and the X-ClickHouse-Exception-Code header.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { Logger } from '../services/common/logger.ts';
import { counter, histogram } from '../services/common/metrics.ts';
import { assertIdentifier, type Db, retryVanishedPart } from './client.ts';
import { classifyReadOnly } from './readonly.ts';

const MAX_QUERY_BYTES = 1024 * 1024;

const queries = counter('analyst_sql_queries_total', "Queries on the analysts' SQL endpoint", ['outcome']);
const latency = histogram('analyst_sql_query_seconds', "Latency of the analysts' SQL endpoint");

/** ClickHouse error codes → HTTP status, as the ClickHouse server maps them. */
const STATUS_BY_CODE: Record<number, number> = {
  62: 400, // SYNTAX_ERROR
  47: 400, // UNKNOWN_IDENTIFIER
  46: 400, // UNKNOWN_FUNCTION
  43: 400, // ILLEGAL_TYPE_OF_ARGUMENT
  53: 400, // TYPE_MISMATCH
  27: 400, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
  73: 400, // UNKNOWN_FORMAT
  115: 400, // UNKNOWN_SETTING
  456: 400, // UNKNOWN_QUERY_PARAMETER
  457: 400, // BAD_QUERY_PARAMETER
  60: 404, // UNKNOWN_TABLE
  81: 404, // UNKNOWN_DATABASE
  164: 403, // READONLY
  241: 500, // MEMORY_LIMIT_EXCEEDED
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
}): Promise<SqlEndpoint> {
  const { db, logger } = opts;
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
      const verdict = classifyReadOnly(sql);
      if (!verdict.ok) throw new HttpError(403, 164, 'READONLY', verdict.reason);

      const params: Record<string, string> = {};
      for (const [k, v] of url.searchParams) if (k.startsWith('param_')) params[k.slice(6)] = v;
      const database = url.searchParams.get('database') || db.database;
      try {
        assertIdentifier(database);
      } catch {
        throw new HttpError(400, 81, 'UNKNOWN_DATABASE', `Database ${database} does not exist`);
      }
      const format = url.searchParams.get('default_format') || 'TabSeparated';
      const declared = /\bFORMAT\s+([A-Za-z0-9_]+)\s*;?\s*$/i.exec(sql)?.[1] ?? format;

      let output: Buffer;
      try {
        // Same engine session as the app: name the database on every statement (see client.ts).
        output = await retryVanishedPart(db.embedded, async () => {
          const rs = await db.client.exec({
            query: db.embedded ? `USE ${database}; ${sql}` : sql,
            query_params: Object.keys(params).length ? params : undefined,
            clickhouse_settings: { default_format: format } as never,
          });
          return collect(rs.stream);
        });
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
      queries.inc({ outcome: e.status < 500 ? 'client_error' : 'error' });
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
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function toHttpError(err: unknown): HttpError {
  const e = err as { code?: string | number; type?: string; message?: string };
  const code = Number(e.code);
  if (Number.isFinite(code) && code > 0) {
    const message = String(e.message ?? 'error')
      .replace(/^Code: \d+\. DB::Exception: /, '')
      .replace(/\. \([A-Z_]+\)( \(version [^)]*\))?\s*$/, '');
    return new HttpError(STATUS_BY_CODE[code] ?? 400, code, e.type ?? 'UNKNOWN', message);
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

async function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : Buffer.from(c as Uint8Array));
  return Buffer.concat(chunks);
}
