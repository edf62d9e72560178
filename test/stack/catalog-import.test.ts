// The bulk import against the running stack: the CLI's error reporting and exit codes, and resuming an
// interrupted import from its checkpoint without writing any record twice.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createValueCodec } from '../../services/common/kafka/codec.ts';
import { checkpointPath, runImport } from '../../services/catalog/importer.ts';
import { CatalogWriter } from '../../services/catalog/writer.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { shopifyProduct } from '../catalog/fixtures.ts';
import { catalogReady } from '../catalog/ready.ts';
import { stack, sql as stackSql } from '../helpers/stack.ts';
import { closeTestStoreWriter, createTestStore } from '../helpers/stores.ts';
import { keysBetween, watermarks } from '../helpers/topic-records.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const logger = createLogger('test', 'silent');
let storeId: string;
let dir: string;

beforeAll(async () => {
  ({ storeId } = await createTestStore({ name: 'catalog import' }));
  await catalogReady();
  dir = mkdtempSync(path.join(os.tmpdir(), 'sd-catalog-import-'));
});
const sql = <T = Record<string, unknown>>(query: string) => stackSql<T>(query, { store: storeId });

afterAll(async () => {
  await closeTestStoreWriter();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function eventually<T>(check: () => Promise<T>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

const kafka = () => createKafka(stack().kafkaBrokers, `catalog-import-test-${process.pid}`, logger);
/** this test store's records appended to the products topic since `from` */
async function ownProductRecords(from: Map<number, number>): Promise<number> {
  const keys = await keysBetween(kafka(), 'products', from, await watermarks(kafka(), 'products'));
  return keys.filter((k) => k.startsWith(`${storeId}:`)).length;
}

function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const s = stack();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'services/catalog/import.ts'), ...args], {
      cwd: ROOT,
      env: {
        ...process.env,
        KAFKA_BROKERS: s.kafkaBrokers.join(','),
        REDIS_URL: s.redisUrl,
        SCHEMA_REGISTRY_URL: s.schemaRegistryUrl,
        CLICKHOUSE_URL: '',
        DATA_DIR: dir,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const productLine = (id: number, over: Record<string, unknown> = {}) =>
  JSON.stringify({
    type: 'product',
    ...shopifyProduct({
      id,
      handle: `p-${id}`,
      title: `Product ${id}`,
      updated_at: '2024-06-01T00:00:00Z',
      variants: [
        {
          id: id * 10 + 1,
          title: 'Default',
          price: '10.00',
          inventory_item_id: id * 10 + 1,
          inventory_management: 'shopify',
          inventory_quantity: 1,
        },
      ],
      ...over,
    }),
  });

const importedIds = async (from: number, to: number) =>
  (
    await sql<{ id: string }>(
      `SELECT toString(product_id) AS id FROM catalog_products_current WHERE store_id = {store:String} AND product_id BETWEEN ${from} AND ${to} ORDER BY product_id`,
    )
  ).map((r) => r.id);

describe('catalog import', () => {
  it('reports a bad record by line number and stops; --resume with --max-errors skips it', async () => {
    const file = path.join(dir, 'export.jsonl');
    const lines = [
      productLine(7001),
      productLine(7002),
      productLine(7003, { variants: [{ id: 1, price: 'free' }] }),
      '',
      JSON.stringify({
        type: 'collection',
        id: 7100,
        handle: 'imported',
        title: 'Imported',
        product_ids: [7002, 7001, 7004],
        updated_at: '2024-06-01T00:00:00Z',
      }),
      productLine(7004),
      JSON.stringify({
        type: 'inventory_level',
        variant_id: 70011,
        inventory_item_id: 70011,
        location_id: 9,
        available: 3,
        updated_at: '2024-06-02T00:00:00Z',
      }),
      JSON.stringify({ type: 'price', market: 'ca', variant_id: 70011, currency: 'CAD', price: '259.00' }),
      '{"type": "product", "id": 7005,',
    ];
    writeFileSync(file, `${lines.join('\n')}\n`);

    const first = await runCli(['--store', storeId, '--file', file]);
    expect(first.code).toBe(1);
    expect(first.stderr).toContain('line 3: variants[0].price:');
    expect(first.stdout).toContain('stopped: more than 0 bad records (line 3)');
    expect(JSON.parse(readFileSync(checkpointPath(file), 'utf8')).last_line).toBe(2);
    await eventually(async () => expect(await importedIds(7001, 7099)).toEqual(['7001', '7002']));

    const again = await runCli(['--store', storeId, '--file', file]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('a checkpoint exists');

    const resumed = await runCli(['--store', storeId, '--file', file, '--resume', '--max-errors', '5', '--json']);
    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toContain('line 3: variants[0].price:');
    expect(resumed.stderr).toMatch(/line 9: \(line\): not valid JSON/);
    const summary = JSON.parse(resumed.stdout.trim().split('\n').at(-1) as string);
    expect(summary).toMatchObject({ status: 'completed', resumedFrom: 2, lastLine: 9, produced: 5 });
    expect(summary.errors.map((e: { line: number }) => e.line)).toEqual([3, 9]);
    expect(existsSync(checkpointPath(file))).toBe(false);

    await eventually(async () => {
      expect(await importedIds(7001, 7099)).toEqual(['7001', '7002', '7004']);
      const members = await sql<{ product_id: string }>(
        "SELECT toString(product_id) AS product_id FROM catalog_collection_products WHERE store_id = {store:String} AND collection_handle = 'imported' ORDER BY position",
      );
      expect(members.map((m) => m.product_id)).toEqual(['7002', '7001', '7004']);
      const prices = await sql<{ price: string; product_id: string }>(
        "SELECT toString(price) AS price, toString(product_id) AS product_id FROM catalog_prices_current WHERE store_id = {store:String} AND price_list_id = 'market-ca'",
      );
      expect(prices).toEqual([{ price: '259', product_id: '7001' }]);
      const stock = await sql<{ location_id: string; available: number }>(
        'SELECT toString(location_id) AS location_id, available FROM catalog_inventory_by_location WHERE store_id = {store:String} AND product_id = 7001',
      );
      expect(stock).toEqual([{ location_id: '9', available: 3 }]);
    });
  });

  it('an interrupted import resumes after its checkpoint and writes every record exactly once', async () => {
    const file = path.join(dir, 'big.json');
    // a JSON array this time; 9 products
    const items = Array.from({ length: 9 }, (_, i) => JSON.parse(productLine(8001 + i)));
    writeFileSync(file, JSON.stringify(items, null, 2));
    const s = stack();
    const redis = createRedis(s.redisUrl);
    const writer = new CatalogWriter({
      kafka: createKafka(s.kafkaBrokers, `catalog-import-test-${process.pid}`, logger),
      redis,
      codec: createValueCodec({ registryUrl: s.schemaRegistryUrl }),
      config: { KAFKA_TOPIC_PREFIX: '', CATALOG_PRODUCE_TIMEOUT_MS: 10_000 },
      logger,
    });
    await writer.start();
    try {
      const before = await watermarks(kafka(), 'products');
      const controller = new AbortController();
      const first = await runImport({
        storeId,
        file,
        writer,
        batchSize: 4,
        signal: controller.signal,
        onProgress: (p) => {
          if (p.produced >= 4) controller.abort();
        },
      });
      expect(first).toMatchObject({ status: 'interrupted', produced: 4, resumedFrom: 0 });
      const cp = JSON.parse(readFileSync(checkpointPath(file), 'utf8'));
      expect(cp).toMatchObject({ store_id: storeId, records: 4 });
      expect(cp.last_line).toBe(first.lastLine);
      expect(await ownProductRecords(before)).toBe(4);

      await expect(runImport({ storeId: 'another-store', file, writer, resume: true })).rejects.toThrow(
        /belongs to store/,
      );
      const second = await runImport({ storeId, file, writer, resume: true, batchSize: 4 });
      expect(second).toMatchObject({
        status: 'completed',
        produced: 5,
        stale: 0,
        resumedFrom: cp.last_line,
        errors: [],
      });
      expect(await ownProductRecords(before)).toBe(9);
      await eventually(async () =>
        expect(await importedIds(8001, 8099)).toEqual(Array.from({ length: 9 }, (_, i) => String(8001 + i))),
      );

      // importing the same file again: every record is already stored at that version
      const third = await runImport({ storeId, file, writer });
      expect(third).toMatchObject({ status: 'completed', produced: 9, stale: 0 });
      const rows = await sql<{ n: string }>(
        'SELECT toString(count()) AS n FROM catalog_products_current WHERE store_id = {store:String} AND product_id BETWEEN 8001 AND 8099',
      );
      expect(rows[0].n).toBe('9');
    } finally {
      await writer.close();
      redis.disconnect();
    }
  });
});
