// Distributed mode's service processes for tests: `node deploy/service.ts <service>` children sharing one
// broker (the embedded one or Apache Kafka), one Redis and the ClickHouse stand-in, each with its own data
// directory and HTTP port, their output in <dir>/services.log. Used by topology.test.ts (embedded broker)
// and topology-kafka.test.ts (Apache Kafka ×3).
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AssignerProtocol, Kafka, logLevel } from 'kafkajs';
import pino from 'pino';
import { newUlid } from '../../services/common/ids.ts';
import { expect } from 'vitest';
import { freePorts } from '../../deploy/local/stack.ts';
import { type ConfigWriter, openConfigWriter } from '../../services/store-config/writer.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
export const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const CH_USER = 'distributed';
const CH_PASSWORD = 'topology-test-secret';
const TAIL_CHARS = 4000;

export interface Proc {
  name: string;
  child: ChildProcess;
  urls: Record<string, string>;
}

export interface ViewEvent {
  event_id: string;
  event_type: 'product_view';
  timestamp: string;
  session_id: string;
  product_id: number;
}

export type Topology = ReturnType<typeof createTopology>;

/**
 * The processes of one topology under a fresh temporary directory. Set `brokers` and `redisUrl` before
 * starting a service that needs them; `startStandIn()` and `startRegistry()`
 * start the ClickHouse stand-in and the schema registry.
 */
export function createTopology() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sd-distributed-'));
  const log = createWriteStream(path.join(dir, 'services.log'));
  const procs: Proc[] = [];
  const tails = new Map<string, string>(); // the last output of each process, for a failure's message
  let writer: ConfigWriter | undefined;

  const t = {
    dir,
    procs,
    brokers: '',
    redisUrl: '',
    clickhouseUrl: '',
    registryUrl: '',

    /** a child process whose output goes to the services log, prefixed by `name` */
    spawnLogged(name: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess {
      const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
      for (const s of [child.stdout, child.stderr]) {
        s?.on('data', (b: Buffer) => {
          log.write(`[${name}] ${b}`);
          const tail = `${tails.get(name) ?? ''}${b}`;
          tails.set(name, tail.slice(-TAIL_CHARS));
        });
      }
      return child;
    },

    /** `node deploy/service.ts <service>` with its own data directory and HTTP port; resolves on its ready message. */
    async startService(name: string, service: string, env: Record<string, string> = {}, args: string[] = []) {
      const [port] = await freePorts(1);
      const dataDir = path.join(dir, name);
      mkdirSync(dataDir, { recursive: true });
      const child = t.spawnLogged(name, ['deploy/service.ts', service, ...args], {
        ...process.env,
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        HTTP_PORT: String(port),
        KAFKA_BROKERS: t.brokers,
        REDIS_URL: t.redisUrl,
        CLICKHOUSE_USER: CH_USER,
        CLICKHOUSE_PASSWORD: CH_PASSWORD,
        LOG_LEVEL: 'warn',
        DEMO_STORE: 'false',
        SERVICE_BUILD: 'test',
        STREAMS_SESSION_TIMEOUT_MS: '6000',
        ...(t.clickhouseUrl ? { CLICKHOUSE_URL: t.clickhouseUrl } : {}),
        ...(t.registryUrl ? { SCHEMA_REGISTRY_URL: t.registryUrl } : {}),
        ...env,
      });
      const urls = await new Promise<Record<string, string>>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${name} not ready within 180 s (see ${dir}/services.log)`)),
          180_000,
        );
        child.on('message', (m: { type?: string; urls?: Record<string, string> }) => {
          if (m.type === 'ready') {
            clearTimeout(timer);
            resolve(m.urls ?? {});
          }
        });
        child.once('exit', (code, signal) => {
          clearTimeout(timer);
          const tail = tails.get(name)?.trimEnd() ?? '(no output)';
          reject(new Error(`${name} exited (${code ?? signal}) before it was ready; its last output:\n${tail}`));
        });
      });
      const p = { name, child, urls };
      procs.push(p);
      return p;
    },

    /** the ClickHouse stand-in (needs nothing else) */
    async startStandIn(port?: number) {
      const [chPort] = port ? [port] : await freePorts(1);
      const ch = await t.startService('clickhouse', 'clickhouse', { CLICKHOUSE_HTTP_PORT: String(chPort) });
      t.clickhouseUrl = ch.urls.clickhouse;
    },

    /** the schema registry (after the stand-in, with `brokers` set); it runs the migrations and creates the topics */
    async startRegistry(port?: number) {
      const [registryPort] = port ? [port] : await freePorts(1);
      const registry = await t.startService('registry', 'schema-registry', {
        SCHEMA_REGISTRY_PORT: String(registryPort),
      });
      t.registryUrl = registry.urls.schemaRegistry;
    },

    proc(name: string): Proc {
      const p = procs.find((x) => x.name === name);
      if (!p) throw new Error(`no process ${name}`);
      return p;
    },

    async stopProc(p: Proc, signal: NodeJS.Signals = 'SIGTERM') {
      if (p.child.exitCode !== null || p.child.signalCode !== null) return;
      const exited = new Promise((r) => p.child.once('exit', r));
      p.child.kill(signal);
      await exited;
    },

    /** SQL through the stand-in's HTTP interface (JSONEachRow rows). */
    async sql<T>(query: string, params: Record<string, string> = {}): Promise<T[]> {
      const qs = new URLSearchParams({ database: 'discovery', default_format: 'JSONEachRow' });
      for (const [k, v] of Object.entries(params)) qs.set(`param_${k}`, v);
      const r = await fetch(`${t.clickhouseUrl}/?${qs}`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${CH_USER}:${CH_PASSWORD}`).toString('base64')}` },
        body: query,
      });
      const text = await r.text();
      if (r.status !== 200) throw new Error(`SQL ${r.status}: ${text}`);
      return text
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as T);
    },

    /** A store written to `stores.config.v1`, once every process of `services` has applied it. */
    async createStore(name: string, services: string[]) {
      writer ??= openConfigWriter({
        brokers: t.brokers.split(','),
        registryUrl: t.registryUrl,
        clientId: 'distributed-test-writer',
        logger: pino({ level: 'fatal' }),
      });
      const created = await writer.createStore({ name });
      const w = writer.lastWritten();
      if (!w) throw new Error('the writer wrote nothing');
      for (const s of services) {
        await expect
          .poll(
            async () => {
              const r = await fetch(
                `${t.proc(s).urls.http}/internal/store-config/caught-up?partition=${w.partition}&offset=${w.offset}&wait_ms=1000`,
              );
              return r.ok && ((await r.json()) as { caught_up: boolean }).caught_up;
            },
            { timeout: 30_000 },
          )
          .toBe(true);
      }
      return created;
    },

    /** The members of a consumer group and the partitions of `topic` each one holds (sorted). */
    async groupAssignment(group: string, topic: string): Promise<number[][]> {
      const admin = new Kafka({
        brokers: t.brokers.split(','),
        clientId: 'distributed-test-admin',
        logLevel: logLevel.NOTHING,
      }).admin();
      await admin.connect();
      try {
        const [g] = (await admin.describeGroups([group])).groups;
        if (g.state !== 'Stable') return [];
        return g.members
          .map((m) => AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment[topic] ?? [])
          .map((ps) => [...ps].sort((a, b) => a - b))
          .sort((a, b) => a.length - b.length || a[0] - b[0]);
      } finally {
        await admin.disconnect();
      }
    },

    /** product views of one session, a millisecond apart, 5 s ago */
    viewEvents(session: string, products: number[]): ViewEvent[] {
      const now = Date.now();
      return products.map((p, i) => ({
        event_id: newUlid(),
        event_type: 'product_view',
        timestamp: new Date(now - 5_000 + i).toISOString(),
        session_id: session,
        product_id: p,
      }));
    },

    /** POST events to the intake process `intake`: the status, and the events it acknowledged (not duplicates). */
    async postEvents(
      token: string,
      events: ViewEvent[],
      intake = 'intake',
    ): Promise<{ status: number; acked: number }> {
      const r = await fetch(`${t.proc(intake).urls.http}/beacon`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': UA, 'x-storefront-access-token': token },
        body: JSON.stringify({ events }),
      });
      if (r.status !== 201) {
        await r.body?.cancel();
        return { status: r.status, acked: 0 }; // not acknowledged: the client would retry it
      }
      const body = (await r.json()) as { accepted: number; duplicates: number; rejected: number };
      expect(body.rejected).toBe(0);
      return { status: r.status, acked: body.accepted - body.duplicates };
    },

    /** POST a batch of product views to the intake; the number of events it acknowledged (not duplicates). */
    async sendViews(token: string, session: string, products: number[]): Promise<number> {
      return (await t.postEvents(token, t.viewEvents(session, products))).acked;
    },

    /**
     * Stops every process (the last started first), then `andThen` (the broker, Redis), and removes the
     * directory (KEEP_DISTRIBUTED_DATA keeps it).
     */
    async close(andThen?: () => Promise<void>) {
      await writer?.close();
      for (const p of [...procs].reverse()) await t.stopProc(p);
      await andThen?.();
      log.end();
      if (!process.env.KEEP_DISTRIBUTED_DATA) rmSync(dir, { recursive: true, force: true });
    },
  };
  return t;
}
