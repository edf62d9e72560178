// The registry as its own process (services/schema-registry/main.ts, distributed mode) on a real broker:
// it starts under plain Node, acknowledged writes survive a SIGKILL, and SIGTERM stops it cleanly.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts } from '../../deploy/local/stack.ts';
import { type Broker, startBroker } from '../../services/kafka-broker/index.ts';
import { sr } from './fixture.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
let broker: Broker;
let dataDir: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'sr-proc-'));
  broker = await startBroker({
    port: 0,
    dataDir,
    logger: pino({ level: 'warn' }),
    groupOptions: { initialRebalanceDelayMs: 0 },
  });
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await broker?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function launch(port: number): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(
    path.join(ROOT, 'node_modules/.bin/node'),
    [path.join(ROOT, 'services/schema-registry/main.ts')],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        KAFKA_BROKERS: `127.0.0.1:${broker.port}`,
        HOST: '127.0.0.1',
        SCHEMA_REGISTRY_PORT: String(port),
        KAFKA_TOPIC_PREFIX: 'proc.',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`registry exited (${child.exitCode}):\n${out}`);
    const ok = await fetch(`${url}/config`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { child, url, output: () => out };
    if (Date.now() > deadline) throw new Error(`registry did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const exited = (c: ChildProcess) => new Promise<number | null>((r) => c.once('exit', (code) => r(code)));

describe('schema registry process', () => {
  it('keeps acknowledged registrations across a SIGKILL and stops cleanly on SIGTERM', async () => {
    const [port] = await freePorts(1);
    const first = await launch(port);
    expect(first.output()).toContain('"topic":"proc._schemas"');
    const ids: number[] = [];
    for (const t of ['string', 'long', 'double']) {
      const r = await sr(first.url, 'POST', `/subjects/proc-${t}-value/versions`, { schema: JSON.stringify(t) });
      expect(r.status).toBe(200);
      ids.push(r.body.id);
    }
    expect((await sr(first.url, 'PUT', '/config', { compatibility: 'FULL' })).status).toBe(200);
    first.child.kill('SIGKILL');
    await exited(first.child);

    const second = await launch(port);
    expect((await sr(second.url, 'GET', '/config')).body).toEqual({ compatibilityLevel: 'FULL' });
    for (const [i, t] of ['string', 'long', 'double'].entries()) {
      expect((await sr(second.url, 'GET', `/subjects/proc-${t}-value/versions/1`)).body).toMatchObject({
        id: ids[i],
        version: 1,
      });
      expect((await sr(second.url, 'GET', `/schemas/ids/${ids[i]}`)).body).toEqual({ schema: JSON.stringify(t) });
    }
    const next = await sr(second.url, 'POST', '/subjects/proc-bytes-value/versions', { schema: '"bytes"' });
    expect(next.body.id).toBe(Math.max(...ids) + 1);

    second.child.kill('SIGTERM');
    expect(await exited(second.child)).toBe(0);
  });
});
