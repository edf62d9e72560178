// `npm run start:distributed`: the distributed topology on one machine, every service a process of its
// own (deploy/service.ts) — Apache Kafka ×3 (KRaft, deploy/kafka/cluster.ts: replication factor 3,
// min.insync.replicas=2), the ClickHouse stand-in (chDB behind ClickHouse's HTTP interface), Redis, the
// schema registry, 2 intake processes, 2 processor processes (one consumer group per processor) and
// the read API as 2 worker processes behind one address (HTTP_WORKERS=2: connections handed to them
// round-robin). Prints every URL; Ctrl-C stops them all (services first, then Kafka and Redis);
// `kill -USR2 <launcher pid>` restarts the read-API workers one at a time, without a failed request.
//
// Ports from the usual configuration: Kafka 19092–19094, CLICKHOUSE_HTTP_PORT (stand-in),
// SCHEMA_REGISTRY_PORT, REDIS_PORT, and HTTP_PORT, HTTP_PORT+1, … for the service processes (in the order
// printed). KAFKA_BROKERS / REDIS_URL / CLICKHOUSE_URL set: that server is used instead of starting one.
// Data under DATA_DIR/distributed, each process's log under DATA_DIR/distributed/logs.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type KafkaCluster, startKafkaCluster } from '../kafka/cluster.ts';
import { loadConfigOrExit } from '../../services/common/config.ts';
import { ensureRedisServer, tcpOpen } from './stack.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const config = loadConfigOrExit();
const root = path.join(config.dataDir, 'distributed');
const logs = path.join(root, 'logs');
mkdirSync(logs, { recursive: true });
const host = config.HOST;

interface Running {
  name: string;
  child: ChildProcess;
  log: WriteStream;
}
const running: Running[] = [];
let kafka: KafkaCluster | undefined;
let stopping = false;

function launch(name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv): Running {
  const log = createWriteStream(path.join(logs, `${name}.log`), { flags: 'a' });
  const child = spawn(cmd, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'], detached: true });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  const r = { name, child, log };
  running.push(r);
  child.once('exit', (code, signal) => {
    if (!stopping)
      void stopAll(`${name} exited (code ${code}, signal ${signal}); see ${path.join(logs, `${name}.log`)}`, 1);
  });
  return r;
}

async function stopAll(why: string, code: number): Promise<never> {
  if (stopping) return new Promise<never>(() => {});
  stopping = true;
  process.stdout.write(`\n${why}: stopping…\n`);
  // services in reverse start order (read API and intake before the processors, the stand-in last),
  // then Kafka, then Redis
  const stop = async (r: Running) => {
    if (r.child.exitCode === null && r.child.signalCode === null) {
      const exited = new Promise((resolve) => r.child.once('exit', resolve));
      r.child.kill('SIGTERM');
      const timer = setTimeout(() => r.child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    }
    r.log.end();
  };
  for (const r of [...running].reverse()) if (r.name !== 'redis') await stop(r);
  await kafka?.stop();
  for (const r of running) if (r.name === 'redis') await stop(r);
  process.stdout.write('stopped.\n');
  process.exit(code);
}

const starting = new AbortController();
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(sig, () => {
    starting.abort();
    void stopAll(sig, 0);
  });
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (stopping) throw new Error('stopping');
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `node deploy/service.ts <service>`; resolves with the URLs of its ready message. */
function service(name: string, svc: string, env: Record<string, string>, args: string[] = []) {
  const dataDir = path.join(root, name);
  mkdirSync(dataDir, { recursive: true });
  const r = launch(name, process.execPath, ['deploy/service.ts', svc, ...args], {
    ...process.env,
    HOST: host,
    DATA_DIR: dataDir,
    ...env,
  });
  return new Promise<Record<string, string>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} was not ready within 180 s`)), 180_000);
    r.child.on('message', (m: { type?: string; urls?: Record<string, string> }) => {
      if (m.type !== 'ready') return;
      clearTimeout(timer);
      resolve(m.urls ?? {});
    });
    r.child.once('exit', () => clearTimeout(timer));
  });
}

try {
  const urls: [string, string][] = [];
  process.stdout.write(`Starting the distributed topology (data and logs under ${root})…\n`);

  let redisUrl = process.env.REDIS_URL;
  if (!redisUrl) {
    const dir = path.join(root, 'redis');
    mkdirSync(dir, { recursive: true });
    launch(
      'redis',
      ensureRedisServer(),
      ['--port', String(config.REDIS_PORT), '--bind', host, '--dir', dir],
      process.env,
    );
    await until('redis', () => tcpOpen(host, config.REDIS_PORT));
    redisUrl = `redis://${host}:${config.REDIS_PORT}`;
  }
  urls.push(['redis', redisUrl]);

  let brokers = process.env.KAFKA_BROKERS;
  if (!brokers) {
    process.stdout.write('  Apache Kafka ×3 (the first run fetches it from Maven Central)…\n');
    const kafkaLog = createWriteStream(path.join(logs, 'kafka.log'), { flags: 'a' });
    kafka = await startKafkaCluster({
      brokers: 3,
      ports: [19092, 19093, 19094],
      host,
      dataDir: root,
      signal: starting.signal,
      output: (node, line) => kafkaLog.write(`[${node}] ${line}\n`),
    });
    kafka.exited.then(({ node, code, signal }) =>
      stopAll(`Kafka node ${node} exited unexpectedly (code ${code}, signal ${signal})`, 1),
    );
    brokers = kafka.bootstrap;
  }
  urls.push(['kafka', brokers]);

  const shared: Record<string, string> = { KAFKA_BROKERS: brokers, REDIS_URL: redisUrl };
  let clickhouseUrl = process.env.CLICKHOUSE_URL;
  if (!clickhouseUrl) {
    process.stdout.write('  the ClickHouse stand-in…\n');
    clickhouseUrl = (
      await service('clickhouse', 'clickhouse', { CLICKHOUSE_HTTP_PORT: String(config.CLICKHOUSE_HTTP_PORT) })
    ).clickhouse;
  }
  urls.push(['clickhouse', clickhouseUrl]);
  shared.CLICKHOUSE_URL = clickhouseUrl;

  let port = config.HTTP_PORT;
  const next = () => String(port++);
  process.stdout.write('  the schema registry…\n');
  const registry = await service('registry', 'schema-registry', {
    ...shared,
    HTTP_PORT: next(),
    SCHEMA_REGISTRY_PORT: String(config.SCHEMA_REGISTRY_PORT),
  });
  urls.push(['schema registry', registry.schemaRegistry]);
  shared.SCHEMA_REGISTRY_URL = registry.schemaRegistry;

  // one at a time: each process runs the (idempotent) migrations and topic creation before it serves
  const topology: [name: string, svc: string, args: string[], label: string][] = [
    ['intake-1', 'intake', [], 'beacon'],
    ['intake-2', 'intake', [], 'beacon'],
    ['processors-1', 'processors', ['--processor', 'all'], 'readyz'],
    ['processors-2', 'processors', ['--processor', 'all'], 'readyz'],
    ['storefront', 'storefront', [], 'storefront API'],
  ];
  for (const [name, svc, args, label] of topology) {
    process.stdout.write(`  ${name}…\n`);
    // the read API: two worker processes on one port
    const workers: Record<string, string> = name === 'storefront' ? { HTTP_WORKERS: '2' } : {};
    const u = await service(name, svc, { ...shared, ...workers, HTTP_PORT: next() }, args);
    urls.push([name, u[label] ?? u.http]);
    if (u.workers) urls.push([`${name} workers`, `pids ${u.workers}`]);
  }
  // a rolling restart of the read API's workers: the primary starts a new one before it drains an old one
  process.on('SIGUSR2', () => {
    process.stdout.write('SIGUSR2: restarting the read-API workers one at a time…\n');
    running.find((r) => r.name === 'storefront')?.child.kill('SIGHUP');
  });

  const width = Math.max(...urls.map(([k]) => k.length));
  process.stdout.write(
    `\nThe distributed topology is up:\n${urls.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`).join('\n')}\n\n` +
      `Logs: ${logs}\nPress Ctrl-C to stop.\n`,
  );
} catch (err) {
  if (!stopping) await stopAll(`start-up failed: ${(err as Error).message}`, 1);
}
