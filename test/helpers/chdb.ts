// A private chDB database for tests that write to ClickHouse directly: chDB binds one data directory per
// process, so each test worker process uses its own directory (never the app's), and each caller its own
// database inside it.
import os from 'node:os';
import path from 'node:path';
import { type Db, openDb } from '../../clickhouse/client.ts';

export function privateDb(database: string): Promise<Db> {
  return openDb({ chdbPath: path.join(os.tmpdir(), `sd-chdb-${process.pid}`), database });
}
