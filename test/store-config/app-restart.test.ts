// The store directory of a real app process survives a crash: configuration written while the app runs,
// the app killed with SIGKILL, the stack started again on the same data directory — the app replays the
// compacted topic to the same state (tokens, suspension, items, tombstones) before it listens, and its
// ClickHouse projection holds each write once.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { freePorts, type Stack, startStack } from '../../deploy/local/stack.ts';
import { loadConfig } from '../../services/common/config.ts';
import { openConfigWriter } from '../../services/store-config/writer.ts';
import { SAMPLE_BLOCK_ID, sampleItems } from '../helpers/stores.ts';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-store-config-restart-'));
let stack: Stack | undefined;
afterAll(async () => {
  await stack?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('app restart', () => {
  it('replays stores.config.v1 into the same directory state after the app is killed', async () => {
    const [http, kafka, registry, ch, redis] = await freePorts(5);
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
    const start = () =>
      startStack(config, { output: (c, line) => logs.push(`[${c}] ${line}`), appEnv: env, startTimeoutMs: 120_000 });
    const base = `http://127.0.0.1:${http}`;
    const whoami = (token: string) =>
      fetch(`${base}/internal/store-config/whoami`, { headers: { 'x-storefront-access-token': token } });
    const projected = async (storeId: string) => {
      const r = await fetch(`http://127.0.0.1:${ch}/?param_store=${storeId}`, {
        method: 'POST',
        body: 'SELECT kind, item_id, version FROM discovery.store_config_current WHERE store_id = {store:String} ORDER BY kind, item_id FORMAT JSONEachRow',
      });
      expect(r.status).toBe(200);
      return (await r.text()).trim();
    };

    stack = await start();
    const writer = openConfigWriter({
      brokers: [`127.0.0.1:${kafka}`],
      registryUrl: `http://127.0.0.1:${registry}`,
      logger: pino({ level: 'error' }),
    });
    const a = await writer.createStore({ name: 'Restart A' });
    const b = await writer.createStore({ name: 'Restart B' });
    const samples = sampleItems();
    for (const item of samples.block ?? []) await writer.putConfig(a.storeId, 'block', item);
    await writer.putConfig(a.storeId, 'synonym', { id: 'gone', type: 'two_way', terms: ['x', 'y'] });
    await writer.deleteConfig(a.storeId, 'synonym', 'gone');
    await writer.suspendStore(b.storeId);
    const extra = await writer.issueToken(a.storeId, 'second');
    const last = await writer.revokeToken(a.storeId, a.tokenId);
    await writer.close();
    const caught = await (
      await fetch(`${base}/internal/store-config/caught-up?offset=${last.offset}&wait_ms=10000`)
    ).json();
    expect(caught).toMatchObject({ caught_up: true });
    expect((await whoami(extra.token)).status).toBe(200);
    expect((await whoami(a.token)).status).toBe(401);
    expect((await whoami(b.token)).status).toBe(402);
    // the projection is written by the store_config stream processor, just after the in-memory state
    const sunk = async () =>
      Number(
        (
          await (
            await fetch(
              `http://127.0.0.1:${ch}/?query=${encodeURIComponent('SELECT max(`offset`) FROM discovery.store_config')}`,
            )
          ).text()
        ).trim(),
      );
    // (a fresh stack's processors join their group and open chDB while the test run keeps both cores
    // busy: 15 s was once too short in a full run)
    await expect.poll(sunk, { timeout: 60_000 }).toBe(Number(last.offset));
    const before = await projected(a.storeId);
    expect(before).toContain(`"item_id":"${SAMPLE_BLOCK_ID}"`);
    expect(before).not.toContain('"synonym"');

    // crash the app, then stop the rest and start everything again on the same data
    stack.children.app.kill('SIGKILL');
    await new Promise((r) => stack?.children.app.once('exit', r));
    await stack.stop();
    stack = await start();

    // ready before listening: the first request after start already sees the replayed state
    expect((await whoami(extra.token)).status).toBe(200);
    expect((await whoami(a.token)).status).toBe(401);
    expect((await whoami(b.token)).status).toBe(402);
    const position = await (await fetch(`${base}/internal/store-config/caught-up?offset=${last.offset}`)).json();
    expect(position).toMatchObject({ caught_up: true });
    // the projection is unchanged, and the restart inserted nothing (the processor resumes from its
    // committed offsets; row counts are no measure, ReplacingMergeTree merges collapse them)
    expect(await projected(a.storeId)).toBe(before);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^store_config_records_total\{result="applied"\} [1-9]/m);
    expect(metrics).not.toMatch(/^stream_rows_written_total\{[^}]*processor="store_config"[^}]*\} [1-9]/m);
  }, 300_000);
});
