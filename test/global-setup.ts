// Starts the real single-node stack (redis-server, embedded broker, app with chDB) once per test run on
// free ports and a fresh data directory. Tests reach it through `inject('stack')` (see helpers/stack.ts)
// and isolate themselves by store id, topic prefix or their own chDB directory.
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { loadConfig } from '../services/common/config.ts';
import { freePorts, type Stack, startStack } from '../deploy/local/stack.ts';
import type { StackInfo } from './helpers/stack.ts';

let stack: Stack | undefined;
let dataDir: string | undefined;

export async function setup(project: TestProject) {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-stack-'));
  const [http, kafka, registry, clickhouse, redis] = await freePorts(5);
  const env = {
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    HTTP_PORT: String(http),
    KAFKA_PORT: String(kafka),
    SCHEMA_REGISTRY_PORT: String(registry),
    CLICKHOUSE_HTTP_PORT: String(clickhouse),
    REDIS_PORT: String(redis),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    DEMO_STORE: 'false',
    // browse tests watch sales reorder best-selling: re-read the ranking signals every second
    RESULTS_SIGNALS_REFRESH_MS: '1000',
    SERVICE_BUILD: 'test',
  };
  const config = loadConfig({
    ...process.env,
    ...env,
    KAFKA_BROKERS: '',
    REDIS_URL: '',
    CLICKHOUSE_URL: '',
    SCHEMA_REGISTRY_URL: '',
  });
  const logPath = path.join(dataDir, 'stack.log');
  const log = createWriteStream(logPath);
  stack = await startStack(config, { output: (c, line) => log.write(`[${c}] ${line}\n`), appEnv: env });
  const info: StackInfo = {
    dataDir,
    logPath,
    env,
    httpUrl: stack.urls.http,
    clickhouseUrl: stack.urls.clickhouse,
    kafkaBrokers: [`127.0.0.1:${kafka}`],
    redisUrl: `redis://127.0.0.1:${redis}`,
    schemaRegistryUrl: stack.urls.schemaRegistry ?? `http://127.0.0.1:${registry}`,
  };
  project.provide('stack', info);
}

export async function teardown() {
  await stack?.stop();
  if (dataDir && !process.env.KEEP_STACK_DATA) rmSync(dataDir, { recursive: true, force: true });
}
