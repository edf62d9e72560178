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
import { gzipSync } from 'node:zlib';
import type { Logger } from '../services/common/logger.ts';
import { counter, histogram } from '../services/common/metrics.ts';
import { assertIdentifier, type Db, retryVanishedPart } from './client.ts';
import { contentTypeOf, declaredFormat, HttpError, readBody, toHttpError, writeError } from './http-protocol.ts';
import { type AnalystLimits, openAnalystSql } from './readonly.ts';

const MAX_QUERY_BYTES = 1024 * 1024;

const queries = counter('analyst_sql_queries_total', "Queries on the analysts' SQL endpoint", ['outcome']);
const latency = histogram('analyst_sql_query_seconds', "Latency of the analysts' SQL endpoint");

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
      const body = req.method === 'POST' ? (await readBody(req, MAX_QUERY_BYTES)).toString('utf8') : '';
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
      const declared = declaredFormat(sql, format);

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
        'content-type': contentTypeOf(declared),
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
      writeError(res, e, baseHeaders, opts.version);
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
