// `npm run service -- <name>` (deploy/service.ts): a service refuses to start without what distributed
// mode needs (exit 64, a message naming it); the ClickHouse stand-in starts on its own, prints its URL,
// answers, and stops cleanly on SIGTERM.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { freePorts } from '../../deploy/local/stack.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(path.join(os.tmpdir(), 'sd-service-entry-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** the environment without any distributed-mode URL inherited from the runner */
function baseEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dir, HOST: '127.0.0.1', ...extra };
  for (const k of ['CLICKHOUSE_URL', 'SCHEMA_REGISTRY_URL', 'KAFKA_BROKERS', 'REDIS_URL', 'STREAMS_PROCESSORS'])
    if (!(k in extra)) delete env[k];
  return env;
}

const run = (args: string[], env: NodeJS.ProcessEnv) =>
  spawnSync(process.execPath, ['deploy/service.ts', ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: 30_000 });

test('a service without CLICKHOUSE_URL, or without SCHEMA_REGISTRY_URL, refuses to start with exit code 64', () => {
  const noClickHouse = run(['intake'], baseEnv());
  expect(noClickHouse.status).toBe(64);
  expect(noClickHouse.stderr).toContain('intake: CLICKHOUSE_URL is required in distributed mode');

  const noRegistry = run(['storefront'], baseEnv({ CLICKHOUSE_URL: 'http://127.0.0.1:9' }));
  expect(noRegistry.status).toBe(64);
  expect(noRegistry.stderr).toContain('storefront: SCHEMA_REGISTRY_URL is required in distributed mode');
});

test('an unknown service, or --processor on another service, is a usage error (64)', () => {
  const unknown = run(['warehouse'], baseEnv());
  expect(unknown.status).toBe(64);
  expect(unknown.stderr).toContain('unknown service "warehouse"; one of: clickhouse, schema-registry, intake');

  const misplaced = run(
    ['intake', '--processor', 'events'],
    baseEnv({ CLICKHOUSE_URL: 'http://127.0.0.1:9', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:9' }),
  );
  expect(misplaced.status).toBe(64);
  expect(misplaced.stderr).toContain('--processor applies to the processors service only');
});

test('the clickhouse service starts alone, prints its URL, answers queries, and exits 0 on SIGTERM', async () => {
  const [port] = await freePorts(1);
  const child = spawn(process.execPath, ['deploy/service.ts', 'clickhouse'], {
    cwd: ROOT,
    env: baseEnv({ CLICKHOUSE_HTTP_PORT: String(port), CLICKHOUSE_USER: 'svc', CLICKHOUSE_PASSWORD: 'pw' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => {
    out += b;
  });
  child.stderr.on('data', (b: Buffer) => {
    out += b;
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  try {
    await expect.poll(() => out, { timeout: 30_000 }).toContain(`clickhouse: clickhouse http://127.0.0.1:${port}`);
    const r = await fetch(`http://127.0.0.1:${port}/?query=SELECT%2040%2B2&user=svc&password=pw`);
    expect(await r.text()).toBe('42\n');
  } finally {
    child.kill('SIGTERM');
  }
  expect(await exited).toEqual({ code: 0, signal: null });
});
