// Cluster rendering of the migrations (CLICKHOUSE_CLUSTER): the files stay as they were applied (their
// checksums are recorded, they are immutable), and each statement is rewritten at apply time for a
// ClickHouse cluster of shards and replicas.
//
//   CREATE TABLE t (…) ENGINE = XMergeTree(args) …
//     → CREATE TABLE t_local ON CLUSTER c (…) ENGINE = ReplicatedXMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', args) …
//       (non_replicated_deduplication_window → replicated_deduplication_window: retried inserts stay deduplicated)
//     + CREATE TABLE t ON CLUSTER c AS t_local ENGINE = Distributed('c', 'db', 't_local', cityHash64(store_id))
//       sharded by store (a table without store_id: by the first column of its ORDER BY), so every row of
//       a store, and so every version of a key, lives on one shard: FINAL and GROUP BY store stay exact per shard
//   CREATE MATERIALIZED VIEW v TO t AS SELECT … FROM s …
//     → CREATE MATERIALIZED VIEW v ON CLUSTER c TO t_local AS SELECT … FROM s_local … (fires on each shard's
//       inserts; source and target share the sharding key, so the aggregate of a store stays on its shard)
//   CREATE VIEW v AS …  → CREATE VIEW v ON CLUSTER c AS … (reads the Distributed tables)
//   ALTER TABLE t ADD INDEX …  → ALTER TABLE t_local ON CLUSTER c ADD INDEX …
//   ALTER TABLE t ADD COLUMN … → the same on t_local, then on t (the Distributed table's columns follow)
//
// The application keeps reading and writing the unsuffixed names, which are the Distributed tables.
// Any other statement shape is refused (MigrationError): a new kind of migration must be taught here, and
// test/distributed/manifests.test.ts renders every migration, so CI notices.
//
// The statements the services send at run time that depend on the cluster are rendered here too
// (test/distributed/cluster-runtime.test.ts; without a cluster each is exactly today's statement):
//   retention  ALTER TABLE t MODIFY TTL …  → ALTER TABLE t_local ON CLUSTER c MODIFY TTL … (the Distributed
//              table has no TTL of its own; its engine_full is read from t_local)
//   inserts    + SETTINGS distributed_foreground_insert=1 (clickhouse/client.ts adds clusterInsertSettings
//              to every insert): the INSERT returns only once every shard's part is written on a replica
//              of that shard, so an acknowledged chunk is a written one and its dedup token reaches the
//              shards (a background Distributed insert queues the block on the receiving server and
//              acknowledges before any shard has it)
//   replay     refused on a cluster (REPLAY_ON_CLUSTER): its shadow tables and EXCHANGE TABLES are
//              single-server statements

export const LOCAL_SUFFIX = '_local';

export interface ClusterOptions {
  /** the cluster's name in the servers' remote_servers */
  cluster: string;
  /** the database every table lives in (the Distributed tables name it) */
  database: string;
}

export class ClusterRenderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClusterRenderError';
  }
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const CREATE_TABLE = /^CREATE TABLE IF NOT EXISTS ([A-Za-z_][A-Za-z0-9_]*)(\s*\()/;
const CREATE_MV = /^CREATE MATERIALIZED VIEW IF NOT EXISTS ([A-Za-z_][A-Za-z0-9_]*) TO ([A-Za-z_][A-Za-z0-9_]*) AS\b/;
const CREATE_VIEW = /^CREATE VIEW IF NOT EXISTS ([A-Za-z_][A-Za-z0-9_]*) AS\b/;
const ALTER_TABLE = /^ALTER TABLE ([A-Za-z_][A-Za-z0-9_]*)(\s)/;
const ENGINE = /\bENGINE = ([A-Za-z]*MergeTree)(?:\(([^()]*)\))?/;

const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The replication path of a local table: one ZooKeeper/Keeper path per shard, a replica per server. */
export const REPLICATION_PATH = '/clickhouse/tables/{shard}/{database}/{table}';

/** schema_migrations on a cluster: one replicated table shared by every server (no {shard} in its path), so
 *  a service connected to any server sees every migration the cluster applied. */
export function schemaMigrationsDdl(cluster: string): string {
  return `CREATE TABLE IF NOT EXISTS schema_migrations ON CLUSTER ${assertName(cluster)} (
      version UInt32,
      name String,
      checksum String,
      applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
    ) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{database}/schema_migrations', '{shard}-{replica}') ORDER BY version`;
}

function assertName(name: string): string {
  if (!IDENT.test(name)) throw new ClusterRenderError(`not a plain ClickHouse identifier: ${JSON.stringify(name)}`);
  return name;
}

/** The sharding column of a CREATE TABLE body: store_id when the table has it, else its first ORDER BY column. */
function shardingColumn(stmt: string, table: string): string {
  if (/\(\s*store_id\s|\n\s*store_id\s/.test(stmt)) return 'store_id';
  const m = /\bORDER BY \(?\s*`?([A-Za-z_][A-Za-z0-9_]*)/.exec(stmt);
  if (!m) throw new ClusterRenderError(`${table}: no store_id column and no ORDER BY to shard by`);
  return m[1];
}

/** Render every migration for the cluster; without one, every migration's own statements (the same arrays). */
export function renderMigrations(
  migrations: readonly { file: string; statements: string[] }[],
  opts: ClusterOptions | undefined,
): string[][] {
  if (!opts) return migrations.map((m) => m.statements);
  const cluster = assertName(opts.cluster);
  const database = assertName(opts.database);
  const on = `ON CLUSTER ${cluster}`;
  // tables made local + Distributed so far (in migration order: an ALTER or a view refers to earlier ones)
  const sharded = new Set<string>();
  const local = (t: string) => `${t}${LOCAL_SUFFIX}`;
  const requireSharded = (t: string, file: string) => {
    if (!sharded.has(t)) throw new ClusterRenderError(`${file}: ${t} is not a table created by an earlier migration`);
  };

  const renderOne = (stmt: string, file: string): string[] => {
    let m = CREATE_TABLE.exec(stmt);
    if (m) {
      const table = m[1];
      const engine = ENGINE.exec(stmt);
      if (!engine) throw new ClusterRenderError(`${file}: ${table} is not a MergeTree-family table`);
      const args = engine[2]?.trim();
      const replicated = `ENGINE = Replicated${engine[1]}(${quote(REPLICATION_PATH)}, '{replica}'${args ? `, ${args}` : ''})`;
      const body = stmt
        .slice(m[0].length - m[2].length)
        .replace(ENGINE, replicated)
        .replace(/\bnon_replicated_deduplication_window\b/g, 'replicated_deduplication_window');
      const key = shardingColumn(stmt, table);
      sharded.add(table);
      return [
        `CREATE TABLE IF NOT EXISTS ${local(table)} ${on}${body}`,
        `CREATE TABLE IF NOT EXISTS ${table} ${on} AS ${local(table)} ENGINE = Distributed(${quote(cluster)}, ${quote(database)}, ${quote(local(table))}, cityHash64(${key}))`,
      ];
    }
    m = CREATE_MV.exec(stmt);
    if (m) {
      const [head, view, target] = m;
      requireSharded(target, file);
      const select = stmt.slice(head.length);
      const sources = [...select.matchAll(/\b(FROM|JOIN)\s+([A-Za-z_][A-Za-z0-9_]*)\b/g)];
      if (sources.length === 0) throw new ClusterRenderError(`${file}: ${view} reads no table`);
      for (const s of sources) requireSharded(s[2], file);
      const rendered = select.replace(
        /\b(FROM|JOIN)(\s+)([A-Za-z_][A-Za-z0-9_]*)\b/g,
        (_all, kw: string, ws: string, t: string) => `${kw}${ws}${local(t)}`,
      );
      return [`CREATE MATERIALIZED VIEW IF NOT EXISTS ${view} ${on} TO ${local(target)} AS${rendered}`];
    }
    m = CREATE_VIEW.exec(stmt);
    if (m) return [`CREATE VIEW IF NOT EXISTS ${m[1]} ${on} AS${stmt.slice(m[0].length)}`];
    m = ALTER_TABLE.exec(stmt);
    if (m) {
      const table = m[1];
      requireSharded(table, file);
      const rest = stmt.slice(m[0].length - m[2].length);
      const actions = rest.split(/,\s*\n/).map((a) => a.trim().split(/\s+/).slice(0, 2).join(' ').toUpperCase());
      if (actions.every((a) => a === 'ADD INDEX')) return [`ALTER TABLE ${local(table)} ${on}${rest}`];
      if (actions.every((a) => a === 'ADD COLUMN'))
        return [`ALTER TABLE ${local(table)} ${on}${rest}`, `ALTER TABLE ${table} ${on}${rest}`];
      throw new ClusterRenderError(
        `${file}: ALTER TABLE ${table}: only ADD INDEX or ADD COLUMN statements are rendered`,
      );
    }
    throw new ClusterRenderError(`${file}: no cluster rendering for: ${stmt.slice(0, 80)}…`);
  };

  return migrations.map((mig) => mig.statements.flatMap((s) => renderOne(s, mig.file)));
}

// ------------------------------------------------------------------------------------ run-time statements

/** The table holding `table`'s rows and engine (TTL, engine_full in system.tables): itself on one server,
 *  its `_local` table on a cluster. */
export function storageTable(table: string, cluster: string | undefined): string {
  return cluster ? `${assertName(table)}${LOCAL_SUFFIX}` : table;
}

/** Retention of a table: `ALTER TABLE … MODIFY TTL toDateTime(column) + INTERVAL days DAY`, on a cluster
 *  on every shard's local table (a replicated ALTER: one replica per shard runs it, the others follow). */
export function retentionTtlDdl(table: string, column: string, days: number, cluster: string | undefined): string {
  if (!Number.isInteger(days) || days < 1)
    throw new ClusterRenderError(`retention of ${table}: not a number of days: ${days}`);
  const target = cluster ? `${storageTable(table, cluster)} ON CLUSTER ${assertName(cluster)}` : assertName(table);
  return `ALTER TABLE ${target} MODIFY TTL toDateTime(${assertName(column)}) + INTERVAL ${days} DAY`;
}

/** Settings every INSERT carries on a cluster (none on one server). `distributed_foreground_insert` is
 *  the name since ClickHouse 23.10 (`insert_distributed_sync` before, still an alias). */
export function clusterInsertSettings(cluster: string | undefined): Record<string, number> {
  return cluster ? { distributed_foreground_insert: 1 } : {};
}

/** Why a replay refuses to run on a cluster. */
export const REPLAY_ON_CLUSTER =
  'replay is not supported on a ClickHouse cluster (CLICKHOUSE_CLUSTER): its shadow tables (CREATE TABLE … AS, ' +
  'materialized views over them) and the swap (EXCHANGE TABLES) are single-server statements, and on a cluster ' +
  'they would rebuild the Distributed tables, not the replicated local tables that hold the rows. ' +
  'Rebuild on a single server, or see docs/distributed.md';
