// `npm start` gives up on a crash loop: the broker is SIGKILLed and its port is then taken by another
// process, so every restart fails at once (EADDRINUSE). After LAUNCHER_MAX_CRASHES crashes within the
// window, each restart delayed by a doubling backoff, the launcher says which component crashed how often
// and why it stops, stops the rest and exits with its own code (69), distinct from a failed start (1) and
// a bad configuration (78).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { EXIT_GAVE_UP } from '../../deploy/local/restart-policy.ts';
import { freePorts } from '../../deploy/local/stack.ts';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-launcher-give-up-'));
let launcher: ChildProcess | undefined;
let squatter: net.Server | undefined;
let pids: number[] = [];

afterAll(async () => {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  if (launcher && launcher.exitCode === null && launcher.signalCode === null) {
    try {
      process.kill(-launcher.pid!, 'SIGKILL');
    } catch {}
  }
  await new Promise((r) => (squatter ? squatter.close(r) : r(undefined)));
  rmSync(dataDir, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm start when a child keeps crashing', () => {
  it(`stops everything after LAUNCHER_MAX_CRASHES crashes within the window, with a clear message and exit code ${EXIT_GAVE_UP}`, async () => {
    const [http, kafka, registry, ch, redis] = await freePorts(5);
    let out = '';
    launcher = spawn(process.execPath, ['deploy/local/start.ts'], {
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        HOST: '127.0.0.1',
        HTTP_PORT: String(http),
        KAFKA_PORT: String(kafka),
        SCHEMA_REGISTRY_PORT: String(registry),
        CLICKHOUSE_HTTP_PORT: String(ch),
        REDIS_PORT: String(redis),
        KAFKA_BROKERS: '',
        REDIS_URL: '',
        CLICKHOUSE_URL: '',
        SCHEMA_REGISTRY_URL: '',
        DEMO_STORE: 'false',
        LOG_LEVEL: 'warn',
        LOG_FORMAT: 'json',
        LAUNCHER_MAX_CRASHES: '3',
        LAUNCHER_CRASH_WINDOW_MS: '600000',
        LAUNCHER_BACKOFF_MS: '300',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    launcher.stdout!.on('data', (d) => (out += d));
    launcher.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => launcher!.once('exit', (code) => r(code)));
    await vi.waitFor(
      () => {
        if (launcher!.exitCode !== null) throw new Error(`launcher exited early:\n${out}`);
        expect(out).toContain('Press Ctrl-C to stop.');
      },
      { timeout: 180_000, interval: 250 },
    );
    const children = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(launcher.pid)], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.trim());
    const pidOf = (re: RegExp) =>
      Number(
        children
          .find((l) => re.test(l))
          ?.trim()
          .split(/\s+/)[0],
      );
    const broker = pidOf(/kafka-broker\/main/);
    pids = [broker, pidOf(/app\/main/), pidOf(/redis-server/)];
    expect(pids.every((p) => p > 0)).toBe(true);

    // the broker dies, and its port is taken before the restart: every restart fails
    process.kill(broker, 'SIGKILL');
    await vi.waitFor(() => expect(alive(broker)).toBe(false), { timeout: 10_000 });
    squatter = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      squatter!.once('error', reject);
      squatter!.listen(kafka, '127.0.0.1', () => resolve());
    });

    expect(await exited).toBe(EXIT_GAVE_UP);
    const lines = out.split('\n');
    const launcherLines = lines.filter((l) => l.startsWith('launcher: '));
    expect(launcherLines).toEqual([
      'launcher: broker exited unexpectedly (code null, signal SIGKILL); restarting it in 0.3 s (crash 1 in the last 600 s; the launcher gives up at 3)',
      'launcher: broker exited unexpectedly (code 1, signal null); restarting it in 0.6 s (crash 2 in the last 600 s; the launcher gives up at 3)',
      'launcher: broker exited unexpectedly (code 1, signal null): crash 3 in the last 600 s, not restarting it',
    ]);
    // the restarted broker said why it could not start
    expect(out).toMatch(/EADDRINUSE/);
    expect(out).toContain(
      'Giving up: broker crashed 3 times within 600 s (last exit: code 1, signal null); its output above says why. ' +
        `The limit is LAUNCHER_MAX_CRASHES=3 within LAUNCHER_CRASH_WINDOW_MS=600000. Exiting with code ${EXIT_GAVE_UP}.`,
    );
    expect(out).toContain('stopped.');
    // the rest was stopped
    await vi.waitFor(() => expect(pids.filter(alive)).toEqual([]), { timeout: 30_000 });
  }, 300_000);
});
