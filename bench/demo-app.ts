// The single-node app with the demo store (`npm start` on a fresh data dir and free ports), for benches
// that measure the read API on the demo's planted truth: starts it, waits for the demo store to be
// loaded (catalog, then every session replayed), and hands back the token, the API URL, the regenerated
// demo store and the stack output. Used by bench/demo.ts and bench/search.ts.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../deploy/local/stack.ts';
import { type DemoStore, generateDemoStore } from '../services/demo/generator/generator.ts';
import { DemoStateSchema } from '../services/demo/generator/load.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface DemoApp {
  http: number;
  clickhouse: number;
  api: string;
  dataDir: string;
  /** wait for a line of the stack output (rejects when the app exits or the demo load fails) */
  waitFor(re: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  /**
   * wait until every stream processor has caught up (the app's live consumer lag summed over its
   * partitions 0 three times in a row, a second apart), printing the lag every 30 s; the seconds waited
   */
  caughtUp(timeoutMs: number): Promise<number>;
  /** the demo store as loaded (regenerated from the inputs saved with it) and its id and token */
  loaded(): { store: DemoStore; storeId: string; token: string };
  output(): string;
  /** stop the app, keep its output in os.tmpdir()/<logName>, remove the data dir */
  stop(logName: string): Promise<string>;
}

export async function startDemoApp(opts: {
  products: number;
  sessions: number;
  /** more environment for the app */
  env?: Record<string, string>;
}): Promise<DemoApp> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-bench-demo-'));
  const [http, kafka, registry, clickhouse, redis] = await freePorts(5);
  const child: ChildProcess = spawn(process.execPath, [path.join(ROOT, 'deploy/local/start.ts')], {
    cwd: ROOT,
    env: {
      ...process.env,
      KAFKA_BROKERS: '',
      REDIS_URL: '',
      CLICKHOUSE_URL: '',
      SCHEMA_REGISTRY_URL: '',
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      HTTP_PORT: String(http),
      KAFKA_PORT: String(kafka),
      SCHEMA_REGISTRY_PORT: String(registry),
      CLICKHOUSE_HTTP_PORT: String(clickhouse),
      REDIS_PORT: String(redis),
      LOG_LEVEL: 'info',
      DEMO_STORE: 'true',
      DEMO_PRODUCTS: String(opts.products),
      DEMO_SESSIONS: String(opts.sessions),
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const waitFor = async (re: RegExp, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const m = re.exec(out);
      if (m) return m;
      if (child.exitCode !== null) throw new Error(`npm start exited:\n${out.slice(-3000)}`);
      if (/demo: loading the demo store failed/.test(out))
        throw new Error(`the demo load failed:\n${out.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${re}`);
  };
  const lag = async () => {
    const text = await (
      await fetch(`http://127.0.0.1:${http}/metrics`, { signal: AbortSignal.timeout(120_000) })
    ).text();
    let sum = 0;
    for (const l of text.split('\n'))
      if (l.startsWith('stream_consumer_lag{') && l.includes('mode="live"'))
        sum += Number(l.slice(l.lastIndexOf(' ') + 1));
    return sum;
  };
  return {
    http,
    clickhouse,
    api: `http://127.0.0.1:${http}/api/storefront/v1`,
    dataDir,
    waitFor,
    output: () => out,
    async caughtUp(timeoutMs) {
      const t = Date.now();
      let shown = t;
      for (let zero = 0; zero < 3; ) {
        const n = await lag();
        zero = n === 0 ? zero + 1 : 0;
        if (Date.now() - t > timeoutMs)
          throw new Error(`the stream processors did not catch up within ${Math.round(timeoutMs / 60_000)} minutes`);
        if (Date.now() - shown >= 30_000) {
          shown = Date.now();
          process.stdout.write(`  … consumer lag ${n} messages after ${Math.round((shown - t) / 1000)} s\n`);
        }
        await new Promise((r) => setTimeout(r, 1_000));
      }
      return (Date.now() - t) / 1000;
    },
    loaded() {
      const state = DemoStateSchema.parse(JSON.parse(readFileSync(path.join(dataDir, 'demo-store.json'), 'utf8')));
      const store = generateDemoStore({
        seed: state.seed,
        products: state.products,
        sessions: state.sessions,
        anchorMs: state.anchorMs,
        imageBaseUrl: state.imageBaseUrl,
      });
      return { store, storeId: state.storeId, token: state.token };
    },
    async stop(logName) {
      const logFile = path.join(os.tmpdir(), logName);
      writeFileSync(logFile, out);
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGINT');
        await exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
      return logFile;
    },
  };
}
