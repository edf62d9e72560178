// Metaobject webhooks against the running stack: signed metaobjects/create|update|delete payloads in,
// catalog.metaobjects.v1 records out, the catalog_metaobjects projection (run by the app's streams
// module) read back through the analysts' SQL endpoint.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signWebhook } from '../../services/catalog/webhooks.ts';
import { catalogReady } from '../catalog/ready.ts';
import { stack, sql as stackSql } from '../helpers/stack.ts';
import { closeTestStoreWriter, createTestStore } from '../helpers/stores.ts';

let storeId: string;
let secret: string;

beforeAll(async () => {
  ({ storeId } = await createTestStore({ name: 'catalog metaobjects' }));
  await catalogReady();
  secret = readFileSync(path.join(stack().dataDir, 'catalog-webhook.secret'), 'utf8').trim();
});
afterAll(async () => {
  await closeTestStoreWriter();
});

let seq = 0;
async function post(topic: string, payload: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = JSON.stringify(payload);
  const res = await fetch(`${stack().httpUrl}/webhooks/shopify/${storeId}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-shopify-topic': topic,
      'x-shopify-webhook-id': `mo-${process.pid}-${++seq}`,
      'x-shopify-hmac-sha256': signWebhook(body, secret),
    },
    body,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const current = () =>
  stackSql<{ id: string; handle: string; display_name: string; swatch: string }>(
    'SELECT toString(metaobject_id) AS id, handle, display_name, swatch FROM catalog_metaobjects_current WHERE store_id = {store:String} ORDER BY metaobject_id',
    { store: storeId },
  );

describe('metaobject webhooks', () => {
  it('create and update project the metaobject with its swatch; delete removes it', async () => {
    const red = {
      id: 'gid://shopify/Metaobject/880001',
      type: 'shopify--color-pattern',
      handle: 'red',
      display_name: 'Red',
      updated_at: '2024-05-01T00:00:00Z',
      fields: { label: 'Red', color: '#C0392B' },
    };
    expect(await post('metaobjects/create', red)).toMatchObject({ status: 200, body: { records: 1 } });
    await expect
      .poll(current, { timeout: 20_000, interval: 200 })
      .toEqual([
        { id: '880001', handle: 'red', display_name: 'Red', swatch: expect.stringContaining('"colors":["#c0392b"]') },
      ]);

    const update = await post('metaobjects/update', {
      ...red,
      display_name: 'Crimson',
      updated_at: '2024-05-02T00:00:00Z',
      fields: { label: 'Crimson', image: 'https://cdn.example.com/crimson.png' },
    });
    expect(update.status).toBe(200);
    await expect
      .poll(async () => (await current()).map((r) => [r.display_name, JSON.parse(r.swatch).type]), { timeout: 20_000 })
      .toEqual([['Crimson', 'image']]);

    expect(await post('metaobjects/delete', { id: red.id, type: red.type, handle: red.handle })).toMatchObject({
      status: 200,
    });
    await expect.poll(current, { timeout: 20_000, interval: 200 }).toEqual([]);
  });
});
