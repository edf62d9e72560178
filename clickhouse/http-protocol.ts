// ClickHouse's HTTP interface, the parts both of our servers speak: the analysts' read-only endpoint
// (http-endpoint.ts) and the read-write chDB stand-in of distributed mode (http-server.ts). Error bodies
// use ClickHouse's text form (`Code: N. DB::Exception: … (NAME) (version …)`), its HTTP status for the
// code and the X-ClickHouse-Exception-Code header, which is what @clickhouse/client parses.
import type http from 'node:http';
import { gunzipSync } from 'node:zlib';

/** ClickHouse error code → HTTP status, as the server maps them (src/Server/HTTP/exceptionCodeToHTTPStatus.cpp);
 *  every other code is a 500 there, READONLY (164) included. */
export const STATUS_BY_CODE: Readonly<Record<number, number>> = {
  194: 401, // REQUIRED_PASSWORD
  516: 401, // AUTHENTICATION_FAILED
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

const CONTENT_TYPES: Readonly<Record<string, string>> = {
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

export function contentTypeOf(format: string): string {
  return CONTENT_TYPES[format.toLowerCase()] ?? 'text/plain; charset=UTF-8';
}

/** The output format of a statement: its own trailing `FORMAT x` clause, else `default_format`. */
export function declaredFormat(sql: string, defaultFormat: string): string {
  return /\bFORMAT\s+([A-Za-z0-9_]+)\s*;?\s*$/i.exec(sql)?.[1] ?? defaultFormat;
}

export class HttpError extends Error {
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

/** An engine error (`code`, `type`, `message`, as @clickhouse/client's parseError or chDB give them) as an HttpError. */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  const e = err as { code?: string | number; type?: string; message?: string };
  let code = Number(e.code);
  let type = e.type;
  // chDB's own errors carry a CHDB_* code: the ClickHouse one is in the message
  const m = /^Code: (\d+)\. DB::Exception: [\s\S]*?(?:\(([A-Z][A-Z0-9_]*)\))?(?: \(version [^)]*\))?\s*$/.exec(
    String(e.message ?? ''),
  );
  if (!(Number.isFinite(code) && code > 0) && m) {
    code = Number(m[1]);
    type = m[2];
  }
  if (Number.isFinite(code) && code > 0) {
    const message = String(e.message ?? 'error')
      .replace(/^Code: \d+\. DB::Exception: /, '')
      .replace(/\. \([A-Z_0-9]+\)( \(version [^)]*\))?\s*$/, '')
      .replace(/[.\s]+$/, '');
    return new HttpError(STATUS_BY_CODE[code] ?? 500, code, type ?? 'UNKNOWN', message);
  }
  return new HttpError(500, 1001, 'STD_EXCEPTION', String(e.message ?? err));
}

/** ClickHouse's error response: status by code, X-ClickHouse-Exception-Code, the text body. */
export function writeError(
  res: http.ServerResponse,
  e: HttpError,
  headers: Record<string, string>,
  version: string,
): void {
  res.writeHead(e.status, {
    ...headers,
    'content-type': 'text/plain; charset=UTF-8',
    'x-clickhouse-exception-code': String(e.code),
  });
  res.end(`Code: ${e.code}. DB::Exception: ${e.message}. (${e.codeName}) (version ${version})\n`);
}

/** The request body (gunzipped when Content-Encoding says gzip), refused with a 413 beyond `maxBytes`
 *  before more than that is buffered. */
export async function readBody(req: http.IncomingMessage, maxBytes: number, what = 'Query'): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(what, maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw tooLarge(what, maxBytes);
    chunks.push(chunk as Buffer);
  }
  const buf = Buffer.concat(chunks);
  if (!String(req.headers['content-encoding'] ?? '').includes('gzip')) return buf;
  try {
    return gunzipSync(buf, { maxOutputLength: maxBytes });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(what, maxBytes);
    throw new HttpError(400, 354, 'CANNOT_DECOMPRESS', `Cannot decompress the request body: ${(err as Error).message}`);
  }
}

function tooLarge(what: string, maxBytes: number): HttpError {
  return new HttpError(413, 0, 'QUERY_IS_TOO_LARGE', `${what} is too large (over ${maxBytes} bytes)`);
}
