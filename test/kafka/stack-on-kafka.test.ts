// The single-node stack on Apache Kafka 4.4 (KAFKA_BROKERS set, the embedded broker not started): a
// 3-node KRaft cluster started by the project's launcher, the stack's topics created on it with
// replication factor 3 and min.insync.replicas=2, /beacon events through the stream processors' consumer
// groups into ClickHouse aggregates read on the analysts' endpoint.
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePorts, type Stack, startStack } from '../../deploy/local/stack.ts';
import { loadConfig } from '../../services/common/config.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { type ConfigWriter, openConfigWriter } from '../../services/store-config/writer.ts';
import { startTestKafka, type TestKafka } from './helpers.ts';

const BROKERS = 3;
const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';

let kafka: TestKafka;
let stack: Stack;
let dataDir: string;
let writer: ConfigWriter;
let registryUrl: string;

beforeAll(async () => {
  kafka = await startTestKafka(BROKERS);
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-stack-kafka-'));
  const [http, registry, clickhouse, redis] = await freePorts(4);
  const env = {
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    HTTP_PORT: String(http),
    SCHEMA_REGISTRY_PORT: String(registry),
    CLICKHOUSE_HTTP_PORT: String(clickhouse),
    REDIS_PORT: String(redis),
    KAFKA_BROKERS: kafka.bootstrap,
    LOG_LEVEL: 'info',
    DEMO_STORE: 'false',
    SERVICE_BUILD: 'test',
  };
  const config = loadConfig({ ...process.env, ...env, REDIS_URL: '', CLICKHOUSE_URL: '', SCHEMA_REGISTRY_URL: '' });
  const log = createWriteStream(path.join(dataDir, 'stack.log'));
  stack = await startStack(config, {
    output: (c, line) => log.write(`[${c}] ${line}\n`),
    appEnv: env,
    startTimeoutMs: 120_000,
  });
  registryUrl = stack.urls.schemaRegistry ?? `http://127.0.0.1:${registry}`;
  writer = openConfigWriter({
    brokers: kafka.brokers,
    registryUrl,
    clientId: 'kafka-stack-test',
    logger: pino({ level: 'fatal' }),
  });
}, 240_000);

afterAll(async () => {
  await writer?.close();
  await stack?.stop();
  await kafka?.close();
  if (dataDir && !process.env.KEEP_STACK_DATA) rmSync(dataDir, { recursive: true, force: true });
}, 90_000);

async function sql<T>(query: string, params: Record<string, string>): Promise<T[]> {
  const qs = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [`param_${k}`, v]));
  const r = await fetch(`${stack.urls.clickhouse}/?${qs}`, { method: 'POST', body: `${query} FORMAT JSONEachRow` });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`SQL ${r.status}: ${text}`);
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);
}

test('the stack creates its topics on Apache Kafka with replication factor 3 and min.insync.replicas=2', async () => {
  const client = createKafka(kafka.brokers, 'kafka-stack-test-admin', pino({ level: 'silent' }));
  const admin = client.admin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((t) => !t.startsWith('__'));
    expect(topics).toContain('storefront.events.v1');
    const meta = await admin.fetchTopicMetadata({ topics });
    for (const t of meta.topics)
      for (const p of t.partitions)
        expect({ topic: t.name, replicas: p.replicas.length }).toEqual({ topic: t.name, replicas: 3 });
    const cfg = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: 2, name: 'storefront.events.v1', configNames: ['min.insync.replicas'] }],
    });
    expect(cfg.resources[0].configEntries[0].configValue).toBe('2');
  } finally {
    await admin.disconnect();
  }
});

test('beacon events reach the ClickHouse aggregates through Apache Kafka', { timeout: 120_000 }, async () => {
  const created = await writer.createStore({ name: 'apache kafka stack test' });
  const w = writer.lastWritten()!;
  await expect
    .poll(
      async () => {
        const r = await fetch(
          `${stack.urls.http}/internal/store-config/caught-up?partition=${w.partition}&offset=${w.offset}&wait_ms=1000`,
        );
        return r.ok && ((await r.json()) as { caught_up: boolean }).caught_up;
      },
      { timeout: 30_000 },
    )
    .toBe(true);

  const t = Date.now() - 60_000;
  const ev = (session: string, i: number, type: string, extra: Record<string, unknown>) => ({
    event_id: newUlid(),
    event_type: type,
    timestamp: new Date(t + i * 1000).toISOString(),
    session_id: session,
    ...extra,
  });
  const events = [
    ev('s1', 0, 'product_view', { product_id: 501 }),
    ev('s1', 1, 'product_view', { product_id: 502 }),
    ev('s1', 2, 'add_to_cart', { product_id: 502, quantity: 1, price: '7.50', currency: 'EUR' }),
    ev('s2', 0, 'product_view', { product_id: 501 }),
  ];
  const r = await fetch(`${stack.urls.http}/beacon`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'user-agent': UA, 'x-storefront-access-token': created.token },
    body: JSON.stringify({ events }),
  });
  expect(r.status, await r.clone().text()).toBeLessThan(300);

  const engagement = () =>
    sql<{ p: string; v: number; c: number }>(
      'SELECT toString(product_id) AS p, sum(views) AS v, sum(add_to_carts) AS c FROM product_daily_engagement WHERE store_id = {s:String} GROUP BY p ORDER BY p',
      { s: created.storeId },
    );
  await expect.poll(engagement, { timeout: 60_000, interval: 250 }).toEqual([
    { p: '501', v: 2, c: 0 },
    { p: '502', v: 1, c: 1 },
  ]);
  const raw = await sql<{ n: number }>('SELECT count() AS n FROM events_raw WHERE store_id = {s:String}', {
    s: created.storeId,
  });
  expect(raw[0].n).toBe(4);
});
