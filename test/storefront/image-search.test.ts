// Image search end to end on one machine: products projected by the catalog products processor into
// chDB; the images_products processor fetching their images over HTTP from a local server (the demo
// store's rendered images, plus a missing, a slow, a non-image and an oversized one) and writing
// image_features; the image index loading them and following agg:images; POST /images/upload and
// POST /search/image through the storefront frame. Planted look-alikes (products sharing an image, or
// holding it among others) come first for a shopper's re-encoded, cropped copy of that image.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { imageStatusCounts } from '../../clickhouse/queries/images.ts';
import { catalogKey } from '../../schemas/catalog.ts';
import { IMAGE_MAX_BYTES } from '../../schemas/images.ts';
import { normalizeProduct } from '../../services/catalog/normalize.ts';
import { imageFeatureProvider } from '../../services/common/image-features.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { parseImageName, renderImage } from '../../services/demo/generator/images.ts';
import { ContentIndex } from '../../services/storefront/content/index.ts';
import { ImageIndex } from '../../services/storefront/images/index.ts';
import { redisUploads } from '../../services/storefront/images/uploads.ts';
import { STOREFRONT_PREFIX } from '../../services/storefront/plugin.ts';
import { catalogProductsProcessor } from '../../streams/catalog/products.ts';
import { ImageDescriber } from '../../streams/images/fetch.ts';
import { imagesProductsProcessor, setImageDescriber } from '../../streams/images/processor.ts';
import type { Decoded, ProcessContext } from '../../streams/runtime/types.ts';
import { privateDb } from '../helpers/chdb.ts';
import { type DiscoveryHost, startDiscoveryHost } from './discovery-host.ts';
import { type RedisServer, startHarness, startRedis } from './harness.ts';

let redis: RedisServer;
let db: Db;
let h: DiscoveryHost;
let images: ImageIndex;
let server: Server;
let base: string;
let offset = 0n;
const logger = createLogger('image-test', 'silent');
const provider = imageFeatureProvider();
const NOW = '2026-01-01T00:00:00.000Z';

/** planted: the look-alikes of dress-navy-1 (their only image, or one of theirs) */
const LOOKALIKES = ['1', '2', '3', '11'];

function productInput(id: number, type: string, imageNames: string[]) {
  return {
    id,
    title: `Product ${id} ${type}`,
    handle: `p-${id}`,
    body_html: `<p>${type}</p>`,
    vendor: id % 2 ? 'Odd' : 'Even',
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
    images: imageNames.map((n, i) => ({
      id: id * 100 + i,
      src: `${base}/${n}`,
      position: i + 1,
      width: 512,
      height: 512,
    })),
  };
}

const PRODUCTS: [number, string, string[]][] = [
  [1, 'dress', ['dress-navy-1.png']],
  [2, 'dress', ['dress-navy-1.png']],
  [3, 'dress', ['dress-navy-1.png']],
  [4, 'dress', ['dress-navy-0.png']],
  [5, 'dress', ['dress-navy-2.png']],
  [6, 'dress', ['dress-black-1.png']],
  [7, 'skirt', ['skirt-navy-1.png']],
  [8, 'tshirt', ['tshirt-navy-1.png']],
  [9, 'mug', ['mug-red-0.png']],
  [10, 'bag', ['bag-navy-1.png']],
  [11, 'hat', ['hat-red-0.png', 'dress-navy-1.png']],
  [12, 'dress', ['missing.png']],
  [13, 'dress', ['slow.png']],
  [14, 'dress', ['text.png']],
  [15, 'dress', ['huge.png']],
];

function ctx(): ProcessContext {
  const r = createRedis(redis.url, { connectionName: 'image-test-proc' });
  return {
    db,
    redis: r,
    logger,
    table: (n) => n,
    stateKey: (...p) => p.join(':'),
    replay: false,
    slice: () => undefined,
  };
}

/** products through the products projection and the image processor, as the runtime would run them */
async function deliver(store: string, list: [number, string, string[]][]) {
  const decoded = list.map(([id, type, names]) => {
    const n = normalizeProduct(store, productInput(id, type, names), { source: 'import', now: NOW });
    if (!n.ok) throw new Error(JSON.stringify(n.issues));
    return n.value.product;
  });
  const batch = (p: typeof catalogProductsProcessor | typeof imagesProductsProcessor): Decoded<never>[] =>
    decoded.map((record) => {
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
  const started = Date.now();
  const described = await imagesProductsProcessor.process(batch(imagesProductsProcessor), c);
  const ms = Date.now() - started;
  for (const w of described.writes) await db.insert(w.table, w.rows);
  await described.afterWrite?.();
  c.redis.disconnect();
  return { rows: described.writes[0].rows as Record<string, any>[], ms };
}

let firstChunk: { rows: Record<string, any>[]; ms: number };

beforeAll(async () => {
  redis = await startRedis();
  db = await privateDb(`image_search_${process.pid}`);
  await migrate(db);
  server = createServer((req, res) => {
    const name = (req.url ?? '').slice(1);
    if (name === 'slow.png') return; // never answers: the fetch times out
    if (name === 'text.png') return res.end('this is not an image');
    if (name === 'huge.png') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(IMAGE_MAX_BYTES + 10) });
      return res.end();
    }
    const spec = parseImageName(name);
    if (!spec) {
      res.writeHead(404);
      return res.end();
    }
    void renderImage(spec).then((png) => res.end(png));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  setImageDescriber(new ImageDescriber(provider, { timeoutMs: 3_000, hostFailures: 100 }));
  const subscriber = createRedis(redis.url, { connectionName: 'image-test-sub' });
  h = await startDiscoveryHost(redis.url, db, () => {
    images = new ImageIndex({ db, subscriber, logger });
    return {
      content: new ContentIndex({ db, logger }),
      images,
      uploads: redisUploads(createRedis(redis.url, { connectionName: 'image-test-uploads' })),
      provider,
    };
  });
  await images.start();
  firstChunk = await deliver(h.storeId, PRODUCTS);
}, 120_000);

afterAll(async () => {
  setImageDescriber(null);
  await h?.close();
  server?.closeAllConnections();
  server?.close();
  await db?.close();
  await redis?.stop();
});

const photo = async (name: string) =>
  sharp(await renderImage(parseImageName(name)!))
    .extract({ left: 16, top: 10, width: 480, height: 490 })
    .resize(300, 300)
    .jpeg({ quality: 72 })
    .toBuffer();

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await h.app.inject({
    method: 'POST',
    url: `${STOREFRONT_PREFIX}${path}`,
    headers: { 'x-storefront-access-token': h.token, 'content-type': 'application/json', ...headers },
    payload: body as never,
  });
  return { status: res.statusCode, body: res.json() as Record<string, any>, headers: res.headers };
}

function multipart(field: string, filename: string, bytes: Buffer, type = 'image/jpeg') {
  const boundary = '----discovery-test-boundary';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return { payload: Buffer.concat([head, bytes, tail]), contentType: `multipart/form-data; boundary=${boundary}` };
}

async function upload(bytes: Buffer, field = 'image', type = 'image/jpeg') {
  const m = multipart(field, 'photo.jpg', bytes, type);
  const res = await h.app.inject({
    method: 'POST',
    url: `${STOREFRONT_PREFIX}/images/upload`,
    headers: { 'x-storefront-access-token': h.token, 'content-type': m.contentType },
    payload: m.payload,
  });
  return { status: res.statusCode, body: res.json() as Record<string, any> };
}

describe('image processor', () => {
  it('writes the features of every product image, and why not for the ones it could not describe', async () => {
    const byId = new Map(firstChunk.rows.map((r) => [r.item_id, r]));
    expect(byId.get('1')).toMatchObject({
      item_type: 'product',
      model: 'local-v1',
      image_status: ['ok'],
      is_deleted: 0,
    });
    expect(byId.get('1')?.image_vectors[0]).toHaveLength(192);
    expect(byId.get('11')?.image_status).toEqual(['ok', 'ok']);
    expect(byId.get('12')?.image_status).toEqual(['http_404']);
    expect(byId.get('13')?.image_status).toEqual(['timeout']);
    expect(byId.get('14')?.image_status).toEqual(['unsupported_format']);
    expect(byId.get('15')?.image_status).toEqual(['too_large']);
    expect(byId.get('13')?.image_vectors).toEqual([[]]);
    // the slow image cost one timeout, not the chunk
    expect(firstChunk.ms).toBeLessThan(10_000);
    const counts = await imageStatusCounts(db, h.storeId);
    expect(counts).toEqual({ ok: 12, http_404: 1, timeout: 1, unsupported_format: 1, too_large: 1 });
  });
});

describe('POST /search/image', () => {
  it('returns the planted look-alikes first for a shopper’s copy of their image (image_data)', async () => {
    const q = (await photo('dress-navy-1.png')).toString('base64');
    const r = await post('/search/image', { image_data: q, pagination: { limit: 8 } });
    expect(r.status).toBe(200);
    const ids = r.body.results.map((p: { id: number }) => String(p.id));
    expect(new Set(ids.slice(0, LOOKALIKES.length))).toEqual(new Set(LOOKALIKES));
    expect(r.body._meta.similarities[0]).toBeGreaterThan(r.body._meta.similarities[LOOKALIKES.length]);
    expect(r.body).toMatchObject({ page: 1, resultsPerPage: 8, _meta: { model: 'local-v1' } });
    // products without features (missing, slow, non-image, oversized images) are not candidates
    expect(r.body.totalResults).toBe(11);
    expect(r.body.attributionToken).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    const e = h.events.at(-1);
    expect(e).toMatchObject({ kind: 'image_search', total_results: 11, result_count: 8 });
    expect(e?.result_product_ids.slice(0, 4).sort()).toEqual([...LOOKALIKES].sort());
  });

  it('accepts a data URL, and applies filters, facets, attributes and pagination', async () => {
    const q = `data:image/jpeg;base64,${(await photo('dress-navy-1.png')).toString('base64')}`;
    const r = await post('/search/image', {
      image_data: q,
      filter_group: { conditional: 'AND', expressions: [{ property: 'vendor', operator: 'eq', values: ['Odd'] }] },
      facets: ['vendor', 'product_type'],
      retrieveFacetCount: true,
      attributes: ['id', 'title', 'vendor'],
      pagination: { page: 1, limit: 2 },
    });
    expect(r.status).toBe(200);
    expect(r.body.results.every((p: { vendor: string }) => p.vendor === 'Odd')).toBe(true);
    expect(Object.keys(r.body.results[0]).sort()).toEqual(['__typename', 'id', 'title', 'vendor']);
    expect(r.body.results.map((p: { id: number }) => String(p.id))).toEqual(['1', '3']);
    expect(r.body.facets.vendor).toEqual({ Odd: r.body.totalResults });
    expect(r.body.totalPages).toBe(Math.ceil(r.body.totalResults / 2));
  });

  it('finds by an uploaded image_id the same as by inline data', async () => {
    const bytes = await photo('dress-navy-1.png');
    const up = await upload(bytes);
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body).toEqual({ status: 'success', imageId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    const byId = await post('/search/image', { image_id: up.body.imageId });
    const byData = await post('/search/image', { image_data: bytes.toString('base64') });
    expect(byId.status).toBe(200);
    expect(byId.body.results.map((p: { id: number }) => p.id)).toEqual(
      byData.body.results.map((p: { id: number }) => p.id),
    );
    expect(byId.body._meta.imageId).toBe(up.body.imageId);
    // stored per store in Redis with a TTL (24 h)
    const ttl = await h.redis.ttl(`sf:img:${h.storeId}:${up.body.imageId}`);
    expect(ttl).toBeGreaterThan(86_000);
  });

  it('requires one of image_id and image_data (422 naming both), and refuses bad values', async () => {
    const none = await post('/search/image', { pagination: { limit: 2 } });
    expect(none.status).toBe(422);
    expect(none.body.error.fields.map((f: { path: string }) => f.path).sort()).toEqual(['image_data', 'image_id']);
    const badId = await post('/search/image', { image_id: 'not-a-uuid' });
    expect(badId.status).toBe(422);
    expect(badId.body.error.fields[0].path).toBe('image_id');
    const unknown = await post('/search/image', { image_id: '0b7c4c9e-8f5a-4d3e-9a55-2f7f6a1d2c11' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.fields[0].path).toBe('image_id');
    const notBase64 = await post('/search/image', { image_data: '***not base64***' });
    expect(notBase64.status).toBe(422);
    expect(notBase64.body.error.fields[0].path).toBe('image_data');
    const text = await post('/search/image', {
      image_data: Buffer.from('plain text, not an image').toString('base64'),
    });
    expect(text.status).toBe(422);
    expect(text.body.error.fields[0]).toMatchObject({ path: 'image_data' });
    expect(text.body.error.message).toMatch(/JPEG, PNG or WebP/);
    const png = await renderImage({ type: 'bag', color: 'red', pattern: 0 });
    const cut = await post('/search/image', { image_data: png.subarray(0, png.length / 2).toString('base64') });
    expect(cut.status).toBe(422);
    expect(cut.body.error.message).toMatch(/truncated/);
    const big = await post('/search/image', { image_data: Buffer.alloc(IMAGE_MAX_BYTES + 3, 1).toString('base64') });
    expect(big.status).toBe(413);
    expect(big.body.error.fields[0].path).toBe('image_data');
  });

  it('a deleted product (tombstone) leaves the image index', async () => {
    const q = (await photo('bag-navy-1.png')).toString('base64');
    const before = await post('/search/image', { image_data: q });
    expect(String(before.body.results[0].id)).toBe('10');
    const key = Buffer.from(catalogKey({ topic: 'products', store_id: h.storeId, product_id: '10' }));
    const parsed = imagesProductsProcessor.parseTombstone!(key);
    if (!parsed.ok) throw new Error(parsed.reason);
    const c = ctx();
    const r = await imagesProductsProcessor.process(
      [
        {
          value: parsed.value,
          position: { topic: 'products', partition: 0, offset: offset++ },
          brokerTime: Date.now(),
          tombstone: true,
        },
      ],
      c,
    );
    expect(r.writes[0].rows[0]).toMatchObject({ item_id: '10', is_deleted: 1, image_srcs: [] });
    for (const w of r.writes) await db.insert(w.table, w.rows);
    await r.afterWrite?.();
    c.redis.disconnect();
    await vi.waitFor(async () => expect((await images.get(h.storeId)).items.product.has('10')).toBe(false), {
      timeout: 10_000,
    });
  });

  it('a product whose image changes is found by its new look at once (agg:images)', async () => {
    const before = await post('/search/image', { image_data: (await photo('mug-red-0.png')).toString('base64') });
    expect(String(before.body.results[0].id)).toBe('9');
    await deliver(h.storeId, [[9, 'mug', ['boots-green-3.png']]]);
    const q = (await photo('boots-green-3.png')).toString('base64');
    await vi.waitFor(
      async () => {
        const r = await post('/search/image', { image_data: q });
        expect(String(r.body.results[0].id)).toBe('9');
      },
      { timeout: 10_000 },
    );
    expect(images.changesApplied).toBeGreaterThan(0);
  });
});

describe('POST /images/upload', () => {
  it('accepts JPEG, PNG and WebP', async () => {
    const png = await renderImage({ type: 'vase', color: 'olive', pattern: 2 });
    for (const [bytes, type] of [
      [png, 'image/png'],
      [await sharp(png).jpeg().toBuffer(), 'image/jpeg'],
      [await sharp(png).webp().toBuffer(), 'image/webp'],
    ] as const) {
      const r = await upload(bytes, 'image', type);
      expect(r.status, type).toBe(200);
      expect(r.body.status).toBe('success');
    }
  });

  it('refuses non-images, truncated images and a missing field with a 422 naming `image`', async () => {
    const text = await upload(Buffer.from('hello, not an image'), 'image', 'text/plain');
    expect(text.status).toBe(422);
    expect(text.body.error.fields[0].path).toBe('image');
    expect(text.body.error.message).toMatch(/JPEG, PNG or WebP/);
    const jpeg = await sharp(await renderImage({ type: 'vase', color: 'olive', pattern: 2 }))
      .jpeg()
      .toBuffer();
    const cut = await upload(jpeg.subarray(0, jpeg.length / 2));
    expect(cut.status).toBe(422);
    expect(cut.body.error.message).toMatch(/truncated/);
    expect(cut.body.error.fields[0].path).toBe('image');
    const wrongField = await upload(jpeg, 'file');
    expect(wrongField.status).toBe(422);
    expect(wrongField.body.error.fields[0]).toMatchObject({ path: 'image' });
  });

  it('refuses more than 15 MB with a 413 naming `image`', async () => {
    const r = await upload(Buffer.alloc(IMAGE_MAX_BYTES + 1024, 0xff));
    expect(r.status).toBe(413);
    expect(r.body.error).toMatchObject({ code: 'payload_too_large', fields: [{ path: 'image' }] });
  });

  it('refuses a body that is not multipart with a 415', async () => {
    const r = await post('/images/upload', { image: 'x' });
    expect(r.status).toBe(415);
    expect(r.body.error.code).toBe('unsupported_media_type');
  });

  it('needs the store token like every endpoint', async () => {
    const m = multipart('image', 'a.png', await renderImage({ type: 'vase', color: 'olive', pattern: 2 }));
    const res = await h.app.inject({
      method: 'POST',
      url: `${STOREFRONT_PREFIX}/images/upload`,
      headers: { 'content-type': m.contentType },
      payload: m.payload,
    });
    expect(res.statusCode).toBe(401);
  });
});

describe('OpenAPI document', () => {
  it('documents upload (multipart), image search and content search with their bodies and responses', async () => {
    const harness = await startHarness(redis.url);
    try {
      const r = await harness.app.inject({ method: 'GET', url: `${STOREFRONT_PREFIX}/openapi.json` });
      const doc = r.json();
      const up = doc.paths['/images/upload'].post;
      expect(up.requestBody.content['multipart/form-data'].schema).toEqual({
        $ref: '#/components/schemas/ImageUploadRequest',
      });
      expect(up.responses['200'].content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/ImageUploadResponse',
      });
      expect(up.responses['413']).toBeDefined();
      const img = doc.paths['/search/image'].post;
      expect(img.requestBody.content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/ImageSearchRequest',
      });
      expect(img.responses['200'].content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/ResultEnvelope',
      });
      expect(img.responses['404']).toBeDefined();
      const content = doc.paths['/search/content/{searchQuery}/execute'].post;
      expect(content.requestBody.content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/ContentSearchRequest',
      });
      expect(content.responses['200'].content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/ContentSearchResponse',
      });
      expect(Object.keys(doc.components.schemas)).toEqual(
        expect.arrayContaining(['ContentItem', 'ContentSearchTuning', 'ImageSearchRequest']),
      );
    } finally {
      await harness.close();
    }
  });
});

describe('image fetching', () => {
  it('skips the rest of a failing host’s images in a chunk, and does not cache the failures', async () => {
    // a port nobody listens on: every fetch fails at once
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const d = new ImageDescriber(provider, { timeoutMs: 1_000, concurrency: 1, hostFailures: 2 });
    const urls = [1, 2, 3, 4, 5].map((i) => `http://127.0.0.1:${port}/img-${i}.png`);
    const first = await d.describeAll(urls);
    expect(urls.map((u) => first.get(u)?.status)).toEqual([
      'network_error',
      'network_error',
      'host_skipped',
      'host_skipped',
      'host_skipped',
    ]);
    const again = await d.describeAll(urls.slice(2, 3));
    expect(again.get(urls[2])?.status).toBe('network_error');
    expect((await d.describe('ftp://example.com/a.png')).status).toBe('unsupported_url');
  });
});
