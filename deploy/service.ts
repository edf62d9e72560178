// One service of distributed mode, configured only by environment: `npm run service -- <name>`.
//
//   clickhouse        the chDB stand-in for a ClickHouse server (clickhouse/http-server.ts): owns
//                     DATA_DIR/clickhouse, serves ClickHouse's HTTP interface on CLICKHOUSE_HTTP_PORT,
//                     CLICKHOUSE_USER/CLICKHOUSE_PASSWORD required of every request when set
//   schema-registry   the schema registry on SCHEMA_REGISTRY_PORT (SCHEMA_REGISTRY_URL is ignored here)
//   intake            the beacon (/beacon)
//   storefront        the storefront read API
//   site              the public site (with the storefront API it demonstrates)
//   catalog-webhooks  the catalog webhooks
//   processors        the stream processors: `--processor <names|all>` or STREAMS_PROCESSORS; their own
//                     process, so on the event loop (STREAMS_THREAD=false) unless the environment says
//
// Every service but clickhouse is the app composer (services/app/app.ts startApp) with a subset of its
// modules, on HTTP_PORT (/readyz, /metrics), and needs CLICKHOUSE_URL (the stand-in or a ClickHouse
// server) and SCHEMA_REGISTRY_URL (the registry service or a Confluent-compatible registry): without
// them it refuses to start (exit 64), since it would otherwise open chDB or serve a registry of its own.
// KAFKA_BROKERS and REDIS_URL name the shared broker and Redis. Prints its URLs, stops on SIGINT/SIGTERM.
//
// HTTP_WORKERS=n (n ≥ 1; HTTP services): n worker processes serve HTTP_PORT behind this one (node:cluster;
// the primary owns the socket and hands each new connection to a worker, round-robin). A worker that exits
// is replaced; SIGHUP to the primary restarts the workers one at a time (the new one ready before the old
// one drains) without a failed request. A worker drains on SIGTERM: it stops taking connections (the
// primary hands the ones not yet taken to the other workers), answers each request still arriving on an
// open connection with `Connection: close`, and leaves idle connections to expire by their advertised
// keep-alive (5 s: a client that honours it never sends into a closing connection), then stops
// (HTTP_DRAIN_TIMEOUT_MS bounds the drain, default 15 s). Responses carry `x-served-by: <worker pid>`.
import cluster, { type Worker } from 'node:cluster';
import type { Server as HttpServer } from 'node:http';
import { Server as NetServer } from 'node:net';
import path from 'node:path';
import { Command } from 'commander';
import { startClickHouseServer } from '../clickhouse/http-server.ts';
import { startApp } from '../services/app/app.ts';
import type { AppModule } from '../services/app/context.ts';
import { beaconModule } from '../services/beacon/module.ts';
import { catalogModule } from '../services/catalog/module.ts';
import { loadConfigOrExit } from '../services/common/config.ts';
import { createLogger } from '../services/common/logger.ts';
import { schemaRegistryModule } from '../services/schema-registry/module.ts';
import { siteModule } from '../services/site/module.ts';
import { storeConfigModule } from '../services/store-config/module.ts';
import { storefrontModule } from '../services/storefront/module.ts';
import { streamsModule } from '../streams/module.ts';

/** The app modules of each service, in start order (the registry first: it registers the value schemas). */
export const SERVICES: Record<string, AppModule[]> = {
  'schema-registry': [schemaRegistryModule],
  intake: [schemaRegistryModule, storeConfigModule, beaconModule],
  storefront: [schemaRegistryModule, storeConfigModule, storefrontModule],
  site: [schemaRegistryModule, storeConfigModule, storefrontModule, siteModule],
  'catalog-webhooks': [schemaRegistryModule, storeConfigModule, catalogModule],
  processors: [schemaRegistryModule, streamsModule],
};
export const SERVICE_NAMES = ['clickhouse', ...Object.keys(SERVICES)];

const EX_USAGE = 64;

function usage(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(EX_USAGE);
}

const program = new Command()
  .name('service')
  .argument('<name>', `one of: ${SERVICE_NAMES.join(', ')}`)
  .option('--processor <names>', "processors: a name, comma-separated names, or 'all' (default STREAMS_PROCESSORS)")
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : EX_USAGE))
  .parse();
const name = program.args[0];
const opts = program.opts<{ processor?: string }>();
if (!SERVICE_NAMES.includes(name))
  usage(`unknown service ${JSON.stringify(name)}; one of: ${SERVICE_NAMES.join(', ')}`);

let stop: () => Promise<void>;
let urls: Record<string, string>;

const workers = process.env.HTTP_WORKERS || undefined;
if (workers !== undefined && (!/^[1-9]\d?$/.test(workers) || name === 'clickhouse' || name === 'processors'))
  usage(
    'HTTP_WORKERS: a number of worker processes (1–99), for a service that serves HTTP (not clickhouse, processors)',
  );
const drainMs = process.env.HTTP_DRAIN_TIMEOUT_MS ?? '15000';
if (!/^\d{1,7}$/.test(drainMs)) usage('HTTP_DRAIN_TIMEOUT_MS: expected milliseconds');

if (workers !== undefined && cluster.isPrimary) {
  ({ urls, stop } = await superviseWorkers(Number(workers)));
} else if (name === 'clickhouse') {
  const config = loadConfigOrExit();
  const logger = createLogger('clickhouse', config.LOG_LEVEL);
  const maxBody = process.env.CLICKHOUSE_MAX_BODY_BYTES;
  if (maxBody !== undefined && !/^[1-9]\d{0,11}$/.test(maxBody))
    usage('CLICKHOUSE_MAX_BODY_BYTES: expected a byte count');
  const server = await startClickHouseServer({
    chdbPath: path.join(config.dataDir, 'clickhouse'),
    host: config.HOST,
    port: config.CLICKHOUSE_HTTP_PORT,
    logger,
    user: config.CLICKHOUSE_USER,
    password: config.CLICKHOUSE_PASSWORD,
    maxBodyBytes: maxBody === undefined ? undefined : Number(maxBody),
  }).catch((err: Error) => {
    process.stderr.write(`clickhouse stand-in failed to start: ${err.stack ?? err.message}\n`);
    process.exit(1);
  });
  urls = { clickhouse: server.url };
  stop = server.close;
} else {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (!env.CLICKHOUSE_URL) {
    usage(
      `${name}: CLICKHOUSE_URL is required in distributed mode (a ClickHouse server, or \`npm run service -- clickhouse\`)`,
    );
  }
  if (name === 'schema-registry') delete env.SCHEMA_REGISTRY_URL;
  else if (!env.SCHEMA_REGISTRY_URL) {
    usage(`${name}: SCHEMA_REGISTRY_URL is required in distributed mode (\`npm run service -- schema-registry\`)`);
  }
  if (name === 'processors') {
    env.STREAMS_ENABLED = 'true';
    if (opts.processor) env.STREAMS_PROCESSORS = opts.processor;
    env.STREAMS_THREAD ??= 'false';
  } else if (opts.processor) usage('--processor applies to the processors service only');
  const config = loadConfigOrExit(env);
  const app = await startApp(config, SERVICES[name]).catch((err: Error) => {
    process.stderr.write(`${name} failed to start: ${err.stack ?? err.message}\n`);
    process.exit(1);
  });
  urls = app.urls;
  stop = app.close;
  if (cluster.isWorker) stop = drainThenClose(app.ctx.http.server, app.close);
}

for (const [label, url] of Object.entries(urls)) process.stdout.write(`${name}: ${label} ${url}\n`);
process.send?.({ type: 'ready', service: name, urls });

/**
 * The primary of HTTP_WORKERS: forks `n` workers (this script, same arguments), resolves once all are
 * ready with the URLs of the first; replaces a worker that exits; SIGHUP restarts them one at a time.
 */
async function superviseWorkers(n: number) {
  const live = new Set<Worker>();
  let closing = false;
  const fork = () =>
    new Promise<{ worker: Worker; urls: Record<string, string> }>((resolve, reject) => {
      const worker = cluster.fork();
      live.add(worker);
      const onMessage = (m: { type?: string; urls?: Record<string, string> }) => {
        if (m?.type !== 'ready') return;
        worker.off('message', onMessage);
        resolve({ worker, urls: m.urls ?? {} });
      };
      worker.on('message', onMessage);
      worker.once('exit', (code, signal) => {
        live.delete(worker);
        reject(new Error(`worker ${worker.process.pid} exited (${code ?? signal}) before it was ready`));
        if (closing || rolling.has(worker)) return;
        process.stderr.write(`${name}: worker ${worker.process.pid} exited (${code ?? signal}); starting another\n`);
        setTimeout(() => void fork().catch(() => {}), 1_000);
      });
    });
  const rolling = new Set<Worker>();
  const stopWorker = async (w: Worker) => {
    if (w.process.exitCode !== null || w.process.signalCode !== null) return;
    const exited = new Promise((r) => w.once('exit', r));
    w.process.kill('SIGTERM');
    await exited;
  };
  const first = await Promise.all(Array.from({ length: n }, fork)).catch((err: Error) => {
    process.stderr.write(`${name} failed to start: ${err.message}\n`);
    closing = true;
    for (const w of live) w.process.kill('SIGTERM');
    process.exit(1);
  });
  let restart = Promise.resolve();
  process.on('SIGHUP', () => {
    restart = restart.then(async () => {
      for (const old of [...live]) {
        if (closing) return;
        const next = await fork().catch((err: Error) => err);
        if (next instanceof Error) {
          process.stderr.write(`${name}: rolling restart stopped: ${next.message}\n`);
          return;
        }
        rolling.add(old);
        await stopWorker(old);
        rolling.delete(old);
      }
      const pids = [...live].map((w) => w.process.pid);
      process.stdout.write(`${name}: workers restarted: ${pids.join(', ')}\n`);
      process.send?.({ type: 'restarted', service: name, workers: pids });
    });
  });
  return {
    urls: { ...first[0].urls, workers: first.map((f) => f.worker.process.pid).join(',') },
    async stop() {
      closing = true;
      await restart;
      await Promise.all([...live].map(stopWorker));
    },
  };
}

/**
 * A worker's stop: drain (stop taking connections, `Connection: close` on every further response, idle
 * connections left to their keep-alive), then close the app.
 */
function drainThenClose(server: HttpServer, close: () => Promise<void>) {
  // advertised as `Keep-Alive: timeout=5`; the socket closes after it plus the server's keepAliveTimeoutBuffer
  server.keepAliveTimeout = 5_000;
  let draining = false;
  // before the app's own listener: while draining, a request is answered and then its connection closed
  server.prependListener('request', (_req, res) => {
    res.setHeader('x-served-by', String(process.pid));
    if (draining) res.shouldKeepAlive = false;
  });
  return async () => {
    draining = true;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => server.closeAllConnections(), Number(drainMs));
      // net's close, not http's: http's would also close the idle connections at once, racing a client
      // about to reuse one; the callback runs once every connection is gone
      NetServer.prototype.close.call(server, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    await close();
  };
}

let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    stop().then(
      () => process.exit(0),
      (err: Error) => {
        process.stderr.write(`${name}: stop failed: ${err.message}\n`);
        process.exit(1);
      },
    );
  });
}
// a launcher that went away without a signal (kill -9) does not leave its services behind
process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
