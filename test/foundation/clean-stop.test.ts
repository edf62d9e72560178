// `npm start` and Ctrl-C as a newcomer does them: a clean start and stop print no error-level line. The
// launcher runs in a process group of its own and gets SIGINT the way a terminal sends it (to the whole
// foreground group), so this also checks the stop order: the app closes its consumers and producers
// before the broker and Redis go (they would otherwise log connection errors while closing).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { freePorts } from '../../deploy/local/stack.ts';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-clean-stop-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** the lines a user would call errors: pino level ≥ 50, or a Node warning (e.g. TimeoutNegativeWarning) */
function errorLines(output: string): string[] {
  return output.split('\n').filter((line) => {
    if (/Warning:|\bERROR\b|\bFATAL\b/.test(line)) return true;
    if (!line.startsWith('{')) return false;
    try {
      return (JSON.parse(line) as { level?: number }).level! >= 50;
    } catch {
      return false;
    }
  });
}

describe('npm start, then Ctrl-C', () => {
  it('starts and stops without an error-level line, and says which kafkajs swaps hold', async () => {
    const [http, kafka, registry, ch, redis] = await freePorts(5);
    let out = '';
    const child: ChildProcess = spawn(process.execPath, ['deploy/local/start.ts'], {
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        HTTP_PORT: String(http),
        KAFKA_PORT: String(kafka),
        SCHEMA_REGISTRY_PORT: String(registry),
        CLICKHOUSE_HTTP_PORT: String(ch),
        REDIS_PORT: String(redis),
        LOG_LEVEL: 'info',
        LOG_FORMAT: 'json',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, as a shell gives a foreground job
    });
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      await vi.waitFor(
        () => {
          if (child.exitCode !== null) throw new Error(`launcher exited early:\n${out}`);
          expect(out).toContain('Press Ctrl-C to stop.');
        },
        { timeout: 120_000, interval: 250 },
      );
      // every module ready (consumers joined their groups, the demo store loaded)
      await expect
        .poll(async () => (await fetch(`http://127.0.0.1:${http}/readyz`)).status, { timeout: 120_000, interval: 500 })
        .toBe(200);
      process.kill(-child.pid!, 'SIGINT'); // Ctrl-C: the whole foreground group
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
    expect(out).toContain('stopped.');
    expect(errorLines(out)).toEqual([]);
    const swaps = out.split('\n').filter((l) => l.includes('"kafkajs swaps active"'));
    expect(swaps).toHaveLength(1);
  }, 300_000);

  it('a SIGKILLed launcher takes the app, the broker and Redis along (IPC channel closed; parent-death signal)', async () => {
    const [http, kafka, registry, ch, redis] = await freePorts(5);
    const child = spawn(process.execPath, ['deploy/local/start.ts'], {
      env: {
        ...process.env,
        DATA_DIR: mkdtempSync(path.join(dataDir, 'kill-')),
        HTTP_PORT: String(http),
        KAFKA_PORT: String(kafka),
        SCHEMA_REGISTRY_PORT: String(registry),
        CLICKHOUSE_HTTP_PORT: String(ch),
        REDIS_PORT: String(redis),
        DEMO_STORE: 'false',
        LOG_FORMAT: 'json',
      },
      stdio: 'ignore',
      detached: true,
    });
    const children = () =>
      execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(child.pid)], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.trim());
    let pids: Record<string, number> = {};
    try {
      await expect
        .poll(async () => (await fetch(`http://127.0.0.1:${http}/readyz`).catch(() => null))?.status, {
          timeout: 120_000,
          interval: 500,
        })
        .toBe(200);
      for (const line of children()) {
        const [pid, ...args] = line.trim().split(/\s+/);
        const name = /kafka-broker/.test(args.join(' '))
          ? 'broker'
          : /app\/main/.test(args.join(' '))
            ? 'app'
            : 'redis';
        pids[name] = Number(pid);
      }
      expect(Object.keys(pids).sort()).toEqual(['app', 'broker', 'redis']);
      process.kill(child.pid!, 'SIGKILL');
      const alive = (pid: number) => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      await expect
        .poll(() => [pids.app!, pids.broker!, pids.redis!].filter(alive), { timeout: 60_000, interval: 250 })
        .toEqual([]);
    } finally {
      for (const pid of Object.values(pids)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
      pids = {};
    }
  }, 300_000);
});
