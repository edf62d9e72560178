// `npm start` as a user runs it: the launcher prints its URLs, stops cleanly on Ctrl-C (SIGINT) and a
// second start on the same data directory reuses the data.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { freePorts } from '../../deploy/local/stack.ts';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-restart-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function launch(env: Record<string, string>): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, ['deploy/local/start.ts'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 60 s:\n${out}`)), 60_000);
    child.stdout!.on('data', () => {
      if (out.includes('Press Ctrl-C to stop.')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', (code) => reject(new Error(`launcher exited early (${code}):\n${out}`)));
  });
  return { child, output: () => out };
}

async function interrupt(child: ChildProcess): Promise<number | null> {
  const done = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  child.kill('SIGINT');
  return done;
}

describe('npm start', () => {
  it('prints its URLs, exits cleanly on Ctrl-C and restarts on the same data', async () => {
    const [http, kafka, registry, ch, redis] = await freePorts(5);
    const env = {
      DATA_DIR: dataDir,
      HTTP_PORT: String(http),
      KAFKA_PORT: String(kafka),
      SCHEMA_REGISTRY_PORT: String(registry),
      CLICKHOUSE_HTTP_PORT: String(ch),
      REDIS_PORT: String(redis),
      DEMO_STORE: 'false',
      LOG_LEVEL: 'warn',
    };
    const first = await launch(env);
    expect(first.output()).toContain(`http://127.0.0.1:${ch}`);
    expect(first.output()).toContain(`http://127.0.0.1:${http}`);
    const q = encodeURIComponent('SELECT count() FROM schema_migrations');
    const before = await (await fetch(`http://127.0.0.1:${ch}/?query=${q}`)).text();
    const r1 = new Redis(`redis://127.0.0.1:${redis}`);
    await r1.set('restart-test', 'kept');
    r1.disconnect();
    expect(await interrupt(first.child)).toBe(0);
    expect(first.output()).toContain('stopped.');

    const second = await launch(env);
    const after = await (await fetch(`http://127.0.0.1:${ch}/?query=${q}`)).text();
    expect(after).toBe(before);
    const r2 = new Redis(`redis://127.0.0.1:${redis}`);
    expect(await r2.get('restart-test')).toBe('kept');
    r2.disconnect();
    // modules (stream consumers joining their groups) become ready in the background after start-up
    let ready: Response;
    const deadline = Date.now() + 60_000;
    while ((ready = await fetch(`http://127.0.0.1:${http}/readyz`)).status !== 200 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 250));
    expect({ status: ready.status, body: await ready.text() }).toMatchObject({ status: 200 });
    expect(await interrupt(second.child)).toBe(0);
  }, 180_000);
});
