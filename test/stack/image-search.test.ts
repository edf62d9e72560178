// Image search on the running stack: a demo store whose product images are served over HTTP (rendered
// by the demo generator's renderer, from this process), loaded through the catalog topics; the app's
// images_products processor fetches and describes every image into image_features and announces them on
// agg:images; the read API answers POST /images/upload and POST /search/image from its image index.
// Quality floor on the planted look-alikes (products sharing a rendered image, generator/quality.ts):
// a shopper's re-encoded, cropped copy of the image finds them first.
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateDemoStore } from '../../services/demo/generator/generator.ts';
import {
  imageLookalikes,
  imageSearchQuality,
  lookalikeKey,
  mean,
  precisionAtK,
  visibleAt,
} from '../../services/demo/generator/quality.ts';
import { serveDemoImages, type DemoImageServer } from '../helpers/demo-images.ts';
import { type DemoStack, demoStack, testSeed } from '../helpers/demo-stack.ts';
import { sql } from '../helpers/stack.ts';

const PRODUCTS = 300;
/** the test floor of precision@k on the planted look-alikes (measured 1.0; see docs/storefront-api.md) */
const FLOOR = 0.9;

let d: DemoStack;
let images: DemoImageServer;

/** a shopper's copy of a demo image: cropped, resized, re-encoded as JPEG */
const photo = async (name: string) =>
  sharp(await images.render(name))
    .extract({ left: 14, top: 20, width: 484, height: 480 })
    .resize(360, 357)
    .jpeg({ quality: 75 })
    .toBuffer();

beforeAll(async () => {
  images = await serveDemoImages();
  const base = images.base;
  const demo = generateDemoStore({
    seed: testSeed('image-search'),
    products: PRODUCTS,
    sessions: 50,
    imageBaseUrl: base,
  });
  d = await demoStack({ name: 'image-search', products: PRODUCTS, demo });
  // every product's images described by the app's images_products processor
  await vi.waitFor(
    async () => {
      const [r] = await sql<{ n: string }>(
        'SELECT toString(count()) AS n FROM image_features FINAL WHERE store_id = {store:String} AND item_type = {t:String} AND is_deleted = 0',
        { store: d.storeId, t: 'product' },
      );
      expect(Number(r.n)).toBe(PRODUCTS);
    },
    { timeout: 180_000, interval: 500 },
  );
}, 300_000);

afterAll(async () => {
  await d?.close();
  images?.close();
});

async function searchByImage(bytes: Buffer, body: Record<string, unknown> = {}) {
  return d.post<Record<string, any>>('/search/image', { image_data: bytes.toString('base64'), ...body });
}

describe('image search on the stack', () => {
  it('describes every demo image (no failures)', async () => {
    const rows = await sql<{ status: string; n: string }>(
      'SELECT toString(s) AS status, toString(count()) AS n FROM image_features FINAL ARRAY JOIN image_status AS s WHERE store_id = {store:String} AND is_deleted = 0 GROUP BY s',
      { store: d.storeId },
    );
    expect(rows.map((r) => r.status)).toEqual(['ok']);
  });

  it(`returns the planted look-alikes first (precision@k ≥ ${FLOOR})`, async () => {
    const groups = imageLookalikes(d.demo.products());
    expect(groups.size).toBeGreaterThan(20);
    // the read API's index has every product once agg:images was applied
    await vi.waitFor(
      async () =>
        expect((await searchByImage(await photo([...groups.keys()][0]))).body.totalResults).toBeGreaterThan(200),
      {
        timeout: 30_000,
      },
    );
    const q = await imageSearchQuality(groups, async (name) => {
      const r = await searchByImage(await photo(name), { pagination: { limit: 10 }, attributes: ['id'] });
      expect(r.res.status).toBe(200);
      return r.body.results.map((p: { id: number }) => String(p.id));
    });
    if (process.env.PRINT_QUALITY) process.stdout.write(`image look-alike precision: ${q.precision}\n`);
    expect(q.queries).toBe(20);
    expect(q.precision, JSON.stringify(q.perQuery.filter((x) => x.precision < 1))).toBeGreaterThanOrEqual(FLOOR);
  });

  it('similar products rank look-alikes (products whose lead images render the same) first: precision@k ≥ 0.65', async () => {
    // planted look-alikes of a product's lead image, among the products a shopper can see (the generator
    // also makes drafts, unpublished and scheduled products, which similar products answers 404 for)
    const groups = new Map<string, string[]>();
    for (const p of d.demo.products()) {
      if (!visibleAt(p)) continue;
      const lead = p.images?.[0]?.src;
      if (!lead) continue;
      const key = lookalikeKey(lead.split('/').pop() ?? '');
      groups.set(key, [...(groups.get(key) ?? []), p.id]);
    }
    const picked = [...groups]
      .filter(([, members]) => members.length >= 2)
      .sort((a, b) => b[1].length - a[1].length || (a[0] < b[0] ? -1 : 1))
      .slice(0, 15);
    expect(picked.length).toBe(15);
    const score = async () => {
      const scores: number[] = [];
      for (const [, members] of picked) {
        const p = members[0];
        const others = new Set(members.filter((x) => x !== p));
        const r = await d.post<{ results: { id: number }[]; _meta: { similar: { image: boolean } } }>(
          `/search/product/${p}`,
          { pagination: { limit: 10 }, attributes: ['id'] },
        );
        expect(r.body._meta?.similar?.image, JSON.stringify(r.body).slice(0, 300)).toBe(true);
        scores.push(
          precisionAtK(
            r.body.results.map((x) => String(x.id)),
            others,
            Math.min(10, others.size),
          ),
        );
      }
      return mean(scores);
    };
    // measured 0.72 on a 1 200-product store (near misses differing only in pattern, colour or material rank close behind)
    await expect.poll(score, { timeout: 30_000, interval: 1_000 }).toBeGreaterThanOrEqual(0.65);
  });

  it('uploads a photo as multipart and searches by its image_id', async () => {
    // a look-alike group whose photo, sent inline, is answered led by a planted look-alike (the demo seed is
    // random, and a near miss may outrank a group's look-alikes: how often is the precision test's subject;
    // this one is about the upload path)
    const idsOf = (body: { results: { id: number }[] }) => body.results.map((p) => String(p.id));
    let chosen: { name: string; ids: string[]; inline: string[] } | undefined;
    for (const [name, ids] of imageLookalikes(d.demo.products())) {
      const inline = await searchByImage(await photo(name), { pagination: { limit: ids.length } });
      if (ids.includes(idsOf(inline.body as never)[0])) {
        chosen = { name, ids, inline: idsOf(inline.body as never) };
        break;
      }
    }
    if (!chosen) throw new Error('no look-alike group is led by one of its look-alikes when searched inline');
    const form = new FormData();
    form.append('image', new Blob([new Uint8Array(await photo(chosen.name))], { type: 'image/jpeg' }), 'photo.jpg');
    const res = await fetch(`${d.base}/images/upload`, {
      method: 'POST',
      headers: { 'x-storefront-access-token': d.token },
      body: form,
    });
    expect(res.status).toBe(200);
    const { imageId } = (await res.json()) as { imageId: string };
    const r = await d.post<Record<string, any>>('/search/image', {
      image_id: imageId,
      pagination: { limit: chosen.ids.length },
    });
    expect(r.res.status).toBe(200);
    // the uploaded image answers as the same photo sent inline does
    expect(idsOf(r.body as never)).toEqual(chosen.inline);
    // the request event of the search reaches requests_raw with its kind
    await vi.waitFor(
      async () => {
        const rows = await sql<{ n: string }>(
          "SELECT toString(count()) AS n FROM requests_raw WHERE store_id = {store:String} AND kind = 'image_search'",
          { store: d.storeId },
        );
        expect(Number(rows[0].n)).toBeGreaterThan(0);
      },
      { timeout: 30_000 },
    );
  });

  it('an oversized upload is refused with 413 and a non-image with 422', async () => {
    const big = new FormData();
    big.append('image', new Blob([new Uint8Array(15 * 1024 * 1024 + 1)], { type: 'image/jpeg' }), 'big.jpg');
    const r1 = await fetch(`${d.base}/images/upload`, {
      method: 'POST',
      headers: { 'x-storefront-access-token': d.token },
      body: big,
    });
    expect(r1.status).toBe(413);
    const text = new FormData();
    text.append('image', new Blob(['not an image'], { type: 'image/png' }), 'a.png');
    const r2 = await fetch(`${d.base}/images/upload`, {
      method: 'POST',
      headers: { 'x-storefront-access-token': d.token },
      body: text,
    });
    expect(r2.status).toBe(422);
    expect(((await r2.json()) as { error: { fields: { path: string }[] } }).error.fields[0].path).toBe('image');
  });
});
