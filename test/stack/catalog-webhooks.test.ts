// Catalog webhooks against the running stack: signed platform payloads in, Kafka records out, the
// projections in ClickHouse read back through the analysts' SQL endpoint.
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TOPICS } from '../../schemas/topics.ts';
import { signWebhook } from '../../services/catalog/webhooks.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { shopifyArticle, shopifyCollection, shopifyOrder, shopifyProduct } from '../catalog/fixtures.ts';
import { catalogReady } from '../catalog/ready.ts';
import { stack, sql as stackSql } from '../helpers/stack.ts';
import { closeTestStoreWriter, createTestStore, testStoreWriter, waitForApp } from '../helpers/stores.ts';
import { keysBetween, watermarks } from '../helpers/topic-records.ts';

let storeId: string;
let secret: string;
const kafka = () =>
  createKafka(stack().kafkaBrokers, `catalog-webhooks-test-${process.pid}`, createLogger('test', 'silent'));

beforeAll(async () => {
  ({ storeId } = await createTestStore({ name: 'catalog webhooks' }));
  await catalogReady();
  secret = readFileSync(path.join(stack().dataDir, 'catalog-webhook.secret'), 'utf8').trim();
});
const sql = <T = Record<string, unknown>>(query: string, params: Record<string, string> = {}) =>
  stackSql<T>(query, { store: storeId, ...params });

afterAll(async () => {
  await closeTestStoreWriter();
});

let webhookSeq = 0;
async function post(
  topic: string,
  payload: unknown,
  opts: { webhookId?: string; sign?: string | null; store?: string; body?: string; contentType?: string } = {},
): Promise<{ status: number; body: Record<string, any>; headers: Headers }> {
  const body = opts.body ?? JSON.stringify(payload);
  const headers: Record<string, string> = {
    'content-type': opts.contentType ?? 'application/json',
    'x-shopify-topic': topic,
    'x-shopify-webhook-id': opts.webhookId ?? `wh-${process.pid}-${++webhookSeq}`,
    'x-shopify-shop-domain': 'test.myshopify.com',
  };
  if (opts.sign !== null) headers['x-shopify-hmac-sha256'] = opts.sign ?? signWebhook(body, secret);
  const res = await fetch(`${stack().httpUrl}/webhooks/shopify/${opts.store ?? storeId}`, {
    method: 'POST',
    headers,
    body,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {}, headers: res.headers };
}

/** POST that declares `length` bytes but sends only the first 1 KiB, and resolves on the answer. */
function declaredLengthPost(
  url: string,
  length: number,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { ...headers, 'content-length': String(length) } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body });
        req.destroy();
      });
    });
    req.on('error', reject);
    req.write(`{"id":1,"body_html":"${'x'.repeat(1024)}`);
  });
}

/** Poll until `check` returns without throwing (the projections are asynchronous). */
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

async function highWatermarks(topicKey: keyof typeof TOPICS): Promise<string> {
  const hw = await watermarks(kafka(), topicKey);
  return [...hw.keys()]
    .sort((a, b) => a - b)
    .map((p) => hw.get(p))
    .join(',');
}

const currentProduct = (id: string) =>
  sql<{ title: string; updated_at: string; variants: number; price_min: string }>(
    `SELECT title, toString(updated_at) AS updated_at, length(variants) AS variants, toString(price_min) AS price_min
     FROM catalog_products_current WHERE store_id = {store:String} AND product_id = {id:UInt64}`,
    { id },
  );

describe('catalog webhooks', () => {
  it('refuses a missing or wrong signature with 401 and writes nothing', async () => {
    const before = await watermarks(kafka(), 'products');
    const missing = await post('products/create', shopifyProduct({ id: 1001 }), { sign: null });
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('invalid_signature');
    const wrong = await post('products/create', shopifyProduct({ id: 1001 }), {
      sign: signWebhook('{"other":1}', secret),
    });
    expect(wrong.status).toBe(401);
    const otherSecret = await post('products/create', shopifyProduct({ id: 1001 }), {
      sign: signWebhook(JSON.stringify(shopifyProduct({ id: 1001 })), 'not-the-secret-at-all'),
    });
    expect(otherSecret.status).toBe(401);
    const appended = await keysBetween(kafka(), 'products', before, await watermarks(kafka(), 'products'));
    expect(appended.filter((k) => k.startsWith(`${storeId}:`))).toEqual([]);
  });

  it('create, newer update, late older update and delete reach the projection', async () => {
    const id = '632910392';
    const created = await post('products/create', shopifyProduct());
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ status: 'accepted', topic: 'products/create', records: 1, stale: 0 });
    expect(
      await eventually(async () => {
        const [p] = await currentProduct(id);
        expect(p?.title).toBe('IPod Nano - 8GB');
        return p;
      }),
    ).toMatchObject({ variants: 2, price_min: '189.5', updated_at: '2024-03-05 17:00:00.000' });

    const newer = await post(
      'products/update',
      shopifyProduct({ title: 'IPod Nano - 16GB', updated_at: '2024-04-01T00:00:00Z' }),
    );
    expect(newer.body).toMatchObject({ records: 1, stale: 0 });
    await eventually(async () => expect((await currentProduct(id))[0]?.title).toBe('IPod Nano - 16GB'));

    // an older update delivered late is acknowledged (so the platform stops retrying) but not written
    const older = await post(
      'products/update',
      shopifyProduct({ title: 'Old title', updated_at: '2024-03-20T00:00:00Z' }),
    );
    expect(older.status).toBe(200);
    expect(older.body).toMatchObject({ records: 0, stale: 1 });

    const deleted = await post('products/delete', { id: Number(id) });
    expect(deleted.body).toMatchObject({ status: 'accepted', records: 1 });
    await eventually(async () => expect(await currentProduct(id)).toEqual([]));
    // the projection holds the versions it saw; none is the stale title
    const titles = await sql<{ title: string; is_deleted: number }>(
      'SELECT title, is_deleted FROM catalog_products WHERE store_id = {store:String} AND product_id = {id:UInt64} ORDER BY _version',
      { id },
    );
    expect(titles.map((t) => t.title)).not.toContain('Old title');
    expect(titles.at(-1)?.is_deleted).toBe(1);
  });

  it("a store's own webhook secret replaces the platform secret; during a rotation both sign", async () => {
    // precedence (services/catalog/module.ts): the store's `webhook_secret` items when it has any, else
    // the platform secret (CATALOG_WEBHOOK_SECRET or DATA_DIR/catalog-webhook.secret)
    const { storeId: own } = await createTestStore({ name: 'own webhook secret' });
    const w = testStoreWriter();
    const payload = shopifyProduct({ id: 7007, handle: 'own-secret' });
    const body = JSON.stringify(payload);
    const send = async (signWith: string) =>
      (await post('products/update', payload, { store: own, body, sign: signWebhook(body, signWith) })).status;
    const first = `first-store-secret-${process.pid}-0123456789`;
    const second = `second-store-secret-${process.pid}-abcdefghij`;

    // no secret of its own yet: the platform secret signs
    expect(await send(secret)).toBe(200);
    expect(await send(first)).toBe(401);

    await w.putConfig(own, 'webhook_secret', { id: 'first', secret: first, label: 'shopify', created_at: null });
    await waitForApp(w);
    expect(await send(first)).toBe(200);
    expect(await send(secret)).toBe(401);
    expect(await send(second)).toBe(401);
    // other stores keep the platform secret
    expect((await post('products/update', shopifyProduct({ id: 7008, handle: 'platform-secret' }))).status).toBe(200);

    // rotation: the new secret is added, both sign until the old one is removed
    await w.putConfig(own, 'webhook_secret', { id: 'second', secret: second, label: 'rotated', created_at: null });
    await waitForApp(w);
    expect(await send(first)).toBe(200);
    expect(await send(second)).toBe(200);
    expect(await send(secret)).toBe(401);

    await w.deleteConfig(own, 'webhook_secret', 'first');
    await waitForApp(w);
    expect(await send(first)).toBe(401);
    expect(await send(second)).toBe(200);

    // without any secret of its own the store falls back to the platform secret
    await w.deleteConfig(own, 'webhook_secret', 'second');
    await waitForApp(w);
    expect(await send(second)).toBe(401);
    expect(await send(secret)).toBe(200);
    // what was accepted reached the store's projection
    const [p] = await eventually(async () => {
      const rows = await stackSql<{ handle: string }>(
        'SELECT handle FROM catalog_products_current WHERE store_id = {store:String} AND product_id = 7007',
        { store: own },
      );
      expect(rows).toHaveLength(1);
      return rows;
    });
    expect(p.handle).toBe('own-secret');
  });

  it('a delete wins even over an update stamped ahead of our clock', async () => {
    const future = new Date(Date.now() + 3 * 24 * 3_600_000).toISOString();
    await post('products/update', shopifyProduct({ id: 6006, handle: 'from-the-future', updated_at: future }));
    await eventually(async () => expect((await currentProduct('6006'))[0]?.title).toBe('IPod Nano - 8GB'));
    const deleted = await post('products/delete', { id: 6006 });
    expect(deleted.body.records).toBe(1);
    await eventually(async () => expect(await currentProduct('6006')).toEqual([]));
    // and a retry of that update after the delete is refused as stale
    const retry = await post(
      'products/update',
      shopifyProduct({ id: 6006, handle: 'from-the-future', updated_at: future }),
    );
    expect(retry.body).toMatchObject({ records: 0, stale: 1 });
  });

  it('a redelivered webhook changes nothing: no Kafka record, same rows', async () => {
    const payload = shopifyProduct({ id: 2002, handle: 'redelivered', updated_at: '2024-06-01T00:00:00Z' });
    const first = await post('products/update', payload, { webhookId: `redelivery-${process.pid}` });
    expect(first.body.records).toBe(1);
    await eventually(async () => expect((await currentProduct('2002'))[0]?.title).toBe('IPod Nano - 8GB'));
    const rowsBefore = await sql<{ n: string }>(
      'SELECT toString(count()) AS n FROM catalog_products WHERE store_id = {store:String} AND product_id = 2002',
    );
    const hwBefore = await highWatermarks('products');

    const again = await post('products/update', payload, { webhookId: `redelivery-${process.pid}` });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: 'duplicate', records: 0 });
    // a redelivery with a new webhook id (platform retry after a lost answer) is produced, but the
    // projection keeps one version per (updated_at, key): same current state
    const retried = await post('products/update', payload);
    expect(retried.body.records).toBe(1);
    expect(await highWatermarks('products')).not.toBe(hwBefore);
    await new Promise((r) => setTimeout(r, 1_000));
    const current = await sql<{ n: string }>(
      'SELECT toString(count()) AS n FROM catalog_products_current WHERE store_id = {store:String} AND product_id = 2002',
    );
    expect(current[0].n).toBe('1');
    expect(Number(rowsBefore[0].n)).toBe(1);
  });

  it('collections with ordered membership, inventory levels and availability', async () => {
    await post('products/create', shopifyProduct({ id: 3001, handle: 'a', updated_at: '2024-05-01T00:00:00Z' }));
    await post(
      'products/create',
      shopifyProduct({
        id: 3002,
        handle: 'b',
        updated_at: '2024-05-01T00:00:00Z',
        variants: [
          {
            id: 30021,
            price: '5.00',
            inventory_item_id: 30021,
            inventory_management: 'shopify',
            inventory_quantity: 4,
          },
        ],
      }),
    );
    const col = await post(
      'collections/create',
      shopifyCollection({ id: 4001, handle: 'featured', product_ids: [3002, 3001] }),
    );
    expect(col.body).toMatchObject({ records: 2 });
    await eventually(async () => {
      const rows = await sql<{ handle: string; product_id: string; position: string }>(
        'SELECT collection_handle AS handle, toString(product_id) AS product_id, toString(position) AS position FROM catalog_collection_products WHERE store_id = {store:String} ORDER BY position',
      );
      expect(rows).toEqual([
        { handle: 'featured', product_id: '3002', position: '1' },
        { handle: 'featured', product_id: '3001', position: '2' },
      ]);
    });

    const level = await post('inventory_levels/update', {
      inventory_item_id: 30021,
      location_id: 77,
      available: 0,
      updated_at: '2024-05-02T00:00:00Z',
    });
    expect(level.body).toMatchObject({ records: 1 });
    await eventually(async () => {
      const rows = await sql<{ product_id: string; available: number }>(
        'SELECT toString(product_id) AS product_id, available FROM catalog_product_availability WHERE store_id = {store:String} AND product_id IN (3001, 3002) ORDER BY product_id',
      );
      expect(rows).toEqual([
        { product_id: '3001', available: 1 },
        { product_id: '3002', available: 0 },
      ]);
    });

    const gone = await post('collections/delete', { id: 4001 });
    expect(gone.body).toMatchObject({ records: 2 });
    await eventually(async () =>
      expect(await sql('SELECT * FROM catalog_collection_products WHERE store_id = {store:String}')).toEqual([]),
    );
  });

  it('articles and pages', async () => {
    await post('articles/create', shopifyArticle());
    await eventually(async () => {
      const rows = await sql<{ title: string; summary_text: string; author: string }>(
        "SELECT title, summary_text, author FROM catalog_content_current WHERE store_id = {store:String} AND content_type = 'article'",
      );
      expect(rows).toEqual([
        {
          title: 'get on the train now',
          author: 'Dennis',
          summary_text: 'Do you want to get on the <img src="https://cdn.example.com/train.jpg" alt="train"> train?',
        },
      ]);
    });
    await post('articles/delete', { id: 134645308 });
    await eventually(async () =>
      expect(
        await sql("SELECT * FROM catalog_content_current WHERE store_id = {store:String} AND content_type = 'article'"),
      ).toEqual([]),
    );
  });

  it('an order webhook produces an order the revenue and co-purchase aggregates consume; a cancellation takes it back', async () => {
    // recent dates: orders_raw keeps EVENTS_RETENTION_DAYS
    const placed = new Date(Date.now() - 3_600_000).toISOString();
    const res = await post(
      'orders/create',
      shopifyOrder({ id: 5005, created_at: placed, processed_at: placed, updated_at: placed }),
    );
    expect(res.body).toMatchObject({ status: 'accepted', records: 1 });
    await eventually(async () => {
      const rows = await sql<{ product_id: string; quantity: number; price: string; session_id: string }>(
        "SELECT toString(product_id) AS product_id, quantity, toString(price) AS price, session_id FROM orders_raw WHERE store_id = {store:String} AND order_id = '5005' ORDER BY line_no",
      );
      expect(rows).toEqual([
        { product_id: '632910392', quantity: 2, price: '199', session_id: 'sess-123' },
        { product_id: '921728736', quantity: 1, price: '200.94', session_id: 'sess-123' },
      ]);
    }, 30_000);
    // units, orders and revenue (price × quantity) per product; the line without a product is left out
    const sales = () =>
      sql<{ product_id: string; units: string; orders: string; revenue: string }>(
        `SELECT toString(product_id) AS product_id, toString(sum(s.units)) AS units, toString(sum(s.orders)) AS orders, toString(sum(s.revenue)) AS revenue
         FROM product_daily_sales AS s WHERE store_id = {store:String}
         GROUP BY product_id HAVING sum(s.units) != 0 OR sum(s.orders) != 0 OR sum(s.revenue) != 0 ORDER BY product_id`,
      );
    // co-purchase pairs in both directions, plus the diagonal (orders containing the product). Rows that
    // sum to zero are left out: SummingMergeTree drops them when it merges, so they may or may not be there
    const pairs = () =>
      sql<{ a: string; b: string; orders: string }>(
        `SELECT toString(product_a) AS a, toString(product_b) AS b, toString(sum(p.orders)) AS orders
         FROM co_purchase_pairs AS p WHERE store_id = {store:String}
         GROUP BY product_a, product_b HAVING sum(p.orders) != 0 ORDER BY product_a, product_b`,
      );
    await eventually(async () => {
      expect(await sales()).toEqual([
        { product_id: '632910392', units: '2', orders: '1', revenue: '398' },
        { product_id: '921728736', units: '1', orders: '1', revenue: '200.94' },
      ]);
      expect(await pairs()).toEqual([
        { a: '632910392', b: '632910392', orders: '1' },
        { a: '632910392', b: '921728736', orders: '1' },
        { a: '921728736', b: '632910392', orders: '1' },
        { a: '921728736', b: '921728736', orders: '1' },
      ]);
    }, 30_000);
    const cancelled = await post(
      'orders/cancelled',
      shopifyOrder({
        id: 5005,
        created_at: placed,
        processed_at: placed,
        cancelled_at: new Date().toISOString(),
        updated_at: new Date().toISOString(),
      }),
    );
    expect(cancelled.body.records).toBe(1);
    // signed deltas: the cancellation subtracts everything the order added
    await eventually(async () => {
      expect(await sales()).toEqual([]);
      expect(await pairs()).toEqual([]);
    }, 30_000);
    // orders_raw: every line rewritten as cancelled and deleted, so the current state (FINAL) has none
    const latest = await sql<{ line_no: number; cancelled: number; is_deleted: number }>(
      `SELECT line_no, argMax(cancelled, _version) AS cancelled, argMax(is_deleted, _version) AS is_deleted
       FROM orders_raw WHERE store_id = {store:String} AND order_id = '5005' GROUP BY line_no ORDER BY line_no`,
    );
    expect(latest).toEqual([
      { line_no: 0, cancelled: 1, is_deleted: 1 },
      { line_no: 1, cancelled: 1, is_deleted: 1 },
    ]);
    expect(
      await sql("SELECT line_no FROM orders_raw FINAL WHERE store_id = {store:String} AND order_id = '5005'"),
    ).toEqual([]);
  });

  it('answers bad input with a 4xx naming the problem', async () => {
    const badJson = await post('products/create', null, { body: '{"id": 1,' });
    expect(badJson.status).toBe(400);
    expect(badJson.body.error.code).toBe('invalid_json');

    const invalid = await post(
      'products/update',
      shopifyProduct({ id: 'not-a-number', variants: [{ id: 5, price: 'free' }] }),
    );
    expect(invalid.status).toBe(422);
    expect(invalid.body.error.code).toBe('invalid_payload');
    expect(invalid.body.error.fields.map((f: { path: string }) => f.path).sort()).toEqual(['id', 'variants[0].price']);

    const unsupported = await post('themes/publish', { id: 1 });
    expect(unsupported.status).toBe(422);
    expect(unsupported.body.error.code).toBe('unsupported_topic');

    const unknownStore = await post('products/create', shopifyProduct(), { store: 'no-such-store-here' });
    expect(unknownStore.status).toBe(404);
    expect(unknownStore.body.error.code).toBe('unknown_store');

    // a body above the limit is refused on its declared length, before it is read: send the headers and
    // a first chunk only (a client writing all 6 MiB may see the refused connection close under it: EPIPE)
    const huge = await declaredLengthPost(`${stack().httpUrl}/webhooks/shopify/${storeId}`, 6 * 1024 * 1024, {
      'content-type': 'application/json',
      'x-shopify-topic': 'products/create',
      'x-shopify-hmac-sha256': signWebhook('{}', secret),
    });
    expect(huge.status).toBe(413);
    expect(JSON.parse(huge.body).error.code).toBe('payload_too_large');

    const mismatch = await fetch(`${stack().httpUrl}/webhooks/shopify/${storeId}/products/create`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-shopify-topic': 'products/delete',
        'x-shopify-hmac-sha256': signWebhook('{"id":1}', secret),
      },
      body: '{"id":1}',
    });
    expect(mismatch.status).toBe(422);
    const platform = await fetch(`${stack().httpUrl}/webhooks/bigcommerce/${storeId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(platform.status).toBe(404);
  });
});
