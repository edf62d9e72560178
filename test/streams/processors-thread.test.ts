// The stream processors on their worker thread (STREAMS_THREAD, the default) inside a real single-node
// stack: events sent to POST /beacon reach the aggregates, the thread's metrics are merged into the app's
// /metrics, and a replay through POST /internal/replay runs on the thread and streams its progress back.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, describe, expect, it, onTestFailed } from 'vitest';
import { freePorts, type Stack, startStack } from '../../deploy/local/stack.ts';
import { loadConfig } from '../../services/common/config.ts';
import { openConfigWriter } from '../../services/store-config/writer.ts';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-streams-thread-'));
let stack: Stack | undefined;
afterAll(async () => {
  await stack?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('stream processors on their own thread', () => {
  it('aggregate beacon events, report metrics on /metrics and replay through POST /internal/replay', async () => {
    const [http, kafka, registry, ch, redis] = await freePorts(5);
    const replayToken = 'r'.repeat(40);
    const env = {
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      HTTP_PORT: String(http),
      KAFKA_PORT: String(kafka),
      SCHEMA_REGISTRY_PORT: String(registry),
      CLICKHOUSE_HTTP_PORT: String(ch),
      REDIS_PORT: String(redis),
      DEMO_STORE: 'false',
      LOG_LEVEL: 'warn',
      SERVICE_BUILD: 'test',
      STREAMS_REPLAY_TOKEN: replayToken,
    };
    const config = loadConfig({
      ...process.env,
      ...env,
      KAFKA_BROKERS: '',
      REDIS_URL: '',
      CLICKHOUSE_URL: '',
      SCHEMA_REGISTRY_URL: '',
    });
    const logs: string[] = [];
    onTestFailed(() => console.log(logs.slice(-80).join('\n')));
    stack = await startStack(config, {
      output: (c, line) => logs.push(`[${c}] ${line}`),
      appEnv: env,
      startTimeoutMs: 180_000,
    });
    const base = `http://127.0.0.1:${http}`;
    const query = async (sql: string, storeId: string) => {
      const r = await fetch(`http://127.0.0.1:${ch}/?param_s=${storeId}`, { method: 'POST', body: sql });
      expect(r.status).toBe(200);
      return (await r.text()).trim();
    };

    const writer = openConfigWriter({
      brokers: [`127.0.0.1:${kafka}`],
      registryUrl: `http://127.0.0.1:${registry}`,
      logger: pino({ level: 'error' }),
    });
    const { storeId, token } = await writer.createStore({ name: 'Processors thread' });
    await writer.close();
    const t = Date.now() - 60_000;
    const events = ['a', 'b', 'c'].flatMap((session, s) =>
      [701, 702].map((product_id, i) => ({
        event_id: newUlid(),
        event_type: 'product_view',
        timestamp: new Date(t + s * 10_000 + i * 1000).toISOString(),
        session_id: session,
        product_id,
      })),
    );
    await expect
      .poll(
        async () => {
          const r = await fetch(`${base}/beacon`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-storefront-access-token': token,
              // a browser's user agent: events of bots are kept raw but left out of the aggregates
              'user-agent':
                'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
            },
            body: JSON.stringify({ events }),
          });
          return r.status;
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe(201);
    await expect
      .poll(() => query('SELECT count() FROM discovery.events_raw WHERE store_id = {s:String} FORMAT CSV', storeId), {
        timeout: 60_000,
        interval: 250,
      })
      .toBe(String(events.length));
    const pairs =
      'SELECT toString(product_a) AS a, toString(product_b) AS b, sum(sessions) AS n FROM discovery.co_view_pairs WHERE store_id = {s:String} AND a != b GROUP BY a, b ORDER BY a FORMAT CSV';
    await expect
      .poll(() => query(pairs, storeId), { timeout: 60_000, interval: 250 })
      .toBe('"701","702",3\n"702","701",3');

    // the thread's processors are counted on the app's /metrics
    const metrics = () => fetch(`${base}/metrics`).then((m) => m.text());
    await expect
      .poll(metrics, { timeout: 20_000 })
      .toMatch(/stream_messages_total\{processor="events",mode="live",outcome="written"\} [1-9]/);
    // the process-wide figures once (from the app's main thread), not summed over the threads
    expect((await metrics()).match(/^process_cpu_seconds_total \d/gm)).toHaveLength(1);

    // a replay from the log runs on the thread, streams its progress, and finds the aggregates equal; the
    // processors report started (readiness) once every one of them has joined its group
    await expect
      .poll(async () => (await fetch(`${base}/readyz`)).status, { timeout: 120_000, interval: 500 })
      .toBe(200);
    const r = await fetch(`${base}/internal/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${replayToken}` },
      body: JSON.stringify({ processor: 'events', from: 'earliest', swap: false }),
    });
    expect(r.status, await r.clone().text()).toBe(200);
    const lines = (await r.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; result?: { messages: number }; diff?: unknown; message?: string });
    expect(lines.filter((l) => l.type === 'error')).toEqual([]);
    expect(lines.find((l) => l.type === 'result')?.result?.messages).toBeGreaterThanOrEqual(events.length);
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(
      /stream_messages_total\{processor="events",mode="replay"/,
    );
    // the live aggregates are untouched by a replay without swap
    expect(await query(pairs, storeId)).toBe('"701","702",3\n"702","701",3');
  }, 400_000);
});
