// `npm start` on a fresh data directory: the launcher (deploy/local/start.ts) runs the whole stack on free
// ports with a small demo store; the test waits for the printed token, uses it against the storefront
// API, sees the configuration and the replayed shopper events land (in Kafka, and in ClickHouse through
// the analysts' SQL endpoint when the stream processors run in the app), and checks that a second start
// on the same directory prints the SAME token and does not load the store again.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { createValueCodec } from '../../services/common/kafka/codec.ts';
import type { EnrichedEvent } from '../../schemas/events.ts';
import type { Order } from '../../schemas/orders.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { modules } from '../../services/app/modules.ts';
import { DEMO_SUGGEST_PREFIX } from '../../services/demo/module.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { freePorts } from '../../deploy/local/stack.ts';
import { generateDemoStore } from '../../services/demo/generator/generator.ts';
import { type DemoState, DemoStateSchema } from '../../services/demo/generator/load.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PRODUCTS = 300;
const SESSIONS = 200;

interface Launched {
  child: ChildProcess;
  output: () => string;
  waitFor(re: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  stop(): Promise<number | null>;
}

function launch(env: Record<string, string>): Launched {
  const child = spawn(process.execPath, [path.join(ROOT, 'deploy/local/start.ts')], {
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
    output: () => out,
    async waitFor(re, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const m = re.exec(out);
        if (m) return m;
        if (child.exitCode !== null)
          throw new Error(`npm start exited (${child.exitCode}) before ${re}:\n${out.slice(-4000)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error(`timed out waiting for ${re}:\n${out.slice(-4000)}`);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      return exited;
    },
  };
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

/** every value of a topic written for one store (read from the beginning) */
async function readTopic<T extends { store_id: string }>(
  brokers: string[],
  registryUrl: string,
  topic: string,
  storeId: string,
  expected: number,
): Promise<T[]> {
  const kafka = createKafka(brokers, 'demo-first-start-test', createLogger('test', 'warn'));
  const codec = createValueCodec({ registryUrl });
  const consumer = kafka.consumer({ groupId: `demo-test-${process.pid}-${topic}-${Date.now()}` });
  const out: T[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    let done!: () => void;
    const enough = new Promise<void>((r) => {
      done = r;
    });
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (!message.value) return;
        const { value } = await codec.decode<T>(message.value);
        if (value.store_id === storeId) out.push(value);
        if (out.length >= expected) done();
      },
    });
    await Promise.race([enough, new Promise((r) => setTimeout(r, 30_000))]);
  } finally {
    await consumer.disconnect();
  }
  return out;
}

describe('npm start with a fresh data directory', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-demo-start-'));
  let running: Launched | undefined;
  afterAll(async () => {
    await running?.stop();
    if (!process.env.KEEP_STACK_DATA) rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints the demo token, the store answers with it, its events flow, and a second start prints the same token', async () => {
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
      DEMO_PRODUCTS: String(PRODUCTS),
      DEMO_SESSIONS: String(SESSIONS),
      DEMO_IMAGES: '4',
    };
    const base = `http://127.0.0.1:${http}`;
    const api = `${base}/api/storefront/v1`;

    // --- first start ---------------------------------------------------------------------------------
    running = launch(env);
    const [, token] = await running.waitFor(/X-Storefront-Access-Token: (sfat_[A-Za-z0-9_-]+)\n/, 120_000);
    const [, curl] = await running.waitFor(/Try it:\n {2}(curl .+)\n/, 5_000);
    expect(curl).toContain(token);
    expect(curl).toContain(`${api}/search/complete?query=`);

    // the printed curl line works as printed
    const completeUrl = /'(http[^']+)'$/.exec(curl)?.[1] as string;
    const complete = await fetch(completeUrl, { headers: { 'X-Storefront-Access-Token': token } });
    expect(complete.status).toBe(200);
    expect(((await complete.json()) as { originalQuery: string }).originalQuery).toBe(DEMO_SUGGEST_PREFIX);
    expect((await fetch(completeUrl, { headers: { 'X-Storefront-Access-Token': 'sfat_wrong' } })).status).toBe(401);

    // the token and store id are saved, readable by the owner only
    const file = path.join(dataDir, 'demo-store.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const readState = () => DemoStateSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
    const first: DemoState = readState();
    expect(first.token).toBe(token);
    expect(first.products).toBe(PRODUCTS);

    // the configuration lands: the sort orders of the demo store
    const demoSorts = generateDemoStore({ products: 50, sessions: 50 }).config.sort_order.map((o) => o.code);
    const sortCodes = await until(
      'the demo sort orders',
      async () => {
        const r = await fetch(`${api}/sort-orders`, {
          headers: { 'X-Storefront-Access-Token': token, accept: 'application/json' },
        });
        const codes = ((await r.json()) as { sortOrders: { code: string }[] }).sortOrders.map((s) => s.code);
        return demoSorts.every((c) => codes.includes(c)) ? codes : undefined;
      },
      60_000,
    );
    // listed by code after `relevance`
    expect(sortCodes).toEqual(['relevance', ...demoSorts.sort()]);

    // the background load finishes: catalog, then every simulated session replayed
    const done = await until(
      'the demo load to finish',
      async () => (readState().progress.done ? readState() : undefined),
      240_000,
    );
    expect(done.progress.replayed).toBe(SESSIONS);
    await running.waitFor(/demo: shopper sessions replayed/, 10_000);

    // the replayed beacon events are in the log, exactly once each (deterministic event ids)
    const store = generateDemoStore({
      seed: done.seed,
      products: done.products,
      sessions: done.sessions,
      anchorMs: done.anchorMs,
      imageBaseUrl: done.imageBaseUrl,
    });
    const planned = [...store.sessions()].flatMap((s) => s.steps.map((st) => st.eventId));
    const purchases = [...store.sessions()].flatMap((s) => s.steps.filter((st) => st.type === 'purchase'));
    const brokers = [`127.0.0.1:${kafkaPort}`];
    const registryUrl = `http://127.0.0.1:${registry}`;
    const events = await readTopic<EnrichedEvent>(
      brokers,
      registryUrl,
      TOPICS.events.name,
      done.storeId,
      planned.length,
    );
    expect(new Set(events.map((e) => e.event_id))).toEqual(new Set(planned));
    expect(events.length).toBe(planned.length);
    const burst = store.groundTruth.trending;
    const burstSearches = events.filter((e) => e.event_type === 'search' && e.query === burst.query);
    expect(new Set(burstSearches.map((e) => e.session_id)).size).toBeGreaterThanOrEqual(burst.sessions);
    // geo enrichment from the shopper addresses the replay sends
    expect(new Set(events.map((e) => e.geo_country)).size).toBeGreaterThan(1);

    // the orders of the bundle sessions are on commerce.orders.v1
    const orders = await readTopic<Order>(brokers, registryUrl, TOPICS.orders.name, done.storeId, purchases.length);
    expect(orders.map((o) => o.order_id).sort()).toEqual(
      purchases.map((p) => (p as { orderId: string }).orderId).sort(),
    );

    // …and in ClickHouse, when the stream processors run in the app
    if (modules.some((m) => m.name === 'streams')) {
      const count = await until(
        'events in events_raw',
        async () => {
          const r = await fetch(`http://127.0.0.1:${clickhouse}/?param_store=${done.storeId}`, {
            method: 'POST',
            body: 'SELECT count() FROM discovery.events_raw WHERE store_id = {store:String}',
          });
          const n = Number((await r.text()).trim());
          return n >= planned.length ? n : undefined;
        },
        120_000,
      );
      expect(count).toBe(planned.length);
    }

    // a product image of the catalog is a real PNG served by the app
    const imageSrc = String(store.product(0).images?.[0]?.src);
    expect(imageSrc.startsWith(`${base}/demo/images/`)).toBe(true);
    const img = await fetch(imageSrc);
    expect(img.status).toBe(200);
    expect(img.headers.get('content-type')).toBe('image/png');
    expect((await sharp(Buffer.from(await img.arrayBuffer())).metadata()).width).toBe(512);

    expect(await running.stop()).toBe(0);
    running = undefined;

    // --- second start: same token, nothing loaded again ----------------------------------------------
    running = launch(env);
    const [, again] = await running.waitFor(/X-Storefront-Access-Token: (sfat_[A-Za-z0-9_-]+)\n/, 120_000);
    expect(again).toBe(token);
    await running.waitFor(/demo: reusing the demo store/, 10_000);
    const r2 = await fetch(`${api}/sort-orders`, { headers: { 'X-Storefront-Access-Token': again } });
    expect(r2.status).toBe(200);
    expect(readState().storeId).toBe(first.storeId);
    expect(running.output()).not.toMatch(/demo: created the demo store/);
    expect(await running.stop()).toBe(0);
    running = undefined;
  }, 600_000);
});
