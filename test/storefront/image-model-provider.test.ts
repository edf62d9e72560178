// A learned image model selected by configuration (IMAGE_FEATURES=http, IMAGE_MODEL_URL, IMAGE_MODEL):
// a real embedding service in this file (node:http; its embedding is the image's 16 × 16 thumbnail,
// mean-subtracted: deterministic, and robust to re-encoding and a small crop) implementing the contract of
// services/common/image-features.ts (`httpImageProvider`). The images_products processor, reading the
// configuration from the environment as the app's processors' thread does, describes the catalog through
// it; the read API's discovery services, built from the same configuration, describe the query image with
// it and keep only its features. A failing service gives 503 + Retry-After (never a 500) to a shopper and
// per-image statuses to the processor; rows and uploads of another model are never compared.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { normalizeProduct } from '../../services/catalog/normalize.ts';
import { ConfigError, loadConfig } from '../../services/common/config.ts';
import { imageFeatureProvider, LOCAL_MODEL, localProvider } from '../../services/common/image-features.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { parseImageName, renderImage } from '../../services/demo/generator/images.ts';
import type { ImageIndex } from '../../services/storefront/images/index.ts';
import { createDiscoveryServices } from '../../services/storefront/images/services.ts';
import { STOREFRONT_PREFIX } from '../../services/storefront/plugin.ts';
import { catalogProductsProcessor } from '../../streams/catalog/products.ts';
import { ImageDescriber } from '../../streams/images/fetch.ts';
import { imagesProductsProcessor, setImageDescriber } from '../../streams/images/processor.ts';
import type { Decoded, ProcessContext } from '../../streams/runtime/types.ts';
import { privateDb } from '../helpers/chdb.ts';
import { type DiscoveryHost, startDiscoveryHost } from './discovery-host.ts';
import { type RedisServer, startRedis } from './harness.ts';

const MODEL = 'test-thumbnail-v1';
const NOW = '2026-01-01T00:00:00.000Z';
const logger = createLogger('image-model-test', 'silent');

let redis: RedisServer;
let db: Db;
let h: DiscoveryHost;
let index: ImageIndex;
let closeDiscovery: () => void;
let images: Server;
let model: Server;
let imageBase: string;
let modelUrl: string;
let offset = 0n;
const savedEnv: Record<string, string | undefined> = {};

/** what the model service does with the next requests */
let mode: 'ok' | 'error' | 'slow' | 'other_model' | 'not_json' | 'refuse' = 'ok';
const received: { contentType: string; model: string; bytes: number }[] = [];

/** the embedding: a 16 × 16 RGB thumbnail (768 numbers), minus its mean */
async function embed(bytes: Buffer): Promise<number[]> {
  const px = await sharp(bytes)
    .flatten({ background: '#ffffff' })
    .resize(16, 16, { fit: 'fill' })
    .removeAlpha()
    .raw()
    .toBuffer();
  const mean = px.reduce((a, b) => a + b, 0) / px.length;
  return Array.from(px, (v) => (v - mean) / 255);
}

async function body(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function json(res: ServerResponse, status: number, value: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/** the products: 1, 2, 3 and 11 share dress-navy-1 (11 among others); the rest look different */
const LOOKALIKES = ['1', '2', '3', '11'];
const PRODUCTS: [number, string, string[]][] = [
  [1, 'dress', ['dress-navy-1.png']],
  [2, 'dress', ['dress-navy-1.png']],
  [3, 'dress', ['dress-navy-1.png']],
  [4, 'dress', ['dress-black-0.png']],
  [6, 'skirt', ['skirt-olive-2.png']],
  [7, 'tshirt', ['tshirt-red-1.png']],
  [8, 'mug', ['mug-red-0.png']],
  [9, 'bag', ['bag-green-1.png']],
  [10, 'vase', ['vase-olive-2.png']],
  [11, 'hat', ['hat-red-0.png', 'dress-navy-1.png']],
];

function productInput(id: number, type: string, imageNames: string[]) {
  return {
    id,
    title: `Product ${id} ${type}`,
    handle: `p-${id}`,
    body_html: `<p>${type}</p>`,
    vendor: 'Vendor',
    product_type: type,
    tags: '',
    status: 'active',
    created_at: NOW,
    updated_at: NOW,
    published_at: NOW,
    options: [{ name: 'Title', position: 1, values: ['Default'] }],
    variants: [
      { id: id * 10, price: `${10 + id}.00`, option1: 'Default', position: 1, inventory_quantity: 5, sku: `S${id}` },
    ],
    images: imageNames.map((n, i) => ({ id: id * 100 + i, src: `${imageBase}/${n}`, position: i + 1 })),
  };
}

function ctx(): ProcessContext {
  return {
    db,
    redis: createRedis(redis.url, { connectionName: 'image-model-test-proc' }),
    logger,
    table: (n) => n,
    stateKey: (...p) => p.join(':'),
    replay: false,
    slice: () => undefined,
  };
}

/** products through the products projection and the images processor, as the runtime runs them */
async function deliver(list: [number, string, string[]][]): Promise<Record<string, any>[]> {
  const records = list.map(([id, type, names]) => {
    const n = normalizeProduct(h.storeId, productInput(id, type, names), { source: 'import', now: NOW });
    if (!n.ok) throw new Error(JSON.stringify(n.issues));
    return n.value.product;
  });
  const batch = (p: typeof catalogProductsProcessor | typeof imagesProductsProcessor): Decoded<never>[] =>
    records.map((record) => {
      const parsed = p.parse(record);
      if (!parsed.ok) throw new Error(parsed.reason);
      return {
        value: parsed.value as never,
        position: { topic: 'products', partition: 0, offset: offset++ },
        brokerTime: Date.now(),
      };
    });
  const projected = await catalogProductsProcessor.process(batch(catalogProductsProcessor), {} as never);
  for (const w of projected.writes) await db.insert(w.table, w.rows);
  const c = ctx();
  const described = await imagesProductsProcessor.process(batch(imagesProductsProcessor), c);
  for (const w of described.writes) await db.insert(w.table, w.rows);
  await described.afterWrite?.();
  c.redis.disconnect();
  return described.writes[0].rows as Record<string, any>[];
}

/** a shopper's photo of a catalog image: cropped, resized, JPEG */
const photo = async (name: string) =>
  sharp(await renderImage(parseImageName(name)!))
    .extract({ left: 16, top: 10, width: 480, height: 490 })
    .resize(300, 300)
    .jpeg({ quality: 72 })
    .toBuffer();

async function post(path: string, payload: unknown) {
  const res = await h.app.inject({
    method: 'POST',
    url: `${STOREFRONT_PREFIX}${path}`,
    headers: { 'x-storefront-access-token': h.token, 'content-type': 'application/json' },
    payload: payload as never,
  });
  return { status: res.statusCode, body: res.json() as Record<string, any>, headers: res.headers };
}

async function upload(bytes: Buffer) {
  const boundary = '----image-model-test';
  const payload = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
    ),
    bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const res = await h.app.inject({
    method: 'POST',
    url: `${STOREFRONT_PREFIX}/images/upload`,
    headers: { 'x-storefront-access-token': h.token, 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload,
  });
  return { status: res.statusCode, body: res.json() as Record<string, any>, headers: res.headers };
}

const ids = (r: { body: Record<string, any> }) => (r.body.results ?? []).map((p: { id: number }) => String(p.id));

beforeAll(async () => {
  redis = await startRedis();
  db = await privateDb(`image_model_${process.pid}`);
  await migrate(db);
  images = createServer((req, res) => {
    const spec = parseImageName((req.url ?? '').slice(1));
    if (!spec) {
      res.writeHead(404);
      return res.end();
    }
    void renderImage(spec).then((png) => res.end(png));
  });
  model = createServer((req, res) => {
    void body(req).then(async (bytes) => {
      if (req.method !== 'POST' || req.url !== '/embed') return json(res, 404, { error: 'not found' });
      received.push({
        contentType: String(req.headers['content-type']),
        model: String(req.headers['x-image-model']),
        bytes: bytes.length,
      });
      if (mode === 'slow') return; // never answers
      if (mode === 'error') return json(res, 500, { error: 'model crashed' });
      if (mode === 'not_json') return res.end('<html>gateway</html>');
      if (mode === 'refuse') return json(res, 422, { error: 'cannot read this image' });
      json(res, 200, { model: mode === 'other_model' ? 'another-model' : MODEL, embedding: await embed(bytes) });
    });
  });
  for (const s of [images, model]) await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  imageBase = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
  modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/embed`;

  // the configuration, in the environment the app's configuration and its processors' thread read
  const env = {
    IMAGE_FEATURES: 'http',
    IMAGE_MODEL_URL: modelUrl,
    IMAGE_MODEL: MODEL,
    IMAGE_MODEL_TIMEOUT_MS: '1500',
  };
  for (const [k, v] of Object.entries(env)) {
    savedEnv[k] = process.env[k];
    process.env[k] = v;
  }
  setImageDescriber(null); // the processor builds its describer from the configuration
  const config = loadConfig(process.env);
  const subscriber = createRedis(redis.url, { connectionName: 'image-model-test-sub' });
  const discovery = await createDiscoveryServices({
    db,
    redis: createRedis(redis.url, { connectionName: 'image-model-test-uploads' }),
    subscriber,
    logger,
    model: config,
  });
  index = discovery.imageIndex;
  closeDiscovery = () => {
    discovery.close();
    subscriber.disconnect();
  };
  h = await startDiscoveryHost(redis.url, db, () => discovery);
}, 120_000);

afterAll(async () => {
  setImageDescriber(null);
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  closeDiscovery?.();
  await h?.close();
  for (const s of [images, model]) {
    s?.closeAllConnections();
    s?.close();
  }
  await db?.close();
  await redis?.stop();
});

describe('image model configuration', () => {
  it('IMAGE_FEATURES=http needs IMAGE_MODEL_URL and IMAGE_MODEL; the default is the local model', () => {
    let err: unknown;
    try {
      loadConfig({ IMAGE_FEATURES: 'http' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues.map((i) => i.variable).sort()).toEqual(['IMAGE_MODEL', 'IMAGE_MODEL_URL']);
    expect(() => loadConfig({ IMAGE_FEATURES: 'clip' })).toThrow(/IMAGE_FEATURES/);
    expect(() => loadConfig({ IMAGE_FEATURES: 'http', IMAGE_MODEL_URL: modelUrl, IMAGE_MODEL: LOCAL_MODEL })).toThrow(
      /IMAGE_MODEL: local-v1 is the built-in model/,
    );
    expect(imageFeatureProvider(loadConfig({})).model).toBe(LOCAL_MODEL);
    expect(imageFeatureProvider(loadConfig(process.env)).model).toBe(MODEL);
  });
});

describe('a learned model behind HTTP', () => {
  it('the processor describes product images through the model service; each row names the model', async () => {
    received.length = 0;
    const rows = await deliver(PRODUCTS);
    const one = rows.find((r) => r.item_id === '1')!;
    expect(one).toMatchObject({ model: MODEL, image_status: ['ok'], image_hashes: [''] });
    // the embedding's 768 numbers, stored L2-normalized
    expect(one.image_vectors[0]).toHaveLength(768);
    const norm = Math.sqrt(one.image_vectors[0].reduce((a: number, v: number) => a + v * v, 0));
    expect(norm).toBeCloseTo(1, 4);
    expect(rows.find((r) => r.item_id === '11')!.image_status).toEqual(['ok', 'ok']);
    expect(rows.every((r) => r.model === MODEL)).toBe(true);
    // one request per distinct image, the image's own bytes and type, the expected model named
    expect(received).toHaveLength(new Set(PRODUCTS.flatMap((p) => p[2])).size);
    expect(received.every((r) => r.contentType === 'image/png' && r.model === MODEL && r.bytes > 0)).toBe(true);
  });

  it('image search describes the query through the same model and finds the planted look-alikes first', async () => {
    const q = (await photo('dress-navy-1.png')).toString('base64');
    await vi.waitFor(
      async () => {
        const r = await post('/search/image', { image_data: q, pagination: { limit: 6 } });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(new Set(ids(r).slice(0, LOOKALIKES.length))).toEqual(new Set(LOOKALIKES));
        expect(r.body._meta.model).toBe(MODEL);
        expect(r.body.totalResults).toBe(PRODUCTS.length);
      },
      { timeout: 15_000, interval: 200 },
    );
    const up = await upload(await photo('bag-green-1.png'));
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    const byId = await post('/search/image', { image_id: up.body.imageId, pagination: { limit: 3 } });
    expect(byId.status).toBe(200);
    expect(ids(byId)[0]).toBe('9');
    expect(byId.body._meta.model).toBe(MODEL);
  });

  it('features of another model are never compared: such rows and uploads are ignored until recomputed', async () => {
    // product 10 now shows dress-navy-1, described by the local model (as before a model change)
    setImageDescriber(new ImageDescriber(localProvider));
    try {
      const [row] = await deliver([[10, 'vase', ['dress-navy-1.png']]]);
      expect(row).toMatchObject({ model: LOCAL_MODEL, image_status: ['ok'] });
    } finally {
      setImageDescriber(null);
    }
    await vi.waitFor(async () => expect((await index.get(h.storeId)).otherModelItems.product.has('10')).toBe(true), {
      timeout: 10_000,
    });
    // the index keeps no features of another model (not only none of another length)
    expect((await index.get(h.storeId)).featuresOf('product', '10')).toEqual([]);
    const q = (await photo('dress-navy-1.png')).toString('base64');
    const r = await post('/search/image', { image_data: q, pagination: { limit: 20 } });
    expect(r.status).toBe(200);
    expect(ids(r)).not.toContain('10');
    expect(r.body.totalResults).toBe(PRODUCTS.length - 1);

    // an upload kept from before the model change: unknown to the new model (404), not compared
    const imageId = '0b7c4c9e-8f5a-4d3e-9a55-2f7f6a1d2c11';
    await h.redis.set(
      `sf:img:${h.storeId}:${imageId}`,
      JSON.stringify({ model: LOCAL_MODEL, vector: Array(192).fill(0.01), hash: '0123456789abcdef' }),
      'EX',
      600,
    );
    const old = await post('/search/image', { image_id: imageId });
    expect(old.status).toBe(404);
    expect(old.body.error).toMatchObject({ code: 'not_found', fields: [{ path: 'image_id' }] });
    expect(old.body.error.message).toMatch(/another image model; upload it again/);

    // recomputed by the product's next change (or a replay): found again, through the configured model
    const [again] = await deliver([[10, 'vase', ['dress-navy-1.png']]]);
    expect(again.model).toBe(MODEL);
    await vi.waitFor(
      async () => {
        const s = await post('/search/image', { image_data: q, pagination: { limit: 5 } });
        expect(ids(s).slice(0, 5).sort()).toEqual([...LOOKALIKES, '10'].sort());
      },
      { timeout: 10_000, interval: 200 },
    );
    expect((await index.get(h.storeId)).otherModelItems.product.has('10')).toBe(false);
  });

  it('a failing model service: 503 with Retry-After to a shopper (never a 500), 422 when it refuses the image', async () => {
    const q = (await photo('dress-navy-1.png')).toString('base64');
    const cases: [typeof mode, RegExp][] = [
      ['error', /answered 500/],
      ['slow', /did not answer within 1500 ms/],
      ['other_model', /answered for model "another-model"; configured: "test-thumbnail-v1"/],
      ['not_json', /other than JSON/],
    ];
    try {
      for (const [m, message] of cases) {
        mode = m;
        for (const r of [await post('/search/image', { image_data: q }), await upload(await photo('mug-red-0.png'))]) {
          expect(r.status, `${m}: ${JSON.stringify(r.body)}`).toBe(503);
          expect(r.body.error.code).toBe('unavailable');
          expect(r.body.error.fields[0].message).toMatch(message);
          expect(r.headers['retry-after']).toBe('5');
        }
      }
      mode = 'refuse';
      const refused = await post('/search/image', { image_data: q });
      expect(refused.status).toBe(422);
      expect(refused.body.error.fields[0]).toMatchObject({ path: 'image_data' });
      expect(refused.body.error.fields[0].message).toMatch(/the image model refused the image \(422/);
    } finally {
      mode = 'ok';
    }
    // not an image: refused before the service is asked
    received.length = 0;
    const text = await post('/search/image', { image_data: Buffer.from('not an image').toString('base64') });
    expect(text.status).toBe(422);
    expect(received).toHaveLength(0);
    // the app answers as before once the service is back
    const ok = await post('/search/image', { image_data: q, pagination: { limit: 5 } });
    expect(ok.status).toBe(200);
    expect(ids(ok).slice(0, 5).sort()).toEqual([...LOOKALIKES, '10'].sort());
  });

  it('an unreachable or failing model service: the processor writes model_* statuses, not cached', async () => {
    // the service's address with nothing listening (connection refused)
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
    const deadUrl = `http://127.0.0.1:${(dead.address() as AddressInfo).port}/embed`;
    await new Promise((r) => dead.close(r));
    const unreachable = imageFeatureProvider({ IMAGE_FEATURES: 'http', IMAGE_MODEL_URL: deadUrl, IMAGE_MODEL: MODEL });
    await expect(unreachable.extract(await photo('mug-red-0.png'))).rejects.toMatchObject({
      name: 'ImageModelError',
      reason: 'unavailable',
    });

    // the processor while the service fails: every image gets a status saying so; after 5 failures in a
    // row the model is not asked again in this chunk (model_skipped), so the chunk does not wait on it
    const q = (await photo('dress-navy-1.png')).toString('base64');
    const types = ['dress', 'shirt', 'tshirt', 'sweater', 'jacket', 'jeans', 'trousers', 'skirt', 'shorts', 'sneakers'];
    const list = types.map((t, i): [number, string, string[]] => [30 + i, t, [`${t}-yellow-3.png`]]);
    mode = 'error';
    received.length = 0;
    let down: Record<string, any>[];
    let requests: number;
    try {
      down = await deliver(list);
      requests = received.length;
      // a request still gets a clear 503, the same process keeps serving
      expect((await post('/search/image', { image_data: q })).status).toBe(503);
    } finally {
      mode = 'ok';
    }
    const statuses = down.map((r) => r.image_status[0]);
    const asked = statuses.filter((x) => x === 'model_unavailable').length;
    // 4 images are described at once: at most 3 more were under way when the 5th failure came back
    expect(asked).toBeGreaterThanOrEqual(5);
    expect(asked).toBeLessThanOrEqual(8);
    expect(requests).toBe(asked);
    expect(statuses.filter((x) => x === 'model_skipped')).toHaveLength(list.length - asked);
    expect(down.every((r) => r.model === MODEL && r.image_vectors[0].length === 0)).toBe(true);

    // back up: the same images are described (failures were not cached) and reach the index
    const up = await deliver(list);
    expect(up.map((r) => r.image_status[0])).toEqual(Array(list.length).fill('ok'));
    await vi.waitFor(
      async () => {
        const f = (await index.get(h.storeId)).featuresOf('product', '33');
        expect(f.map((x) => [x.model, x.vector.length])).toEqual([[MODEL, 768]]);
      },
      { timeout: 10_000, interval: 200 },
    );
    expect((await post('/search/image', { image_data: q })).status).toBe(200);
  });
});
