// A throwaway redis-server on a free port (no persistence) for suites that need their own Redis.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { ensureRedisServer, freePorts, tcpOpen } from '../../deploy/local/stack.ts';

export interface RedisServer {
  url: string;
  stop(): Promise<void>;
}

export async function startRedis(): Promise<RedisServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sd-test-redis-'));
  const [port] = await freePorts(1);
  const child: ChildProcess = spawn(
    ensureRedisServer(),
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      'no',
      '--protected-mode',
      'no',
      '--loglevel',
      'warning',
    ],
    { stdio: 'ignore' },
  );
  const deadline = Date.now() + 10_000;
  while (!(await tcpOpen('127.0.0.1', port))) {
    if (Date.now() > deadline) throw new Error('redis-server did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A redis-server and a client of it for the whole test file (started before its first test, stopped after its last). */
export function redisPerFile(): () => Redis {
  let server: RedisServer | undefined;
  let client: Redis | undefined;
  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url);
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.stop();
  });
  return () => {
    if (!client) throw new Error('redisPerFile: used outside a test');
    return client;
  };
}
