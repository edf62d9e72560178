// `npm start` keeps serving when one of its children dies: the broker and then Redis are SIGKILLed under
// the launcher. Each is started again (same port, same data directory) after its backoff, with a line
// saying so, and the launcher stays up. While the broker is away the beacon answers 503 + Retry-After
// (or 201 once it is back) and the storefront reads keep answering; afterwards the beacon answers 201
// again and every event acknowledged before, during and after the outage is in ClickHouse. While Redis is
// away the app keeps serving too. A SIGKILLed app is started again and serves. Ctrl-C still stops
// everything cleanly after the restarts.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePorts } from '../../deploy/local/stack.ts';
import { openConfigWriter } from '../../services/store-config/writer.ts';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-launcher-restart-'));
const BACKOFF_MS = 1_500;

let launcher: ChildProcess | undefined;
let out = '';
let ports: Record<'http' | 'kafka' | 'registry' | 'ch' | 'redis', number>;
let base = '';
let store: { storeId: string; token: string };

/** pid of the launcher's child whose command line matches `re` */
function childPid(re: RegExp): number | undefined {
  const lines = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(launcher!.pid)], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => re.test(l));
  return lines.length ? Number(lines[0]!.trim().split(/\s+/)[0]) : undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function beacon(ids: string[]) {
  const res = await fetch(`${base}/beacon`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-storefront-access-token': store.token },
    body: JSON.stringify({
      events: ids.map((id) => ({
        event_id: id,
        event_type: 'product_view',
        timestamp: new Date().toISOString(),
        session_id: 'sess-launcher',
        product_id: 4242,
      })),
    }),
  });
  await res.arrayBuffer();
  return { status: res.status, retryAfter: res.headers.get('retry-after') };
}

async function read(): Promise<number[]> {
  const health = await fetch(`${base}/healthz`);
  const complete = await fetch(`${base}/api/storefront/v1/search/complete?query=sh`, {
    headers: { 'x-storefront-access-token': store.token },
  });
  await Promise.all([health.arrayBuffer(), complete.arrayBuffer()]);
  return [health.status, complete.status];
}

async function storedIds(): Promise<Set<string>> {
  const r = await fetch(`http://127.0.0.1:${ports.ch}/?param_store=${store.storeId}`, {
    method: 'POST',
    body: 'SELECT DISTINCT event_id FROM discovery.events_raw WHERE store_id = {store:String} FORMAT TSV',
  });
  if (r.status !== 200) throw new Error(`ClickHouse answered ${r.status}: ${await r.text()}`);
  return new Set(
    (await r.text())
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean),
  );
}

/** the launcher's output after the first `since` characters */
const outputSince = (start: number) => out.slice(start);

beforeAll(async () => {
  const [http, kafka, registry, ch, redis] = await freePorts(5);
  ports = { http: http!, kafka: kafka!, registry: registry!, ch: ch!, redis: redis! };
  base = `http://127.0.0.1:${http}`;
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
      // a visible outage: the broker stays away for the backoff before it is started again
      LAUNCHER_BACKOFF_MS: String(BACKOFF_MS),
      LAUNCHER_MAX_CRASHES: '3',
      LAUNCHER_CRASH_WINDOW_MS: '600000',
      BEACON_PRODUCE_TIMEOUT_MS: '1000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group, as a shell gives a foreground job
  });
  launcher.stdout!.on('data', (d) => (out += d));
  launcher.stderr!.on('data', (d) => (out += d));
  await vi.waitFor(
    () => {
      if (launcher!.exitCode !== null) throw new Error(`launcher exited early:\n${out}`);
      expect(out).toContain('Press Ctrl-C to stop.');
    },
    { timeout: 180_000, interval: 250 },
  );
  // every module ready: the processors joined their groups (a broker that dies while they start is
  // another case), the store directory loaded
  await vi.waitFor(
    async () => {
      if (launcher!.exitCode !== null) throw new Error(`launcher exited early:\n${out}`);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
    },
    { timeout: 120_000, interval: 500 },
  );
  const writer = openConfigWriter({
    brokers: [`127.0.0.1:${kafka}`],
    registryUrl: `http://127.0.0.1:${registry}`,
    logger: pino({ level: 'error' }),
  });
  const created = await writer.createStore({ name: 'Launcher restarts' });
  const last = writer.lastWritten()!;
  await writer.close();
  store = { storeId: created.storeId, token: created.token };
  await vi.waitFor(
    async () => {
      const r = await fetch(`${base}/internal/store-config/caught-up?offset=${last.offset}&wait_ms=2000`);
      expect(((await r.json()) as { caught_up?: boolean }).caught_up).toBe(true);
    },
    { timeout: 30_000, interval: 200 },
  );
}, 240_000);

afterAll(async () => {
  if (launcher && launcher.exitCode === null && launcher.signalCode === null) {
    try {
      process.kill(-launcher.pid!, 'SIGKILL');
    } catch {}
  }
  rmSync(dataDir, { recursive: true, force: true });
});

describe('npm start when a child dies', () => {
  it('restarts a SIGKILLed broker on its port and log: intake 503 + Retry-After meanwhile, reads keep answering, nothing acknowledged lost', async () => {
    const acknowledged: string[] = [];
    const before = Array.from({ length: 10 }, () => newUlid());
    expect((await beacon(before)).status).toBe(201);
    acknowledged.push(...before);
    // the processors are consuming: these ten are in ClickHouse
    await expect
      .poll(
        async () => {
          const stored = await storedIds();
          return before.filter((id) => !stored.has(id));
        },
        { timeout: 60_000, interval: 500 },
      )
      .toEqual([]);

    const brokerPid = childPid(/kafka-broker\/main/)!;
    expect(brokerPid).toBeGreaterThan(0);
    const mark = out.length;
    process.kill(brokerPid, 'SIGKILL');
    await vi.waitFor(
      () => expect(outputSince(mark)).toMatch(/broker exited unexpectedly \(code null, signal SIGKILL\)/),
      {
        timeout: 10_000,
      },
    );
    expect(outputSince(mark)).toMatch(/restarting it in 1\.5 s/);

    // the outage: the broker is away for the backoff; reads answer, the intake refuses what it cannot store
    expect(alive(brokerPid)).toBe(false);
    expect(await read()).toEqual([200, 200]);
    const answers: { status: number; retryAfter: string | null }[] = [];
    while (!/broker restarted/.test(outputSince(mark))) {
      const ids = [newUlid(), newUlid()];
      const a = await beacon(ids);
      answers.push(a);
      if (a.status === 201) acknowledged.push(...ids);
      else {
        expect(a.status).toBe(503);
        expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
      }
      expect(await read()).toEqual([200, 200]);
      if (launcher!.exitCode !== null) throw new Error(`launcher exited:\n${out}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(answers.filter((a) => a.status === 503).length).toBeGreaterThan(0);
    expect(outputSince(mark)).toMatch(/broker restarted \(pid \d+\), serving again after/);

    // the broker is back on the same port: the intake answers 201 again
    const newPid = childPid(/kafka-broker\/main/);
    expect(newPid).toBeGreaterThan(0);
    expect(newPid).not.toBe(brokerPid);
    const later = Array.from({ length: 10 }, () => newUlid());
    await expect.poll(async () => (await beacon(later)).status, { timeout: 60_000, interval: 500 }).toBe(201);
    acknowledged.push(...later);

    // every acknowledged event reached ClickHouse (the app's consumers reconnected to the restarted broker)
    await expect
      .poll(
        async () => {
          const stored = await storedIds();
          return acknowledged.filter((id) => !stored.has(id));
        },
        { timeout: 120_000, interval: 1_000 },
      )
      .toEqual([]);
    expect(launcher!.exitCode).toBeNull();
    const back = /broker restarted \(pid \d+\), serving again after ([\d.]+) s/.exec(outputSince(mark))![1];
    console.log(
      `launcher-restart: broker SIGKILLed, started again after a ${BACKOFF_MS / 1000} s backoff, answering ${back} s ` +
        `after its restart; beacon meanwhile: ${answers.filter((a) => a.status === 503).length} × 503 + Retry-After, ` +
        `${answers.filter((a) => a.status === 201).length} × 201; reads meanwhile: ${answers.length + 1} × 200; ` +
        `events acknowledged ${acknowledged.length}, in ClickHouse ${acknowledged.length}, lost 0`,
    );
  }, 240_000);

  it('restarts a SIGKILLed Redis; the app keeps serving reads and intake', async () => {
    const redisPid = childPid(/redis-server/)!;
    expect(redisPid).toBeGreaterThan(0);
    const mark = out.length;
    process.kill(redisPid, 'SIGKILL');
    await vi.waitFor(
      () => expect(outputSince(mark)).toMatch(/redis exited unexpectedly \(code null, signal SIGKILL\)/),
      {
        timeout: 10_000,
      },
    );
    // Redis away: the reads keep answering
    expect(await read()).toEqual([200, 200]);
    await vi.waitFor(() => expect(outputSince(mark)).toMatch(/redis restarted \(pid \d+\), serving again after/), {
      timeout: 30_000,
    });
    expect(childPid(/redis-server/)).not.toBe(redisPid);
    // the app's Redis clients reconnected: reads and intake as before
    await expect.poll(read, { timeout: 30_000, interval: 500 }).toEqual([200, 200]);
    const ids = [newUlid(), newUlid()];
    await expect.poll(async () => (await beacon(ids)).status, { timeout: 30_000, interval: 500 }).toBe(201);
    await expect
      .poll(
        async () => {
          const stored = await storedIds();
          return ids.filter((id) => !stored.has(id));
        },
        { timeout: 60_000, interval: 1_000 },
      )
      .toEqual([]);
    expect(launcher!.exitCode).toBeNull();
  }, 180_000);

  it('restarts a SIGKILLed app; it serves and stores events again', async () => {
    const appPid = childPid(/app\/main/)!;
    expect(appPid).toBeGreaterThan(0);
    const mark = out.length;
    process.kill(appPid, 'SIGKILL');
    await vi.waitFor(() => expect(outputSince(mark)).toMatch(/app exited unexpectedly \(code null, signal SIGKILL\)/), {
      timeout: 10_000,
    });
    await vi.waitFor(() => expect(outputSince(mark)).toMatch(/app restarted \(pid \d+\), serving again after/), {
      timeout: 120_000,
      interval: 250,
    });
    expect(childPid(/app\/main/)).not.toBe(appPid);
    expect(await read()).toEqual([200, 200]);
    const back = /app restarted \(pid \d+\), serving again after ([\d.]+) s/.exec(outputSince(mark))![1];
    console.log(`launcher-restart: app SIGKILLed, serving again ${back} s after its restart`);
    const ids = [newUlid(), newUlid()];
    await expect.poll(async () => (await beacon(ids)).status, { timeout: 30_000, interval: 500 }).toBe(201);
    await expect
      .poll(
        async () => {
          const stored = await storedIds();
          return ids.filter((id) => !stored.has(id));
        },
        { timeout: 90_000, interval: 1_000 },
      )
      .toEqual([]);
    expect(launcher!.exitCode).toBeNull();
  }, 240_000);

  it('still stops everything on Ctrl-C after the restarts', async () => {
    const pids = [childPid(/kafka-broker\/main/)!, childPid(/redis-server/)!, childPid(/app\/main/)!];
    expect(pids.every((p) => p > 0)).toBe(true);
    const exited = new Promise<number | null>((r) => launcher!.once('exit', (code) => r(code)));
    process.kill(-launcher!.pid!, 'SIGINT'); // Ctrl-C: the whole foreground group
    expect(await exited).toBe(0);
    expect(out).toContain('stopped.');
    expect(pids.filter(alive)).toEqual([]);
  }, 120_000);
});
