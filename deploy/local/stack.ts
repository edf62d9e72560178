// The single-node stack: redis-server, the embedded Kafka-protocol broker and the app process, each a
// child process. A component whose URL is configured (REDIS_URL, KAFKA_BROKERS, …) is not started; the
// configured server is used instead. Used by `npm start` and by the test harness.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import net from 'node:net';
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
}

export interface Stack {
  urls: Record<string, string>;
  children: Record<string, ChildProcess>;
  /** resolves with the first unexpected child exit */
  exited: Promise<{ component: string; code: number | null; signal: string | null }>;
  stop(): Promise<void>;
}

export class StackError extends Error {}

/** Env for child processes: the parent's, with the resolved configuration made explicit. */
function childEnv(config: Config, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
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
  const children: Record<string, ChildProcess> = {};
  const order: string[] = [];
  let stopping = false;
  let onExit!: (v: { component: string; code: number | null; signal: string | null }) => void;
  const exited = new Promise<{ component: string; code: number | null; signal: string | null }>((r) => {
    onExit = r;
  });
  mkdirSync(config.dataDir, { recursive: true });

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
      // services/kafka-broker/main.ts, 'disconnect'); Redis has no such channel.
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
    child.on('exit', (code, signal) => {
      if (!stopping) onExit({ component, code, signal });
    });
    children[component] = child;
    order.push(component);
    // a launcher that ends without stop() (an uncaught error, process.exit) takes the detached ones along
    if (ownGroup) process.once('exit', () => child.kill('SIGKILL'));
    return child;
  };

  const stop = async () => {
    stopping = true;
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
      launch(
        'redis',
        redisBin,
        [
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
        ],
        process.env,
      );
      await waitFor('redis', () => redisPing(config.HOST, config.REDIS_PORT), timeout, exited);
    }
    if (config.embedded.kafka) {
      const main = path.join(ROOT, 'services/kafka-broker/main.ts');
      launch(
        'broker',
        process.execPath,
        [main],
        {
          ...childEnv(config),
          BROKER_HOST: config.HOST,
          BROKER_PORT: String(config.KAFKA_PORT),
          BROKER_DATA_DIR: path.join(config.dataDir, 'kafka'),
          BROKER_FSYNC: config.BROKER_FSYNC,
        },
        { ipc: true, ownGroup: true },
      );
      await waitFor('broker', () => tcpOpen(config.HOST, config.KAFKA_PORT), timeout, exited);
    }
    const app = launch(
      'app',
      process.execPath,
      [path.join(ROOT, 'services/app/main.ts')],
      childEnv(config, opts.appEnv),
      { ipc: true },
    );
    const urls = await new Promise<Record<string, string>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new StackError(`app did not become ready within ${timeout} ms`)), timeout);
      app.on('message', (m: { type?: string; urls?: Record<string, string> }) => {
        if (m?.type === 'ready' && m.urls) {
          clearTimeout(timer);
          resolve(m.urls);
        }
      });
      exited.then(({ component, code, signal }) => {
        clearTimeout(timer);
        reject(new StackError(`${component} exited during start-up (code ${code}, signal ${signal})`));
      });
    });
    if (config.embedded.redis) urls.redis = `redis://${config.HOST}:${config.REDIS_PORT}`;
    if (config.embedded.kafka) urls.kafka = `${config.HOST}:${config.KAFKA_PORT}`;
    return { urls, children, exited, stop };
  } catch (err) {
    await stop();
    throw err;
  }
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

/** Ask the OS for free TCP ports (for tests and parallel stacks). */
export async function freePorts(n: number, host = '127.0.0.1'): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const srv = net.createServer();
          srv.once('error', reject);
          srv.listen(0, host, () => resolve(srv));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}
