// The statements the services send at run time on a ClickHouse cluster (CLICKHOUSE_CLUSTER), next to the
// migrations' cluster rendering (clickhouse/cluster-ddl.ts): retention's MODIFY TTL on the local tables
// ON CLUSTER, synchronous inserts through the Distributed tables (distributed_foreground_insert=1, added
// once in clickhouse/client.ts), replay refused. Each rendered statement goes through ClickHouse's own
// parser (chDB formatQuery); without a cluster each is today's statement, byte for byte. The cluster
// itself is not run here (no ClickHouse cluster on this machine): chDB answers ON CLUSTER with "cluster not
// found", which shows the statement reached the engine as rendered.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Db, dbOptionsFromConfig, insertStatement, openDb } from '../../clickhouse/client.ts';
import {
  clusterInsertSettings,
  REPLAY_ON_CLUSTER,
  retentionTtlDdl,
  schemaMigrationsDdl,
  storageTable,
} from '../../clickhouse/cluster-ddl.ts';
import { type ClickHouseServer, startClickHouseServer } from '../../clickhouse/http-server.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { ConfigError, loadConfig } from '../../services/common/config.ts';
import { createLogger } from '../../services/common/logger.ts';
import { runReplay } from '../../streams/replay/replay.ts';
import { applyRetention } from '../../streams/service.ts';
import { privateDb } from '../helpers/chdb.ts';

const logger = createLogger('cluster-runtime-test', 'silent');

/** A real Db whose statements are recorded on their way in, seen as connected to `cluster`. */
function onCluster(db: Db, cluster: string | undefined): { db: Db; commands: string[] } {
  const commands: string[] = [];
  const proxy = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'cluster') return cluster;
      if (prop === 'command')
        return (sql: string, params?: Record<string, unknown>) => {
          commands.push(sql);
          return target.command(sql, params);
        };
      return Reflect.get(target, prop, receiver);
    },
  });
  return { db: proxy, commands };
}

let db: Db;
beforeAll(async () => {
  db = await privateDb(`cluster_runtime_${newUlid().toLowerCase()}`);
  await migrate(db);
}, 180_000);
afterAll(async () => {
  await db?.close();
});

async function formatted(sql: string): Promise<string> {
  const [row] = await db.query<{ f: string }>('SELECT formatQuery({sql:String}) AS f', { sql });
  return row.f;
}

describe('CLICKHOUSE_CLUSTER in the configuration', () => {
  const server = { CLICKHOUSE_URL: 'http://clickhouse:8123' };
  test('unset or empty is one server; a name is the cluster, carried to the Db options', () => {
    expect(loadConfig({ ...server }).CLICKHOUSE_CLUSTER).toBeUndefined();
    expect(loadConfig({ ...server, CLICKHOUSE_CLUSTER: '' }).CLICKHOUSE_CLUSTER).toBeUndefined();
    expect(loadConfig({ ...server, CLICKHOUSE_CLUSTER: '  ' }).CLICKHOUSE_CLUSTER).toBeUndefined();
    const config = loadConfig({ ...server, CLICKHOUSE_CLUSTER: ' discovery ' });
    expect(config.CLICKHOUSE_CLUSTER).toBe('discovery');
    expect(dbOptionsFromConfig(config).cluster).toBe('discovery');
    expect(dbOptionsFromConfig(loadConfig({ ...server })).cluster).toBeUndefined();
  });

  test('a name that is no identifier, or a cluster without a server, is refused naming the variable', async () => {
    for (const env of [{ ...server, CLICKHOUSE_CLUSTER: 'disc-overy' }, { CLICKHOUSE_CLUSTER: 'discovery' }]) {
      let error: unknown;
      try {
        loadConfig(env);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).issues.map((i) => i.variable)).toEqual(['CLICKHOUSE_CLUSTER']);
    }
    await expect(
      openDb({ chdbPath: path.join(os.tmpdir(), `sd-chdb-${process.pid}`), database: 'x', cluster: 'discovery' }),
    ).rejects.toThrow('CLICKHOUSE_CLUSTER) needs a ClickHouse server (CLICKHOUSE_URL)');
  });

  test("migrate() renders for the Db's cluster when none is passed", async () => {
    const fresh = await privateDb(`cluster_runtime_m_${newUlid().toLowerCase()}`);
    try {
      const { db: rec, commands } = onCluster(fresh, 'discovery');
      await expect(migrate(rec)).rejects.toThrow(/discovery.*not found|CLUSTER_DOESNT_EXIST/);
      expect(commands).toEqual([schemaMigrationsDdl('discovery')]);
    } finally {
      await fresh.close();
    }
  });
});

describe('retention (streams/service.ts applyRetention)', () => {
  test('one server: the statement is the one sent before, parsed by ClickHouse', async () => {
    const sql = retentionTtlDdl('events_raw', 'ts', 30, undefined);
    expect(sql).toBe('ALTER TABLE events_raw MODIFY TTL toDateTime(ts) + INTERVAL 30 DAY');
    expect(await formatted(sql)).toBe('ALTER TABLE events_raw\n    (MODIFY TTL toDateTime(ts) + toIntervalDay(30))');
    expect(storageTable('events_raw', undefined)).toBe('events_raw');
  });

  test('a cluster: the local table on every shard, ON CLUSTER, parsed by ClickHouse', async () => {
    const sql = retentionTtlDdl('events_raw', 'ts', 30, 'discovery');
    expect(sql).toBe('ALTER TABLE events_raw_local ON CLUSTER discovery MODIFY TTL toDateTime(ts) + INTERVAL 30 DAY');
    expect(await formatted(sql)).toBe(
      'ALTER TABLE events_raw_local ON CLUSTER discovery\n    (MODIFY TTL toDateTime(ts) + toIntervalDay(30))',
    );
    expect(() => retentionTtlDdl('events_raw', 'ts', 30, 'a cluster')).toThrow('not a plain ClickHouse identifier');
  });

  test('applyRetention sends exactly those statements: today’s on one server, the local tables’ on a cluster', async () => {
    const single = onCluster(db, undefined);
    await applyRetention(single.db, 31, logger, 7);
    expect(single.commands.sort()).toEqual([
      'ALTER TABLE events_raw MODIFY TTL toDateTime(ts) + INTERVAL 31 DAY',
      'ALTER TABLE orders_raw MODIFY TTL toDateTime(ts) + INTERVAL 31 DAY',
      'ALTER TABLE rejected_events_raw MODIFY TTL toDateTime(ts) + INTERVAL 7 DAY',
      'ALTER TABLE requests_raw MODIFY TTL toDateTime(ts) + INTERVAL 31 DAY',
    ]);
    // the same TTL again changes nothing
    const again = onCluster(db, undefined);
    await applyRetention(again.db, 31, logger, 7);
    expect(again.commands).toEqual([]);

    // on a cluster the TTL is read from, and set on, the local table (here a copy of events_raw with its
    // TTL; the Distributed events_raw has none): this engine has no cluster and says so (for an ALTER:
    // "Replicated DDL queries are disabled")
    await db.command('CREATE TABLE IF NOT EXISTS events_raw_local AS events_raw');
    const cluster = onCluster(db, 'discovery');
    await expect(applyRetention(cluster.db, 40, logger, 7)).rejects.toThrow(
      /discovery.*not found|CLUSTER_DOESNT_EXIST|Replicated DDL queries are disabled/,
    );
    expect(cluster.commands).toEqual([
      'ALTER TABLE events_raw_local ON CLUSTER discovery MODIFY TTL toDateTime(ts) + INTERVAL 40 DAY',
    ]);
    const unchanged = onCluster(db, 'discovery');
    await applyRetention(unchanged.db, 31, logger, 7);
    expect(unchanged.commands).toEqual([]);
  });
});

describe('inserts (clickhouse/client.ts)', () => {
  test('one server: the INSERT statements are the ones sent before; a cluster adds distributed_foreground_insert=1', async () => {
    expect(clusterInsertSettings(undefined)).toEqual({});
    expect(insertStatement('events_raw', {}, undefined)).toBe('INSERT INTO events_raw FORMAT JSONEachRow');
    expect(insertStatement('events_raw', { dedupToken: 'p0:12-40' }, undefined)).toBe(
      "INSERT INTO events_raw SETTINGS insert_deduplication_token='p0:12-40', deduplicate_blocks_in_dependent_materialized_views=1 FORMAT JSONEachRow",
    );
    const plain = insertStatement('events_raw', {}, 'discovery');
    const tokened = insertStatement('events_raw', { dedupToken: 'p0:12-40' }, 'discovery');
    expect(plain).toBe('INSERT INTO events_raw SETTINGS distributed_foreground_insert=1 FORMAT JSONEachRow');
    expect(tokened).toBe(
      "INSERT INTO events_raw SETTINGS insert_deduplication_token='p0:12-40', deduplicate_blocks_in_dependent_materialized_views=1, distributed_foreground_insert=1 FORMAT JSONEachRow",
    );
    expect(await formatted(tokened)).toBe(
      "INSERT INTO events_raw\nSETTINGS insert_deduplication_token = 'p0:12-40', deduplicate_blocks_in_dependent_materialized_views = 1, distributed_foreground_insert = 1\nFORMAT JSONEachRow",
    );
    // the engine knows the setting by this name (insert_distributed_sync is its old alias)
    const [s] = await db.query<{ alias_for: string }>(
      "SELECT alias_for FROM system.settings WHERE name = 'insert_distributed_sync'",
    );
    expect(s.alias_for).toBe('distributed_foreground_insert');
  });

  describe('over HTTP (the stand-in: chDB behind ClickHouse’s HTTP interface)', () => {
    let server: ClickHouseServer;
    let forwarder: http.Server;
    const seen: string[] = [];
    beforeAll(async () => {
      // the worker's own chDB directory (chDB opens one data directory per process)
      server = await startClickHouseServer({
        chdbPath: path.join(os.tmpdir(), `sd-chdb-${process.pid}`),
        host: '127.0.0.1',
        port: 0,
        logger,
      });
      // every request's statement on its way to the server, recorded (the client sends it in the URL)
      const target = new URL(server.url);
      forwarder = http.createServer((req, res) => {
        const query = new URL(req.url ?? '/', 'http://x').searchParams.get('query');
        if (query) seen.push(query);
        const out = http.request(
          { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
          (r) => {
            res.writeHead(r.statusCode ?? 502, r.headers);
            r.pipe(res);
          },
        );
        req.pipe(out);
      });
      await new Promise<void>((resolve) => forwarder.listen(0, '127.0.0.1', resolve));
    }, 60_000);
    afterAll(async () => {
      await new Promise((resolve) => forwarder?.close(resolve));
      await server?.close();
    });

    test('a Db on a cluster sends the setting with every insert; the dedup token still drops a retried chunk', async () => {
      const url = `http://127.0.0.1:${(forwarder.address() as AddressInfo).port}`;
      const clustered = await openDb({
        url,
        database: `cluster_runtime_http_${newUlid().toLowerCase()}`,
        cluster: 'discovery',
      });
      try {
        expect(clustered.cluster).toBe('discovery');
        await clustered.command(
          'CREATE TABLE IF NOT EXISTS t (store_id String, n UInt32) ENGINE = MergeTree ORDER BY store_id SETTINGS non_replicated_deduplication_window = 100',
        );
        const rows = [
          { store_id: 's1', n: 1 },
          { store_id: 's2', n: 2 },
        ];
        await clustered.insert('t', rows, { dedupToken: 'chunk-1' });
        await clustered.insert('t', rows, { dedupToken: 'chunk-1' }); // the retry of an acknowledged chunk
        await clustered.insert('t', [{ store_id: 's3', n: 3 }]);
        const inserts = seen.filter((q) => q.startsWith('INSERT'));
        expect(inserts).toEqual([
          insertStatement('t', { dedupToken: 'chunk-1' }, 'discovery'),
          insertStatement('t', { dedupToken: 'chunk-1' }, 'discovery'),
          'INSERT INTO t SETTINGS distributed_foreground_insert=1 FORMAT JSONEachRow',
        ]);
        expect(await clustered.query('SELECT store_id, n FROM t ORDER BY store_id')).toEqual([
          ...rows,
          { store_id: 's3', n: 3 },
        ]);
      } finally {
        await clustered.close();
      }
    });
  });
});

describe('replay (streams/replay/replay.ts)', () => {
  test('refuses on a cluster before anything starts, naming the limitation', async () => {
    const { db: rec, commands } = onCluster(db, 'discovery');
    const env = { config: {}, db: rec, redis: {}, kafka: {}, logger, deps: {}, runOptions: () => ({}) } as never;
    const events: unknown[] = [];
    await expect(
      runReplay(env, { processor: 'events', from: { kind: 'earliest' } }, (e) => events.push(e)),
    ).rejects.toMatchObject({ name: 'ReplayError', status: 501, message: REPLAY_ON_CLUSTER });
    expect(REPLAY_ON_CLUSTER).toContain('EXCHANGE TABLES');
    expect(commands).toEqual([]);
    expect(events).toEqual([]);
  });
});
