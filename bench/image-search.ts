// Image search benchmark (issue #18, image search), on the demo store served by the single-node app
// (`npm start` with the demo store: the catalog through the catalog processors; the images_products
// processor fetches every product image from the app's /demo/images and writes image_features):
//
//  1. the processor: time until every product's image features are written, images described per second
//  2. quality: precision@k on the planted look-alikes (products sharing a rendered image; generator
//     quality.ts `imageLookalikes`), each searched with a shopper's copy (cropped, resized, JPEG)
//  3. HTTP (autocannon, 50 connections, BENCH_SECONDS each) next to a bare Fastify hello-world process in
//     the same run: POST /search/image by image_id (uploaded copies, rotating), by inline image_data, and
//     at 1 connection (one request's cost); POST /images/upload
//
// Printed (never asserted), and written to bench/out/latest.json under "imageSearch".
// Run: node bench/image-search.ts [products=10000]   (BENCH_SECONDS=8)
import type { ChildProcess } from 'node:child_process';

import sharp from 'sharp';
import { freePorts } from '../deploy/local/stack.ts';
import { parseImageName, renderImage } from '../services/demo/generator/images.ts';
import { imageLookalikes, imageSearchQuality } from '../services/demo/generator/quality.ts';
import { autocannon } from './cannon.ts';
import { startDemoApp } from './demo-app.ts';
import { helloWorld } from './hello-world-process.ts';
import { recordFigures } from './out.ts';

const N = Number(process.argv[2] ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const QUERIES = 40;

const fmt = (n: number, d = 2) => n.toFixed(d);
const line = (label: string, value: string) => process.stdout.write(`  ${label.padEnd(64)} ${value}\n`);

/** a shopper's copy of a demo image: cropped, resized, re-encoded as JPEG */
async function photo(name: string): Promise<Buffer> {
  const spec = parseImageName(name);
  if (!spec) throw new Error(`not a demo image: ${name}`);
  return sharp(await renderImage(spec))
    .extract({ left: 14, top: 20, width: 484, height: 480 })
    .resize(360, 357)
    .jpeg({ quality: 75 })
    .toBuffer();
}

process.stdout.write(`image search (demo store, ${N.toLocaleString('en-US')} products)\n`);
const t0 = Date.now();
const app = await startDemoApp({
  products: N,
  sessions: 50,
  env: { STOREFRONT_RATE_LIMIT_PER_SEC: '0', STOREFRONT_RATE_LIMIT_PER_IP_PER_SEC: '0' },
});
let hello: ChildProcess | undefined;
const figures: Record<string, unknown> = { products: N };
try {
  await app.waitFor(/demo: catalog loaded/, 3_600_000);
  const loadedAt = Date.now();
  line('catalog loaded', `${fmt((loadedAt - t0) / 1000, 1)} s`);
  const { store, storeId, token } = app.loaded();
  const sql = async (q: string) => {
    const r = await fetch(`http://127.0.0.1:${app.clickhouse}/?param_store=${storeId}`, {
      method: 'POST',
      body: `${q} FORMAT JSONEachRow`,
    });
    const text = await r.text();
    if (r.status !== 200) throw new Error(text);
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, string>);
  };

  // ── 1. the processor
  let rows = 0;
  for (;;) {
    const [r] = await sql(
      "SELECT toString(count()) AS n, toString(sum(length(image_srcs))) AS images FROM image_features FINAL WHERE store_id = {store:String} AND item_type = 'product' AND is_deleted = 0",
    );
    rows = Number(r.n);
    if (rows >= N) {
      const secs = (Date.now() - t0) / 1000;
      line(`image features of ${N} products written`, `${fmt(secs, 1)} s after start`);
      figures.featuresWrittenSeconds = secs;
      figures.images = Number(r.images);
      break;
    }
    if (Date.now() - t0 > 3_600_000) throw new Error(`only ${rows} of ${N} products described`);
    await new Promise((res) => setTimeout(res, 500));
  }
  const statuses = await sql(
    'SELECT toString(s) AS status, toString(count()) AS n FROM image_features FINAL ARRAY JOIN image_status AS s WHERE store_id = {store:String} AND is_deleted = 0 GROUP BY s',
  );
  line('image statuses', statuses.map((s) => `${s.status} ${s.n}`).join(', '));
  figures.statuses = Object.fromEntries(statuses.map((s) => [s.status, Number(s.n)]));

  const headers = {
    'x-storefront-access-token': token,
    'content-type': 'application/json',
    accept: 'application/json',
  };
  const searchBy = async (body: Record<string, unknown>) => {
    const r = await fetch(`${app.api}/search/image`, { method: 'POST', headers, body: JSON.stringify(body) });
    if (r.status !== 200) throw new Error(`search/image answered ${r.status}: ${await r.text()}`);
    return (await r.json()) as { results: { id: number }[]; totalResults: number };
  };

  // ── 2. quality
  const groups = imageLookalikes(store.products());
  const photos = new Map<string, Buffer>();
  const photoOf = async (name: string) => {
    let p = photos.get(name);
    if (!p) photos.set(name, (p = await photo(name)));
    return p;
  };
  // the read API's index has every product once agg:images was applied
  const first = [...groups.keys()][0];
  for (;;) {
    const r = await searchBy({ image_data: (await photoOf(first)).toString('base64'), pagination: { limit: 1 } });
    if (r.totalResults >= Math.min(250, N / 2)) break;
    await new Promise((res) => setTimeout(res, 250));
  }
  const q = await imageSearchQuality(
    groups,
    async (name) =>
      (
        await searchBy({
          image_data: (await photoOf(name)).toString('base64'),
          attributes: ['id'],
          pagination: { limit: 10 },
        })
      ).results.map((p) => String(p.id)),
    QUERIES,
  );
  line(
    `look-alikes first: precision@k over ${q.queries} planted groups (k = min(size, 10))`,
    `${fmt(q.precision, 3)} (groups of ${Math.min(...q.perQuery.map((x) => x.size))}-${Math.max(...q.perQuery.map((x) => x.size))})`,
  );
  figures.quality = { precision: q.precision, queries: q.queries, groups: groups.size };

  // ── 3. HTTP
  const names = [...groups.keys()].slice(0, 50);
  const ids: string[] = [];
  for (const name of names) {
    const form = new FormData();
    form.append('image', new Blob([new Uint8Array(await photoOf(name))], { type: 'image/jpeg' }), 'q.jpg');
    const r = await fetch(`${app.api}/images/upload`, {
      method: 'POST',
      headers: { 'x-storefront-access-token': token },
      body: form,
    });
    ids.push(((await r.json()) as { imageId: string }).imageId);
  }
  const [helloPort] = await freePorts(1);
  hello = await helloWorld(helloPort);
  const runs: Record<string, { rps: number; p50: number; p99: number; errors: number }> = {};
  const run = async (label: string, url: string, opts: Record<string, unknown>) => {
    const r = await autocannon({ url, duration: SECONDS, connections: 50, ...opts });
    runs[label] = { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.non2xx + r.errors };
    line(
      label,
      `${Math.round(r.requests.average).toLocaleString('en-US')} req/s  p50 ${r.latency.p50} ms  p99 ${r.latency.p99} ms${r.non2xx + r.errors ? `  (${r.non2xx + r.errors} errors)` : ''}`,
    );
  };
  await run('hello-world (baseline, same machine, same run)', `http://127.0.0.1:${helloPort}/`, {});
  let n = 0;
  const byId = {
    method: 'POST',
    headers,
    requests: [
      {
        setupRequest: (req: Record<string, unknown>) => ({
          ...req,
          path: '/api/storefront/v1/search/image',
          body: JSON.stringify({ image_id: ids[n++ % ids.length], pagination: { limit: 24 } }),
        }),
      },
    ],
  };
  const base = `http://127.0.0.1:${app.http}`;
  await run(`search/image by image_id (${ids.length} uploaded photos)`, base, byId);
  await run('search/image by image_id, 1 connection', base, { ...byId, connections: 1 });
  const inline = JSON.stringify({
    image_data: (await photoOf(names[0])).toString('base64'),
    pagination: { limit: 24 },
  });
  await run(
    `search/image by image_data (${Math.round(inline.length / 1024)} KiB JSON)`,
    `${base}/api/storefront/v1/search/image`,
    {
      method: 'POST',
      headers,
      body: inline,
    },
  );
  const form = new FormData();
  form.append('image', new Blob([new Uint8Array(await photoOf(names[0]))], { type: 'image/jpeg' }), 'q.jpg');
  const probe = new Request('http://x/', { method: 'POST', body: form });
  const uploadBody = Buffer.from(await probe.arrayBuffer());
  await run('images/upload (multipart JPEG)', `${base}/api/storefront/v1/images/upload`, {
    method: 'POST',
    headers: { 'x-storefront-access-token': token, 'content-type': probe.headers.get('content-type') as string },
    body: uploadBody,
  });
  figures.http = runs;

  recordFigures('imageSearch', { ...figures });
} finally {
  hello?.kill();
  line('stack output', await app.stop('sd-bench-image-search.log'));
}
