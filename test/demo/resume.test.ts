// A crash in the middle of the demo load loses nothing and doubles nothing: the app process is killed
// (SIGKILL) while the sessions are being replayed; the next `npm start` prints the same token, resumes
// the replay where the saved progress says, and in the end every planned event is in Kafka and counted
// exactly once in ClickHouse (deterministic event ids, deduplicated by the beacon and the processors),
// and every planned order is on commerce.orders.v1.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createValueCodec } from '../../services/common/kafka/codec.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { freePorts } from '../../deploy/local/stack.ts';
import { generateDemoStore } from '../../services/demo/generator/generator.ts';
import { type DemoState, DemoStateSchema } from '../../services/demo/generator/load.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function launch(env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, [path.join(ROOT, 'deploy/local/start.ts')], {
    cwd: ROOT,
    env: {
      ...process.env,
      KAFKA_BROKERS: '',
      REDIS_URL: '',
      CLICKHOUSE_URL: '',
      SCHEMA_REGISTRY_URL: '',
      KAFKA_TOPIC_PREFIX: '',
      ...env,
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
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    child,
    exited,
    output: () => out,
    async waitFor(re: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const m = re.exec(out);
        if (m) return m;
        if (child.exitCode !== null)
          throw new Error(`npm start exited (${child.exitCode}) before ${re}:\n${out.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`timed out waiting for ${re}:\n${out.slice(-3000)}`);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      return exited;
    },
  };
}

describe('demo load after a crash', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-demo-resume-'));
  let running: ReturnType<typeof launch> | undefined;
  afterAll(async () => {
    await running?.stop();
    if (!process.env.KEEP_STACK_DATA) rmSync(dataDir, { recursive: true, force: true });
  });

  it('resumes the replay after the app is killed: nothing lost, every event counted once', async () => {
    const [http, kafkaPort, registry, clickhouse, redis] = await freePorts(5);
    const env = {
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      HTTP_PORT: String(http),
      KAFKA_PORT: String(kafkaPort),
      SCHEMA_REGISTRY_PORT: String(registry),
      CLICKHOUSE_HTTP_PORT: String(clickhouse),
      REDIS_PORT: String(redis),
      LOG_LEVEL: 'info',
      DEMO_STORE: 'true',
      DEMO_PRODUCTS: '200',
      DEMO_SESSIONS: '600',
      DEMO_IMAGES: '0',
      // the launcher gives up at the first crash instead of restarting the app (this test restarts it)
      LAUNCHER_MAX_CRASHES: '1',
      DEMO_REPLAY_CONCURRENCY: '1',
    };
    const file = path.join(dataDir, 'demo-store.json');
    const readState = (): DemoState => DemoStateSchema.parse(JSON.parse(readFileSync(file, 'utf8')));

    running = launch(env);
    const [, token] = await running.waitFor(/X-Storefront-Access-Token: (\S+)\n/, 120_000);
    // wait until the replay has made progress, then kill the app process outright (no shutdown)
    await running.waitFor(/demo: replaying shopper sessions…/, 240_000);
    const atKill = readState().progress.replayed;
    expect(atKill).toBeGreaterThan(0);
    const appPid = Number(
      execFileSync('pgrep', ['-P', String(running.child.pid), '-f', 'services/app/main.ts'])
        .toString()
        .trim()
        .split('\n')[0],
    );
    expect(appPid).toBeGreaterThan(0);
    process.kill(appPid, 'SIGKILL');
    await running.exited; // the launcher (LAUNCHER_MAX_CRASHES=1) stops the rest and exits when the app dies
    running = undefined;
    const after = readState();
    expect(after.progress.done).toBe(false);

    running = launch(env);
    const [, again] = await running.waitFor(/X-Storefront-Access-Token: (\S+)\n/, 120_000);
    expect(again).toBe(token);
    await running.waitFor(/demo: shopper sessions replayed/, 300_000);
    const done = readState();
    expect(done.progress.done).toBe(true);
    expect(done.progress.replayStartMs).toBe(after.progress.replayStartMs);

    // every planned event exactly once on storefront.events.v1, every order on commerce.orders.v1
    const store = generateDemoStore({
      seed: done.seed,
      products: done.products,
      sessions: done.sessions,
      anchorMs: done.anchorMs,
      imageBaseUrl: done.imageBaseUrl,
    });
    const planned = [...store.sessions()].flatMap((x) => x.steps.map((st) => st.eventId));
    const orderIds = [...store.sessions()].flatMap((x) =>
      x.steps.flatMap((st) => (st.type === 'purchase' ? [st.orderId] : [])),
    );
    const kafka = createKafka([`127.0.0.1:${kafkaPort}`], 'demo-resume-test', createLogger('test', 'warn'));
    const codec = createValueCodec({ registryUrl: `http://127.0.0.1:${registry}` });
    const read = async (topic: string, expected: number) => {
      const consumer = kafka.consumer({ groupId: `demo-resume-${process.pid}-${topic}` });
      const values: Record<string, unknown>[] = [];
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      let done!: () => void;
      const enough = new Promise<void>((r) => {
        done = r;
      });
      await consumer.run({
        eachMessage: async ({ message }) => {
          if (!message.value) return;
          const v = (await codec.decode<Record<string, unknown>>(message.value)).value;
          if (v.store_id === readState().storeId) values.push(v);
          if (values.length >= expected) done();
        },
      });
      await Promise.race([enough, new Promise((r) => setTimeout(r, 30_000))]);
      await new Promise((r) => setTimeout(r, 1_000)); // anything beyond `expected` (a duplicate) shows up too
      await consumer.disconnect();
      return values;
    };
    // nothing lost: every planned event is in the log. A batch in flight when the app died may be in the
    // log twice (acknowledged by Kafka, but the crash came before the beacon answered); the processors'
    // event_id deduplication makes it count once, which ClickHouse shows below.
    const events = await read(TOPICS.events.name, planned.length);
    expect(new Set(events.map((e) => e.event_id))).toEqual(new Set(planned));
    expect(events.length).toBeLessThanOrEqual(planned.length + 100);
    // nothing doubled: each event once in events_raw
    const storeId = done.storeId;
    const deadline = Date.now() + 120_000;
    let counts = { n: 0, u: 0 };
    while (Date.now() < deadline) {
      const r = await fetch(`http://127.0.0.1:${clickhouse}/?param_store=${storeId}`, {
        method: 'POST',
        body: 'SELECT count() AS n, uniqExact(event_id) AS u FROM discovery.events_raw WHERE store_id = {store:String} FORMAT JSONEachRow',
      });
      const row = JSON.parse(await r.text()) as { n: string; u: string };
      counts = { n: Number(row.n), u: Number(row.u) };
      if (counts.u >= planned.length) break;
      await new Promise((res) => setTimeout(res, 500));
    }
    await new Promise((res) => setTimeout(res, 2_000));
    expect(counts).toEqual({ n: planned.length, u: planned.length });
    const orders = await read(TOPICS.orders.name, orderIds.length);
    // an order re-sent after the crash is the same order (same id; the latest record wins downstream)
    expect(new Set(orders.map((o) => o.order_id))).toEqual(new Set(orderIds));

    expect(await running.stop()).toBe(0);
    running = undefined;
  }, 900_000);
});
