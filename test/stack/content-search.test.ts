// Content search on the running stack: the demo store's articles and pages loaded through the catalog
// content topic (catalog_content projection), their images described by the app's images_content
// processor (served over HTTP from this process), searched through POST /search/content/{q}/execute.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateDemoStore } from '../../services/demo/generator/generator.ts';
import { parseImageName, renderImage } from '../../services/demo/generator/images.ts';
import { PRODUCT_TYPES } from '../../services/demo/generator/vocab.ts';
import { type DemoStack, demoStack, testSeed } from '../helpers/demo-stack.ts';
import { sql } from '../helpers/stack.ts';

let d: DemoStack;
let server: Server;

beforeAll(async () => {
  server = createServer((req, res) => {
    const spec = parseImageName((req.url ?? '').split('/').pop() ?? '');
    if (!spec) {
      res.writeHead(404);
      return res.end();
    }
    void renderImage(spec).then((png) => res.end(png));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const demo = generateDemoStore({
    seed: testSeed('content-search'),
    products: 200,
    sessions: 50,
    imageBaseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/img`,
  });
  d = await demoStack({ name: 'content-search', products: 200, demo });
  const count = async (query: string) => Number((await sql<{ n: string }>(query, { store: d.storeId }))[0]?.n ?? 0);
  await vi.waitFor(
    async () => {
      expect(
        await count(
          'SELECT toString(count()) AS n FROM catalog_content FINAL WHERE store_id = {store:String} AND is_deleted = 0',
        ),
      ).toBe(demo.articles.length + demo.pages.length);
      // every article's image described (pages have none)
      expect(
        await count(
          "SELECT toString(count()) AS n FROM image_features FINAL WHERE store_id = {store:String} AND item_type = 'article' AND is_deleted = 0",
        ),
      ).toBe(demo.articles.length);
      expect(
        await count(
          "SELECT toString(count()) AS n FROM image_features FINAL WHERE store_id = {store:String} AND item_type = 'product' AND is_deleted = 0",
        ),
      ).toBe(200);
    },
    { timeout: 180_000, interval: 500 },
  );
}, 300_000);

afterAll(async () => {
  await d?.close();
  server?.closeAllConnections();
  server?.close();
});

const search = (q: string, body: Record<string, unknown> = {}) =>
  d.post<Record<string, any>>(`/search/content/${encodeURIComponent(q)}/execute`, body);

describe('content search on the stack', () => {
  it('finds articles and pages merged, or one type', async () => {
    const r = await search('shipping returns care');
    expect(r.res.status).toBe(200);
    const types = new Set(r.body.results.map((x: { __typename: string }) => x.__typename));
    expect(types).toEqual(new Set(['Article', 'Page']));
    const pages = await search('shipping returns care', { content_type: 'page' });
    expect(pages.body.results[0].title).toBe('Shipping and Returns');
    expect(pages.body.results.every((x: { __typename: string }) => x.__typename === 'Page')).toBe(true);
    expect(pages.body.contentType).toBe('page');
  });

  it('leaves out the page hidden from search (seo.hidden)', async () => {
    const hidden = d.demo.pages.find((p) =>
      ((p.metafields ?? []) as { namespace: string; key: string }[]).some(
        (m) => m.namespace === 'seo' && m.key === 'hidden',
      ),
    );
    expect(hidden?.title).toBe('Contact');
    const r = await search('contact hello', { content_type: 'page' });
    expect(r.res.status).toBe(200);
    expect(r.body.results.map((x: { handle: string }) => x.handle)).not.toContain(hidden?.handle);
    expect(r.body.totalResults).toBe(0);
  });

  it('scores item images against the images of the products the query finds', async () => {
    // a product type whose articles found by its name carry at least two different images (two
    // articles of one type may share a colour, and so an image: then the group cannot tell them apart)
    const tuning = { textualWeight: 0, visualWeight: 1, rankingWeightOverrides: { freshness: 0 } };
    let r: Awaited<ReturnType<typeof search>> | undefined;
    for (const slug of new Set(d.demo.articles.map((a) => a.tags?.[0]))) {
      const type = PRODUCT_TYPES.find((t) => t.slug === slug);
      expect(type).toBeDefined();
      const found = await search(type!.plural.toLowerCase(), { content_type: 'article', tuning });
      expect(found.res.status).toBe(200);
      if (new Set(found.body.results.map((x: { image: { url: string } | null }) => x.image?.url)).size > 1) {
        r = found;
        break;
      }
    }
    expect(r).toBeDefined();
    expect(r!.body._meta.weights).toEqual({ text: 0, image: 1, freshness: 0 });
    const signals = r!.body._meta.signals as { image: number; score: number }[];
    // the image signal orders the page (min-max normalized: the best is 1)
    expect(signals[0].image).toBe(1);
    expect(Math.min(...signals.map((s) => s.image))).toBe(0);
    expect(signals.map((s) => s.score)).toEqual(signals.map((s) => s.image));
    // no product matches this query: the image group is 0 for every item
    const none = await search('editors share', { content_type: 'article' });
    expect(none.body.totalResults).toBeGreaterThan(1);
    expect(none.body._meta.signals.every((s: { image: number }) => s.image === 0)).toBe(true);
  });

  it('records a content request event with its filter', async () => {
    await search('size guide', { content_type: 'page' });
    await vi.waitFor(
      async () => {
        const rows = await sql<{ n: string }>(
          "SELECT toString(count()) AS n FROM requests_raw WHERE store_id = {store:String} AND kind = 'content' AND content_type = 'page' AND query = 'size guide'",
          { store: d.storeId },
        );
        expect(Number(rows[0].n)).toBe(1);
      },
      { timeout: 30_000 },
    );
  });
});
