// The ClickHouse client factory and the query helpers every other module uses.
//
// Single-node mode runs ClickHouse in process through chDB, behind @clickhouse/client's pluggable
// connection (`chdb/connection`); distributed mode talks HTTP to CLICKHOUSE_URL. Callers see the same
// `Db` either way. Rules that hold in both modes:
// - values only ever travel as server-side parameters ({name:Type}); SQL text is never built from values;
// - per-query settings are written inline (`INSERT … SETTINGS k=v`), never through `clickhouse_settings`:
//   over chDB those become session-wide `SET`s that would leak into later queries (a leaked
//   insert_deduplication_token would silently drop the next insert);
// - the app's chDB session is shared by the whole process, so every statement names its database
//   explicitly; untrusted SQL (the analysts' endpoint) runs on a read-only session of its own
//   (`openReadOnlySession`), never on this one.
// On a ClickHouse cluster (`cluster`, CLICKHOUSE_CLUSTER) every insert also carries the cluster's insert
// settings (clickhouse/cluster-ddl.ts clusterInsertSettings: synchronous inserts through the Distributed
// tables), added here once for every caller.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { type ClickHouseClient, createClient } from '@clickhouse/client';
import type { Config } from '../services/common/config.ts';
import { clusterInsertSettings } from './cluster-ddl.ts';
import { scanLostBlocks } from './dedup-log.ts';

export type Params = Record<string, unknown>;

export interface InsertOptions {
  /** insert_deduplication_token: a retried insert with the same token is dropped by ClickHouse,
   *  in the table and in dependent materialized views */
  dedupToken?: string;
}

export interface Db {
  readonly client: ClickHouseClient;
  readonly database: string;
  /** true when ClickHouse runs in this process (chDB) */
  readonly embedded: boolean;
  /** the ClickHouse cluster the tables are sharded over (CLICKHOUSE_CLUSTER; clickhouse/cluster-ddl.ts),
   *  undefined on one server */
  readonly cluster: string | undefined;
  /** embedded only: per table, insert blocks the engine recorded but never committed before this process
   *  opened the directory (a hard crash inside an insert; clickhouse/dedup-log.ts) */
  readonly lostBlocks: ReadonlyMap<string, string[]>;
  query<T = Record<string, unknown>>(sql: string, params?: Params): Promise<T[]>;
  /** run a statement that returns no rows (DDL, INSERT … SELECT, …) */
  command(sql: string, params?: Params): Promise<void>;
  /** insert rows (chDB: one zero-copy Buffer, JSONCompactEachRow when the rows share their keys, else
   *  JSONEachRow; HTTP: JSONEachRow); `table` is an identifier, optionally `db.table` */
  insert(table: string, rows: readonly object[], opts?: InsertOptions): Promise<void>;
  ping(): Promise<boolean>;
  /** a session for untrusted SQL (the analysts' endpoint), never this Db's own: see openReadOnlySession */
  openReadOnlySession(limits: ReadOnlyLimits): Promise<ReadOnlySession>;
  close(): Promise<void>;
}

/** Engine settings every statement of a read-only session runs under (ClickHouse names and units). */
export type ReadOnlyLimits = Record<string, number>;

/** Untrusted SQL under the engine's `readonly=1`; statements run one at a time. */
export interface ReadOnlySession {
  /** one statement's raw output: `format` applies unless the statement has a FORMAT clause; `database` is
   *  the current database for unqualified names (ClickHouse's HTTP `database` parameter) */
  exec(
    sql: string,
    opts: { database: string; format: string; params?: Record<string, string>; queryId?: string },
  ): Promise<Buffer>;
  close(): Promise<void>;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;
const TOKEN = /^[A-Za-z0-9._:/@=-]{1,512}$/;

export function assertIdentifier(name: string): string {
  if (!IDENT.test(name)) throw new Error(`not a plain ClickHouse identifier: ${JSON.stringify(name)}`);
  return name;
}

export interface DbOptions {
  /** CLICKHOUSE_URL; unset = chDB in process */
  url?: string;
  /** chDB data directory (when url is unset) */
  chdbPath?: string;
  database: string;
  username?: string;
  password?: string;
  /** CLICKHOUSE_CLUSTER: a cluster of ClickHouse servers (needs url); unset = one server */
  cluster?: string;
  /** chDB: the lost blocks found by the thread that opened the directory first (a second thread of the
   *  same process, such as the stream processors' worker, must not scan a directory the engine has open) */
  lostBlocks?: ReadonlyMap<string, string[]>;
}

export function dbOptionsFromConfig(config: Config): DbOptions {
  return {
    url: config.CLICKHOUSE_URL,
    chdbPath: path.join(config.dataDir, 'clickhouse'),
    database: config.CLICKHOUSE_DATABASE,
    username: config.CLICKHOUSE_USER,
    password: config.CLICKHOUSE_PASSWORD,
    ...(config.CLICKHOUSE_CLUSTER ? { cluster: config.CLICKHOUSE_CLUSTER } : {}),
  };
}

/** The settings of an insert: its dedup token (and the views' dedup) and, on a cluster, the cluster's. */
export function insertSettings(opts: InsertOptions, cluster: string | undefined): Record<string, string | number> {
  return {
    ...(opts.dedupToken !== undefined
      ? { insert_deduplication_token: opts.dedupToken, deduplicate_blocks_in_dependent_materialized_views: 1 }
      : {}),
    ...clusterInsertSettings(cluster),
  };
}

/** The INSERT statement of the HTTP path (the rows follow as its JSONEachRow body). */
export function insertStatement(table: string, opts: InsertOptions, cluster: string | undefined): string {
  assertIdentifier(table);
  if (opts.dedupToken !== undefined && !TOKEN.test(opts.dedupToken))
    throw new Error(`invalid dedup token ${JSON.stringify(opts.dedupToken)}`);
  // string values are dedup tokens, checked against TOKEN above (no quote can occur in one)
  const settings = Object.entries(insertSettings(opts, cluster)).map(([k, v]) =>
    typeof v === 'string' ? `${k}='${v}'` : `${k}=${v}`,
  );
  return `INSERT INTO ${table}${settings.length ? ` SETTINGS ${settings.join(', ')}` : ''} FORMAT JSONEachRow`;
}

/** Open the database (creating it if needed). chDB allows one data directory per process. */
export async function openDb(opts: DbOptions): Promise<Db> {
  const database = assertIdentifier(opts.database);
  const embedded = !opts.url;
  const cluster = opts.cluster || undefined;
  if (cluster !== undefined) {
    if (embedded)
      throw new Error('a ClickHouse cluster (CLICKHOUSE_CLUSTER) needs a ClickHouse server (CLICKHOUSE_URL)');
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(cluster))
      throw new Error(`not a plain ClickHouse identifier: ${JSON.stringify(cluster)}`);
  }
  let client: ClickHouseClient;
  let rawInsert: RawInsert | undefined;
  let lostBlocks: ReadonlyMap<string, string[]> = new Map();
  if (embedded) {
    const chdbPath = path.resolve(opts.chdbPath ?? './data/clickhouse');
    mkdirSync(chdbPath, { recursive: true });
    // before the engine opens the directory (its merges could hide a missing block)
    lostBlocks = opts.lostBlocks ?? scanLostBlocks(chdbPath, database);
    const { createChdbConnection } = await import('chdb/connection');
    // The chDB connection implements @clickhouse/client's Connection contract; the option is not in
    // the public typings of the HTTP client yet, hence the cast.
    const connection = createChdbConnection({ path: chdbPath });
    client = createClient({ connection } as never);
    rawInsert = connection.chdb.rawInsert as RawInsert;
    await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` });
  } else {
    const http = { url: opts.url, username: opts.username, password: opts.password, request_timeout: 60_000 };
    const bootstrap = createClient(http);
    await bootstrap.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` });
    await bootstrap.close();
    client = createClient({ ...http, database });
  }
  // In embedded mode every statement is prefixed with `USE db;` (see the header comment).
  const scoped = (sql: string) => (embedded ? `USE ${database}; ${sql}` : sql);

  const db: Db = {
    client,
    database,
    embedded,
    cluster,
    lostBlocks,
    async query<T>(sql: string, params?: Params): Promise<T[]> {
      return retryVanishedPart(embedded, async () => {
        const rs = await client.query({
          query: scoped(sql),
          query_params: params,
          format: 'JSONEachRow',
        });
        return rs.json<T>();
      });
    },
    async command(sql: string, params?: Params): Promise<void> {
      await client.command({ query: scoped(sql), query_params: params });
    },
    async insert(table: string, rows: readonly object[], opts: InsertOptions = {}): Promise<void> {
      if (rows.length === 0) return;
      assertIdentifier(table);
      if (opts.dedupToken !== undefined && !TOKEN.test(opts.dedupToken))
        throw new Error(`invalid dedup token ${JSON.stringify(opts.dedupToken)}`);
      if (rawInsert) {
        // chDB: the payload goes to the engine as one Buffer (no SQL string concatenation), positional
        // JSON arrays under an explicit column list (no key names to write or match per row), parsed
        // on the calling thread (parallel parsing only adds thread hand-offs at chunk sizes).
        const compact = compactRows(rows);
        await rawInsert({
          table: table.includes('.') ? table : `${database}.${table}`,
          ...(compact
            ? { format: 'JSONCompactEachRow', columns: compact.columns, values: compact.body }
            : { format: 'JSONEachRow', values: jsonEachRow(rows) }),
          settings: { ...insertSettings(opts, cluster), input_format_parallel_parsing: 0 },
        });
        return;
      }
      const body = rows.map((r) => JSON.stringify(r)).join('\n');
      const sql = insertStatement(table, opts, cluster);
      // the answer is read to its end: a response left unread holds the socket (and the client warns)
      const rs = await client.exec({ query: scoped(sql), values: toStream(body) });
      await collect(rs.stream);
    },
    async ping() {
      try {
        const r = await client.ping();
        return r.success;
      } catch {
        return false;
      }
    },
    async openReadOnlySession(limits: ReadOnlyLimits): Promise<ReadOnlySession> {
      return embedded
        ? openEmbeddedReadOnly(path.resolve(opts.chdbPath ?? './data/clickhouse'), limits)
        : openHttpReadOnly(opts, limits);
    },
    async close() {
      await client.close();
    },
  };
  return db;
}

/**
 * chDB: a second connection on the same data directory. It sees the same tables, but it is a session of
 * its own (settings, current database), so its `SET readonly = 1` never reaches the app's write session,
 * and its queries do not wait for the app's (the engine runs the two sessions' queries side by side).
 * The limits are set first: once `readonly = 1` holds, no setting can change any more, not through
 * `SET`, a query's `SETTINGS` clause, nor by anyone else holding the session.
 */
async function openEmbeddedReadOnly(chdbPath: string, limits: ReadOnlyLimits): Promise<ReadOnlySession> {
  const { createChdbConnection } = await import('chdb/connection');
  const connection = createChdbConnection({ path: chdbPath });
  const client = createClient({ connection } as never);
  const assignments = Object.entries(limits).map(([k, v]) => `${settingName(k)} = ${settingValue(v)}`);
  await client.command({ query: `SET ${[...assignments, 'readonly = 1'].join(', ')}` });
  let current = '';
  let tail: Promise<unknown> = Promise.resolve();
  return {
    exec(sql, o) {
      const run = async () => {
        // only the endpoint's own USE changes this session's database (a USE statement is not a read)
        if (o.database !== current) {
          await client.command({ query: `USE ${assertIdentifier(o.database)}` });
          current = o.database;
        }
        try {
          const rs = await client.exec({
            query: sql,
            query_params: o.params && Object.keys(o.params).length ? o.params : undefined,
            query_id: o.queryId,
            // chdb/connection turns default_format into the query's output format option, not a SET
            clickhouse_settings: { default_format: o.format } as never,
          });
          return await collect(rs.stream);
        } catch (err) {
          // chDB 3.4 keeps the output a query wrote before it failed (a result limit, a timeout, throwIf)
          // and hands it out in front of the next query's result on the session: one throwaway query
          // takes it, so no analyst receives another's partial rows
          await client.exec({ query: 'SELECT 1' }).then(
            (rs) => collect(rs.stream),
            () => undefined,
          );
          throw err;
        }
      };
      const result = tail.then(run, run);
      tail = result.catch(() => undefined);
      return result;
    },
    async close() {
      await tail;
      await client.close();
    },
  };
}

/** ClickHouse server: each request carries the limits and readonly=1 as its own URL settings (no HTTP session). */
async function openHttpReadOnly(opts: DbOptions, limits: ReadOnlyLimits): Promise<ReadOnlySession> {
  for (const k of Object.keys(limits)) settingName(k);
  const clients = new Map<string, ClickHouseClient>();
  const clientFor = (database: string) => {
    let c = clients.get(database);
    if (!c) {
      c = createClient({
        url: opts.url,
        username: opts.username,
        password: opts.password,
        database: assertIdentifier(database),
      });
      clients.set(database, c);
    }
    return c;
  };
  return {
    async exec(sql, o) {
      const rs = await clientFor(o.database).exec({
        query: sql,
        query_params: o.params,
        query_id: o.queryId,
        clickhouse_settings: { ...limits, readonly: '1', default_format: o.format } as never,
      });
      return collect(rs.stream);
    },
    async close() {
      await Promise.all([...clients.values()].map((c) => c.close()));
    },
  };
}

function settingName(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a ClickHouse setting name: ${JSON.stringify(name)}`);
  return name;
}

function settingValue(v: number): string {
  if (!Number.isFinite(v)) throw new Error(`not a finite setting value: ${v}`);
  return String(v);
}

async function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : Buffer.from(c as Uint8Array));
  return Buffer.concat(chunks);
}

/**
 * chDB can fail a read that picked a data part just as a background merge replaced and removed it
 * ("filesystem error: in file_size: No such file or directory [...]/data.cmrk4"); the same read a moment
 * later sees the merged part. Reads (never writes) are retried a few times on exactly that error.
 */
export async function retryVanishedPart<T>(embedded: boolean, read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      if (!embedded || attempt >= 4 || !VANISHED_PART.test(String((err as Error).message))) throw err;
      await new Promise((r) => setTimeout(r, 10 * attempt));
    }
  }
}
const VANISHED_PART = /filesystem error: in (file_size|open|last_write_time)[^\n]*No such file or directory/i;

/** chDB's zero-copy insert entry (`connection.chdb.rawInsert`): `INSERT INTO t [(cols)] SETTINGS … FORMAT f` + payload. */
type RawInsert = (params: {
  table: string;
  values: Buffer;
  format: 'JSONEachRow' | 'JSONCompactEachRow';
  columns?: string[];
  settings?: Record<string, string | number | boolean>;
}) => Promise<unknown>;

/**
 * Rows as JSONCompactEachRow under the first row's keys, when every row has exactly those keys (the
 * processors build uniform rows); otherwise undefined and the caller falls back to JSONEachRow.
 * A row with an `undefined` value also falls back (JSONEachRow drops the key: the column's default).
 */
export function compactRows(rows: readonly object[]): { columns: string[]; body: Buffer } | undefined {
  const columns = Object.keys(rows[0]);
  for (const c of columns) assertIdentifier(c);
  const n = columns.length;
  const lines = new Array<string>(rows.length);
  const values = new Array<unknown>(n);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i] as Record<string, unknown>;
    let k = 0;
    for (const key in r) {
      const v = r[key];
      if (k >= n || key !== columns[k] || v === undefined) return undefined;
      values[k++] = v;
    }
    if (k !== n) return undefined;
    lines[i] = JSON.stringify(values);
  }
  return { columns, body: Buffer.from(lines.join('\n')) };
}

function jsonEachRow(rows: readonly object[]): Buffer {
  return Buffer.from(rows.map((r) => JSON.stringify(r)).join('\n'));
}

function toStream(body: string): Readable {
  // exec() takes the body as a stream; chDB materializes it, HTTP streams it (a Readable of Buffers: the
  // HTTP connection writes its chunks to the socket, an async generator is not a stream it can pipe)
  return Readable.from([Buffer.from(body)]);
}
