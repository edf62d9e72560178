// The single-node stack: redis-server, the embedded Kafka-protocol broker and the app process, each a
// child process. A component whose URL is configured (REDIS_URL, KAFKA_BROKERS, …) is not started; the
// configured server is used instead. Used by `npm start` and by the test harness.
//
// Supervision (opts.restart, on for `npm start`): once the stack is up, a child that exits on its own is
// started again with the same command, port and data directory after a backoff, and the others keep
// running (the app's Kafka and Redis clients reconnect; the beacon answers 503 + Retry-After while the
// broker is away). A component that crashes `maxCrashes` times within `windowMs` is not started again:
// `exited` resolves with `gaveUp` and the launcher stops the rest. Without opts.restart, `exited`
// resolves with the first unexpected exit (the test harness and benches).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../../services/common/config.ts';
import { prettyLine, prettyLogs } from '../../services/common/logger.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface StackOptions {
  /** where child output goes: 'inherit' (npm start) or a function receiving lines (tests) */
  output?: 'inherit' | ((component: string, line: string) => void);
  /** extra environment for the app process */
  appEnv?: Record<string, string>;
  startTimeoutMs?: number;
  /** restart crashed children (see the top of this file); unset: no restarts */
  restart?: RestartPolicy;
  /** the supervisor's lines (a child exited, restarting in …, back after …, giving up); default stderr */
  log?: (line: string) => void;
}

export interface RestartPolicy {
  /** a component that crashed this many times within `windowMs` is not restarted (1: never restart) */
  maxCrashes: number;
  windowMs: number;
  /** delay before the first restart; doubles with each further crash within the window */
  backoffMs: number;
  maxBackoffMs: number;
}

export interface StackExit {
  component: string;
  code: number | null;
  signal: string | null;
  /** set when the component crashed too often under a restart policy: its crashes within the window */
  gaveUp?: { crashes: number; windowMs: number };
}

export interface Stack {
  urls: Record<string, string>;
  /** the current process of each component (replaced on a restart) */
  children: Record<string, ChildProcess>;
  /** restarts so far, by component */
  restarts: Record<string, number>;
  /** resolves when the stack cannot go on: the first unexpected child exit, or (with opts.restart) a
   *  component that crashed too often */
  exited: Promise<StackExit>;
  stop(): Promise<void>;
}

export class StackError extends Error {}

/** Env for child processes: the parent's, with the resolved configuration made explicit. */
function childEnv(config: Config, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    // V8's code cache for the node children: a restarted app loads its modules without compiling them again
    NODE_COMPILE_CACHE: path.join(os.tmpdir(), 'node-compile-cache'),
    // glibc's malloc keeps up to 8 arenas per core for the app's ≈ 180 threads (chDB's among them); two hold
    // the app ≈ 120 MB lower at the same throughput (docs/decisions.md, issue #21)
    MALLOC_ARENA_MAX: '2',
    ...process.env,
    DATA_DIR: config.dataDir,
    HOST: config.HOST,
    HTTP_PORT: String(config.HTTP_PORT),
    KAFKA_PORT: String(config.KAFKA_PORT),
    SCHEMA_REGISTRY_PORT: String(config.SCHEMA_REGISTRY_PORT),
    CLICKHOUSE_HTTP_PORT: String(config.CLICKHOUSE_HTTP_PORT),
    REDIS_PORT: String(config.REDIS_PORT),
    LOG_LEVEL: config.LOG_LEVEL,
    ...extra,
  };
}

export function ensureRedisServer(): string {
  const found = which('redis-server');
  if (found) return found;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root) {
    throw new StackError(
      'redis-server is not installed. Install it with:\n  sudo apt-get install -y redis-server\n' +
        'or point REDIS_URL at a running Redis.',
    );
  }
  process.stderr.write('redis-server is missing; installing it with apt-get…\n');
  execFileSync('apt-get', ['install', '-y', '-q', 'redis-server'], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  const installed = which('redis-server');
  if (!installed) throw new StackError('apt-get finished but redis-server is still not on PATH');
  return installed;
}

function which(cmd: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/bin', '/usr/sbin', '/usr/local/bin'])) {
    const p = path.join(dir, cmd);
    if (dir && existsSync(p)) return p;
  }
  return undefined;
}

export async function startStack(config: Config, opts: StackOptions = {}): Promise<Stack> {
  // on a terminal the children's JSON log lines are shown readable (pino-pretty), one line each
  let output = opts.output ?? 'inherit';
  if (output === 'inherit' && prettyLogs(process.stdout, config.LOG_FORMAT)) {
    const pretty = prettyLine(process.stdout.isTTY === true);
    output = (_component, line) => void process.stdout.write(pretty(line));
  }
  const timeout = opts.startTimeoutMs ?? 60_000;
  const log = opts.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const children: Record<string, ChildProcess> = {};
  const order: string[] = [];
  /** how each component is started and when it is ready (for restarts) */
  const specs: Record<string, { start: () => ChildProcess; ready: (child: ChildProcess) => Promise<void> }> = {};
  const crashes: Record<string, number[]> = {};
  const restarts: Record<string, number> = {};
  const timers = new Set<NodeJS.Timeout>();
  let stopping = false;
  let supervising = false; // restarts begin once the whole stack is up; a failed start fails
  let settled = false;
  let onExit!: (v: StackExit) => void;
  const exited = new Promise<StackExit>((r) => {
    onExit = (v) => {
      if (settled) return;
      settled = true;
      r(v);
    };
  });
  mkdirSync(config.dataDir, { recursive: true });
  // a launcher that ends without stop() (an uncaught error, process.exit) takes the detached ones along
  const detached = new Set<string>();
  process.once('exit', () => {
    for (const component of detached) children[component]?.kill('SIGKILL');
  });

  const launch = (
    component: string,
    cmd: string,
    args: string[],
    env: NodeJS.ProcessEnv,
    { ipc = false, ownGroup = !ipc }: { ipc?: boolean; ownGroup?: boolean } = {},
  ) => {
    const child = spawn(cmd, args, {
      cwd: ROOT,
      env,
      // Redis and the broker in a process group of their own: a Ctrl-C on the terminal goes to the
      // foreground group (the launcher and the app) only, so they are stopped by stop() below, after the
      // app closed its consumers and producers, instead of at the same moment (the app's clients would
      // then log connection errors while they close). The app and the broker have an IPC channel and
      // leave when the launcher goes away, even a SIGKILLed one (services/app/main.ts and
      // services/kafka-broker/main.ts, 'disconnect'); Redis has no such channel (see setpriv below).
      detached: ownGroup,
      stdio:
        output === 'inherit'
          ? ['ignore', 'inherit', 'inherit', ...(ipc ? ['ipc' as const] : [])]
          : ['ignore', 'pipe', 'pipe', ...(ipc ? ['ipc' as const] : [])],
    });
    if (typeof output === 'function') {
      for (const stream of [child.stdout, child.stderr]) {
        let buf = '';
        stream?.on('data', (d: Buffer) => {
          buf += d.toString();
          let i = buf.indexOf('\n');
          while (i >= 0) {
            output(component, buf.slice(0, i));
            buf = buf.slice(i + 1);
            i = buf.indexOf('\n');
          }
        });
      }
    }
    let gone = false;
    const onGone = (code: number | null, signal: string | null) => {
      if (gone) return;
      gone = true;
      if (stopping || children[component] !== child) return;
      if (!supervising || !opts.restart) onExit({ component, code, signal });
      else crashed(component, code, signal);
    };
    child.on('exit', onGone);
    // a spawn that failed (no pid) reports 'error' and may never report 'exit': a crash like any other
    child.on('error', (err) => {
      if (child.pid !== undefined) return;
      log(`launcher: ${component} could not be started: ${err.message}`);
      onGone(null, null);
    });
    children[component] = child;
    if (!order.includes(component)) order.push(component);
    if (ownGroup) detached.add(component);
    return child;
  };

  const crashed = (component: string, code: number | null, signal: string | null) => {
    const policy = opts.restart!;
    const now = Date.now();
    const recent = (crashes[component] ?? []).filter((t) => now - t < policy.windowMs);
    recent.push(now);
    crashes[component] = recent;
    const how = `code ${code}, signal ${signal}`;
    if (recent.length >= policy.maxCrashes) {
      log(
        `launcher: ${component} exited unexpectedly (${how}): crash ${recent.length} in the last ` +
          `${seconds(policy.windowMs)}, not restarting it`,
      );
      onExit({ component, code, signal, gaveUp: { crashes: recent.length, windowMs: policy.windowMs } });
      return;
    }
    const delay = Math.min(policy.maxBackoffMs, policy.backoffMs * 2 ** (recent.length - 1));
    log(
      `launcher: ${component} exited unexpectedly (${how}); restarting it in ${seconds(delay)} ` +
        `(crash ${recent.length} in the last ${seconds(policy.windowMs)}; the launcher gives up at ${policy.maxCrashes})`,
    );
    const timer = setTimeout(() => {
      timers.delete(timer);
      void relaunch(component);
    }, delay);
    timers.add(timer);
  };

  const relaunch = async (component: string) => {
    if (stopping || settled) return;
    const spec = specs[component]!;
    const t0 = Date.now();
    const child = spec.start();
    restarts[component] = (restarts[component] ?? 0) + 1;
    const gone = new Promise<'gone'>((r) => child.once('exit', () => r('gone')));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => {
      timer = setTimeout(() => r('late'), timeout);
    });
    const result = await Promise.race([spec.ready(child).then(() => 'ready' as const), gone, late]);
    clearTimeout(timer);
    if (result === 'ready' && !stopping) {
      log(`launcher: ${component} restarted (pid ${child.pid}), serving again after ${seconds(Date.now() - t0)}`);
    } else if (result === 'late' && !stopping) {
      // neither ready nor gone: a hung start counts as a crash (the exit handler restarts or gives up)
      log(`launcher: ${component} was not ready within ${seconds(timeout)} of its restart; killing it`);
      child.kill('SIGKILL');
    }
  };

  /** resolves once `probe` answers true while `child` runs (rejects if it exits first) */
  const until = (child: ChildProcess, probe: () => Promise<boolean>) =>
    new Promise<void>((resolve, reject) => {
      const tick = async () => {
        if (stopping || child.exitCode !== null || child.signalCode !== null) return reject(new Error('exited'));
        if (await probe()) return resolve();
        setTimeout(tick, 100);
      };
      void tick();
    }).catch(() => new Promise<void>(() => {})); // an exit is reported by the exit handler: never resolve
  /** the app's 'ready' message */
  const appReady = (child: ChildProcess) =>
    new Promise<Record<string, string>>((resolve) => {
      child.on('message', (m: { type?: string; urls?: Record<string, string> }) => {
        if (m?.type === 'ready' && m.urls) resolve(m.urls);
      });
    });

  const stop = async () => {
    stopping = true;
    for (const t of timers) clearTimeout(t);
    timers.clear();
    // app first (it flushes consumers and producers), then the broker, then redis
    for (const component of [...order].reverse()) {
      await terminate(children[component], component === 'app' ? 30_000 : 15_000);
    }
  };

  try {
    if (config.embedded.redis) {
      const redisBin = ensureRedisServer();
      const dir = path.join(config.dataDir, 'redis');
      mkdirSync(dir, { recursive: true });
      const redisArgs = [
        '--port',
        String(config.REDIS_PORT),
        '--bind',
        config.HOST,
        '--dir',
        dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'everysec',
        '--save',
        '',
        // the beacon's dedup marks expire a whole time bucket (a set) at once: free it off the main thread
        '--lazyfree-lazy-expire',
        'yes',
        '--protected-mode',
        'no',
        '--daemonize',
        'no',
        '--loglevel',
        'warning',
      ];
      const ping = () => redisPing(config.HOST, config.REDIS_PORT);
      // Redis has no IPC channel to notice a launcher that was SIGKILLed: where util-linux' setpriv is
      // there (it execs redis-server, same pid), the kernel sends it SIGTERM when the launcher dies
      const setpriv = which('setpriv');
      const [redisCmd, redisCmdArgs] = setpriv
        ? [setpriv, ['--pdeathsig', 'TERM', redisBin, ...redisArgs]]
        : [redisBin, redisArgs];
      specs.redis = {
        start: () => launch('redis', redisCmd, redisCmdArgs, process.env),
        ready: (child) => until(child, ping),
      };
      specs.redis.start();
      await waitFor('redis', ping, timeout, exited);
    }
    if (config.embedded.kafka) {
      const main = path.join(ROOT, 'services/kafka-broker/main.ts');
      const env = {
        ...childEnv(config),
        BROKER_HOST: config.HOST,
        BROKER_PORT: String(config.KAFKA_PORT),
        BROKER_DATA_DIR: path.join(config.dataDir, 'kafka'),
        BROKER_FSYNC: config.BROKER_FSYNC,
      };
      // a Kafka answer, not just an open port (which another process may hold: a restart then fails)
      const open = () => kafkaAnswers(config.HOST, config.KAFKA_PORT);
      specs.broker = {
        start: () => launch('broker', process.execPath, [main], env, { ipc: true, ownGroup: true }),
        ready: (child) => until(child, open),
      };
      specs.broker.start();
      await waitFor('broker', open, timeout, exited);
    }
    const appEnv = childEnv(config, opts.appEnv);
    specs.app = {
      start: () => launch('app', process.execPath, [path.join(ROOT, 'services/app/main.ts')], appEnv, { ipc: true }),
      ready: (child) => appReady(child).then(() => {}),
    };
    const app = specs.app.start();
    const urls = await new Promise<Record<string, string>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new StackError(`app did not become ready within ${timeout} ms`)), timeout);
      appReady(app).then((u) => {
        clearTimeout(timer);
        resolve(u);
      });
      exited.then(({ component, code, signal }) => {
        clearTimeout(timer);
        reject(new StackError(`${component} exited during start-up (code ${code}, signal ${signal})`));
      });
    });
    supervising = true;
    if (config.embedded.redis) urls.redis = `redis://${config.HOST}:${config.REDIS_PORT}`;
    if (config.embedded.kafka) urls.kafka = `${config.HOST}:${config.KAFKA_PORT}`;
    return { urls, children, restarts, exited, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

async function terminate(child: ChildProcess | undefined, graceMs: number) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await done;
  clearTimeout(timer);
}

async function waitFor(
  component: string,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  exited: Promise<{ component: string; code: number | null }>,
) {
  let dead: { component: string; code: number | null } | undefined;
  exited.then((e) => {
    dead = e;
  });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (dead) throw new StackError(`${dead.component} exited during start-up (code ${dead.code})`);
    if (await probe()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new StackError(`${component} did not start within ${timeoutMs} ms`);
}

export function tcpOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** true when a Kafka broker answers an ApiVersions (v0) request on host:port */
export function kafkaAnswers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(2000, () => done(false));
    const clientId = Buffer.from('launcher');
    const req = Buffer.alloc(4 + 2 + 2 + 4 + 2 + clientId.length);
    req.writeInt32BE(req.length - 4, 0);
    req.writeInt16BE(18, 4); // ApiVersions
    req.writeInt16BE(0, 6); // v0
    req.writeInt32BE(0x5d1a, 8); // correlation id
    req.writeInt16BE(clientId.length, 12);
    clientId.copy(req, 14);
    let buf = Buffer.alloc(0);
    s.once('connect', () => s.write(req));
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      // size, correlation id, error code
      if (buf.length >= 10) done(buf.readInt32BE(4) === 0x5d1a && buf.readInt16BE(8) === 0);
    });
    s.once('error', () => done(false));
    s.once('close', () => done(false));
  });
}

function redisPing(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    s.setTimeout(1000, () => {
      s.destroy();
      resolve(false);
    });
    s.once('connect', () => s.write('PING\r\n'));
    s.once('data', (d) => {
      s.destroy();
      resolve(d.toString().startsWith('+PONG'));
    });
    s.once('error', () => resolve(false));
  });
}

/** Ports freePorts handed out in this process: a released port may come back from bind(0), so never twice. */
const handedOut = new Set<number>();

/** Ask the OS for free TCP ports (for tests and parallel stacks), none handed out before by this process. */
export async function freePorts(n: number, host = '127.0.0.1'): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < n) {
    const servers = await Promise.all(
      Array.from(
        { length: n - ports.length },
        () =>
          new Promise<net.Server>((resolve, reject) => {
            const srv = net.createServer();
            srv.once('error', reject);
            srv.listen(0, host, () => resolve(srv));
          }),
      ),
    );
    for (const s of servers) {
      const port = (s.address() as net.AddressInfo).port;
      if (!handedOut.has(port)) {
        handedOut.add(port);
        ports.push(port);
      }
    }
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  }
  return ports;
}
