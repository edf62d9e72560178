// Untrusted SQL, read only (the analysts' endpoint). The engine enforces it, not a classifier of ours:
// - every statement runs on a chDB session of its own under ClickHouse's `readonly=1`
//   (`Db.openReadOnlySession`, clickhouse/client.ts), with the limits below set before it, so no
//   statement can write, create, drop, alter, optimize, run SYSTEM, call a table function that reaches
//   outside the engine (file, url, s3, remote, executable, …), or change any setting (`SET`,
//   `SETTINGS readonly=0`, `SETTINGS max_execution_time=0` → 164 READONLY);
// - before a statement runs, the engine's own parser refuses what `readonly=1` leaves open in embedded ClickHouse
//   (clickhouse-local), measured on chDB 3.4 (ClickHouse 26.7):
//   · more than one statement (`formatQuery` parses exactly one: 62 "Multi-statements are not allowed",
//     what a ClickHouse server answers over HTTP);
//   · a root that is not a read (`EXPLAIN AST`: only SELECT/WITH/UNION, SHOW, DESCRIBE, EXISTS, EXPLAIN):
//     `readonly=1` allows `KILL QUERY` (every chDB query runs as the same user, so it could kill the
//     processors' inserts), `USE`, `CHECK TABLE`;
//   · `INTO OUTFILE` (clickhouse-local writes the file itself, readonly or not);
//   · the scalar `file()` function (clickhouse-local does not confine it to user_files_path).
import type { Config } from '../services/common/config.ts';
import type { Db, ReadOnlyLimits, ReadOnlySession } from './client.ts';

/** Per-statement bounds of an analyst's query (README: configuration). */
export interface AnalystLimits {
  /** max_execution_time: the engine stops the query with 159 TIMEOUT_EXCEEDED */
  maxExecutionSeconds: number;
  /** max_result_rows / max_result_bytes: 396 TOO_MANY_ROWS_OR_BYTES beyond them */
  maxResultRows: number;
  maxResultBytes: number;
  /** max_memory_usage: 241 MEMORY_LIMIT_EXCEEDED beyond it (the engine runs inside the app's process) */
  maxMemoryBytes: number;
  /** max_threads: cores one analyst query may use (the processors and the read API share the machine) */
  maxThreads: number;
}

export function analystLimits(
  config: Pick<
    Config,
    | 'CLICKHOUSE_HTTP_MAX_EXECUTION_TIME'
    | 'CLICKHOUSE_HTTP_MAX_RESULT_ROWS'
    | 'CLICKHOUSE_HTTP_MAX_RESULT_BYTES'
    | 'CLICKHOUSE_HTTP_MAX_MEMORY_USAGE'
    | 'CLICKHOUSE_HTTP_MAX_THREADS'
  >,
): AnalystLimits {
  return {
    maxExecutionSeconds: config.CLICKHOUSE_HTTP_MAX_EXECUTION_TIME,
    maxResultRows: config.CLICKHOUSE_HTTP_MAX_RESULT_ROWS,
    maxResultBytes: config.CLICKHOUSE_HTTP_MAX_RESULT_BYTES,
    maxMemoryBytes: config.CLICKHOUSE_HTTP_MAX_MEMORY_USAGE,
    maxThreads: config.CLICKHOUSE_HTTP_MAX_THREADS,
  };
}

/** The refusal, in ClickHouse's shape (`code`, `type`), for what the engine's readonly=1 does not cover. */
export class ReadOnlyRefusal extends Error {
  readonly code = 164;
  readonly type = 'READONLY';
}

/** Roots of `EXPLAIN AST` that read: SELECT (with WITH, UNION, INTERSECT/EXCEPT), SHOW …, DESCRIBE, EXISTS, EXPLAIN. */
const READ_ROOT = /^(SelectWithUnionQuery|SelectIntersectExceptQuery|Show\w*|DescribeQuery|Exists\w*|Explain)\b/;
/** Scalar functions that reach outside the engine and that readonly=1 allows in clickhouse-local. */
const OUTSIDE_FUNCTIONS = new Set(['file']);

export interface AnalystSql {
  /** one statement's output (or a ClickHouse error: `code`, `type`, `message`) */
  run(
    sql: string,
    opts: { database: string; format: string; params?: Record<string, string>; queryId?: string },
  ): Promise<Buffer>;
  close(): Promise<void>;
}

export async function openAnalystSql(db: Db, limits: AnalystLimits): Promise<AnalystSql> {
  const session = await db.openReadOnlySession(engineSettings(limits));
  return {
    async run(sql, opts) {
      await assertRead(session, sql, opts);
      return session.exec(sql, opts);
    },
    close: () => session.close(),
  };
}

export function engineSettings(l: AnalystLimits): ReadOnlyLimits {
  return {
    max_execution_time: l.maxExecutionSeconds,
    max_result_rows: l.maxResultRows,
    max_result_bytes: l.maxResultBytes,
    max_memory_usage: l.maxMemoryBytes,
    max_threads: l.maxThreads,
  };
}

async function assertRead(
  session: ReadOnlySession,
  sql: string,
  opts: { database: string; params?: Record<string, string> },
): Promise<void> {
  // one statement, as the engine reads it (the text travels as a parameter, never into SQL)
  const formatted = JSON.parse(
    (
      await session.exec('SELECT formatQuerySingleLine({q:String}) AS q', {
        database: opts.database,
        format: 'JSONEachRow',
        params: { q: sql },
      })
    ).toString(),
  ).q as string;
  // the engine's rendering: keywords upper case, one space apart, comments gone, quotes escaped with a
  // backslash; string literals and quoted identifiers are left out of the search
  const unquoted = formatted.replace(/'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`|"(?:[^"\\]|\\.)*"/g, "''");
  if (/\bINTO OUTFILE\b/.test(unquoted)) {
    throw new ReadOnlyRefusal('Cannot execute query in readonly mode: INTO OUTFILE is not allowed');
  }
  // `formatted` is one statement rendered by the engine, so EXPLAIN AST runs nothing else
  const ast = (
    await session.exec(`EXPLAIN AST ${formatted}`, { database: opts.database, format: 'TSVRaw', params: opts.params })
  )
    .toString()
    .split('\n');
  const root = ast[0]?.trim() ?? '';
  if (!READ_ROOT.test(root)) {
    const kind = root.split(/\s/)[0] || 'an empty statement';
    throw new ReadOnlyRefusal(`Cannot execute query in readonly mode: ${kind} is not a read`);
  }
  for (const line of ast) {
    const fn = /^\s*Function (\w+)/.exec(line)?.[1];
    if (fn && OUTSIDE_FUNCTIONS.has(fn.toLowerCase())) {
      throw new ReadOnlyRefusal(`Cannot execute query in readonly mode: function ${fn}() is not allowed`);
    }
  }
}
