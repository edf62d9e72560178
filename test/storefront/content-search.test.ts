// Content search (POST /search/content/{searchQuery}/execute) over real content rows: Shopify-shaped
// articles and pages normalized and projected by the catalog content processor into chDB, read by the
// content index, served through the storefront frame. Merge and filter, seo.hidden, tuning validation,
// the weights and their effect, pagination, the live reload from agg:catalog, and a processing failure
// answering an empty result set.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { catalogKey } from '../../schemas/catalog.ts';
import { CATALOG_CHANNEL, encodeCatalogMessages } from '../../schemas/channels.ts';
import { normalizeContent } from '../../services/catalog/normalize.ts';
import { imageFeatureProvider } from '../../services/common/image-features.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { ContentIndex, StoreContent } from '../../services/storefront/content/index.ts';
import { contentWeights, minMax, rankContent } from '../../services/storefront/content/rank.ts';
import { ImageIndex } from '../../services/storefront/images/index.ts';
import { memoryUploads } from '../../services/storefront/images/uploads.ts';
import { STOREFRONT_PREFIX } from '../../services/storefront/plugin.ts';
import { catalogContentProcessor } from '../../streams/catalog/content.ts';
import type { Decoded } from '../../streams/runtime/types.ts';
import { privateDb } from '../helpers/chdb.ts';
import { type DiscoveryHost, startDiscoveryHost } from './discovery-host.ts';
import { type RedisServer, startRedis } from './harness.ts';

let redis: RedisServer;
let db: Db;
let h: DiscoveryHost;
let broken: DiscoveryHost;
let index: ContentIndex;
let offset = 0n;
const logger = createLogger('content-test', 'silent');

const DAY = 86_400_000;
const at = (daysAgo: number) => new Date(Date.UTC(2026, 10, 1) - daysAgo * DAY).toISOString();

async function deliver(store: string, items: { type: 'article' | 'page'; raw: Record<string, unknown> }[]) {
  const batch: Decoded<unknown>[] = items.map((it) => {
    const n = normalizeContent(store, it.type, it.raw, { source: 'import', now: at(0) });
    if (!n.ok) throw new Error(JSON.stringify(n.issues));
    const parsed = catalogContentProcessor.parse(n.value);
    if (!parsed.ok) throw new Error(parsed.reason);
    return {
      value: parsed.value,
      position: { topic: 'content', partition: 0, offset: offset++ },
      brokerTime: Date.now(),
    };
  });
  const r = await catalogContentProcessor.process(batch as never, {} as never);
  for (const w of r.writes) await db.insert(w.table, w.rows);
}

const article = (id: number, title: string, body: string, daysAgo: number, extra: Record<string, unknown> = {}) => ({
  type: 'article' as const,
  raw: {
    id,
    handle: `a-${id}`,
    title,
    body_html: `<p>${body}</p><img src="https://cdn.example/x.png">`,
    author: 'Maya',
    tags: ['guide', 'care'],
    image: { src: `https://cdn.example/a-${id}.png`, width: 512, height: 384, alt: title },
    published_at: at(daysAgo),
    updated_at: at(daysAgo),
    ...extra,
  },
});
const page = (id: number, title: string, body: string, extra: Record<string, unknown> = {}) => ({
  type: 'page' as const,
  raw: { id, handle: `p-${id}`, title, body_html: `<h1>${title}</h1><p>${body}</p>`, published_at: at(400), ...extra },
});

beforeAll(async () => {
  redis = await startRedis();
  db = await privateDb(`content_search_${process.pid}`);
  await migrate(db);
  const subscriber = createRedis(redis.url, { connectionName: 'content-test' });
  h = await startDiscoveryHost(redis.url, db, () => {
    index = new ContentIndex({ db, subscriber, logger });
    return {
      content: index,
      images: new ImageIndex({ db, logger }),
      uploads: memoryUploads(),
      provider: imageFeatureProvider(),
    };
  });
  await index.start();
  await deliver(h.storeId, [
    article(101, 'How to care for your linen shirts', 'Linen loves cool water. Linen care is easy.', 300),
    article(102, 'Five ways to style summer dresses', 'Light dresses, a linen jacket and sandals.', 2),
    article(103, 'Wool sweaters in winter', 'Wool keeps warm.', 10),
    page(201, 'Linen and fabric guide', 'Our linen comes from Belgian flax.'),
    page(202, 'Shipping and Returns', 'Free shipping over $75.'),
    page(203, 'Hidden linen page', 'Secret linen.', {
      metafields: [{ namespace: 'seo', key: 'hidden', value: '1', type: 'number_integer' }],
    }),
    article(104, 'Unpublished linen draft', 'Draft about linen.', 1, { published: false, published_at: null }),
  ]);
  // a host whose content source fails (its database is closed): every search answers empty
  const closedDb = await privateDb(`content_search_closed_${process.pid}`);
  await migrate(closedDb);
  await closedDb.close();
  broken = await startDiscoveryHost(redis.url, db, () => ({
    content: new ContentIndex({ db: closedDb, logger }),
    images: new ImageIndex({ db: closedDb, logger }),
    uploads: memoryUploads(),
    provider: imageFeatureProvider(),
  }));
}, 120_000);

afterAll(async () => {
  await h?.close();
  await broken?.close();
  index?.close();
  await db?.close();
  await redis?.stop();
});

async function search(query: string, body: Record<string, unknown> = {}, host = h) {
  const res = await host.app.inject({
    method: 'POST',
    url: `${STOREFRONT_PREFIX}/search/content/${encodeURIComponent(query)}/execute`,
    headers: { 'x-storefront-access-token': host.token, 'content-type': 'application/json' },
    payload: body,
  });
  return { status: res.statusCode, body: res.json() as Record<string, any> };
}

describe('content search', () => {
  it('merges articles and pages when content_type is omitted, as content items', async () => {
    const r = await search('linen');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ query: 'linen', contentType: null, page: 1, resultsPerPage: 24 });
    const ids = r.body.results.map((x: { content_id: number }) => x.content_id);
    expect(new Set(ids)).toEqual(new Set([101, 102, 201]));
    expect(r.body.totalResults).toBe(3);
    expect(r.body.totalPages).toBe(1);
    const a = r.body.results.find((x: { content_id: number }) => x.content_id === 101);
    expect(a).toEqual({
      __typename: 'Article',
      content_type: 'article',
      content_id: 101,
      title: 'How to care for your linen shirts',
      handle: 'a-101',
      summary_text: expect.stringContaining('Linen loves cool water.'),
      author: 'Maya',
      tags: ['guide', 'care'],
      image: {
        url: 'https://cdn.example/a-101.png',
        width: 512,
        height: 384,
        altText: 'How to care for your linen shirts',
      },
      published_at: at(300),
    });
    const p = r.body.results.find((x: { content_id: number }) => x.content_id === 201);
    expect(p).toMatchObject({ __typename: 'Page', content_type: 'page', author: null, tags: [], image: null });
    expect(r.body.attributionToken).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
  });

  it('content_type restricts to articles or pages', async () => {
    const pages = await search('linen', { content_type: 'page' });
    expect(pages.body.contentType).toBe('page');
    expect(pages.body.results.map((x: { content_id: number }) => x.content_id)).toEqual([201]);
    const articles = await search('linen', { content_type: 'article' });
    expect(articles.body.contentType).toBe('article');
    expect(articles.body.results.every((x: { __typename: string }) => x.__typename === 'Article')).toBe(true);
    expect(articles.body.totalResults).toBe(2);
  });

  it('never returns items with the seo.hidden metafield, nor unpublished ones', async () => {
    const r = await search('linen', { pagination: { limit: 100 } });
    const ids = r.body.results.map((x: { content_id: number }) => x.content_id);
    expect(ids).not.toContain(203);
    expect(ids).not.toContain(104);
    expect((await search('secret')).body.totalResults).toBe(0);
  });

  it('pages through the ranking', async () => {
    const all = (await search('linen')).body.results.map((x: { content_id: number }) => x.content_id);
    const p2 = await search('linen', { pagination: { page: 2, limit: 2 } });
    expect(p2.body).toMatchObject({ page: 2, resultsPerPage: 2, totalResults: 3, totalPages: 2 });
    expect(p2.body.results.map((x: { content_id: number }) => x.content_id)).toEqual(all.slice(2));
  });

  it('ranks by text 50 %, image 20 %, freshness 30 % by default', async () => {
    const r = await search('linen');
    expect(r.body._meta.weights).toEqual({ text: 0.5, image: 0.2, freshness: 0.3 });
    // the strong text match (old) beats the fresh weak one: 0.5 × 1 vs 0.3 × 1 (+ text share)
    expect(r.body.results[0].content_id).toBe(101);
  });

  it('rankingWeightOverrides are normalized to sum 1 and change the order', async () => {
    const r = await search('linen', { tuning: { rankingWeightOverrides: { semantic: 0.2, freshness: 0.8 } } });
    expect(r.body._meta.weights).toEqual({ text: 0.142857, image: 0.057143, freshness: 0.8 });
    // freshness dominates: the article published 2 days ago comes first
    expect(r.body.results[0].content_id).toBe(102);
    const both = await search('linen', { tuning: { rankingWeightOverrides: { semantic: 1, freshness: 1 } } });
    expect(both.body._meta.weights).toEqual({ text: 0.357143, image: 0.142857, freshness: 0.5 });
    const semanticOnly = await search('linen', { tuning: { rankingWeightOverrides: { freshness: 0 } } });
    expect(semanticOnly.body._meta.weights).toEqual({ text: 0.714286, image: 0.285714, freshness: 0 });
  });

  it('textualWeight and visualWeight split the semantic group', async () => {
    const r = await search('linen', { tuning: { textualWeight: 1, visualWeight: 0 } });
    expect(r.body._meta.weights).toEqual({ text: 0.7, image: 0, freshness: 0.3 });
    const even = await search('linen', { tuning: { textualWeight: 0.5, visualWeight: 0.5 } });
    expect(even.body._meta.weights).toEqual({ text: 0.35, image: 0.35, freshness: 0.3 });
  });

  it('topK limits the candidates re-ranked', async () => {
    const r = await search('linen', { tuning: { topK: 1 } });
    expect(r.body.totalResults).toBe(1);
    // the one candidate is the best by text
    expect(r.body.results[0].content_id).toBe(101);
  });

  it('refuses invalid tuning with a 422 naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ textualWeight: 0.5 }, 'tuning.visualWeight'],
      [{ visualWeight: 0.5 }, 'tuning.textualWeight'],
      [{ textualWeight: 1.5, visualWeight: 0.5 }, 'tuning.textualWeight'],
      [{ textualWeight: 0.5, visualWeight: -0.1 }, 'tuning.visualWeight'],
      [{ textualWeight: 0, visualWeight: 0 }, 'tuning.textualWeight'],
      [{ topK: 0 }, 'tuning.topK'],
      [{ topK: 101 }, 'tuning.topK'],
      [{ topK: 2.5 }, 'tuning.topK'],
      [{ rankingWeightOverrides: { semantic: 2 } }, 'tuning.rankingWeightOverrides.semantic'],
      [{ rankingWeightOverrides: { freshness: -1 } }, 'tuning.rankingWeightOverrides.freshness'],
      [{ rankingWeightOverrides: { semantic: 0, freshness: 0 } }, 'tuning.rankingWeightOverrides'],
      [{ rankingWeightOverrides: { popularity: 0.5 } }, 'tuning.rankingWeightOverrides'],
    ];
    for (const [tuning, path] of cases) {
      const r = await search('linen', { tuning });
      expect(r.status, JSON.stringify(tuning)).toBe(422);
      expect(r.body.error.code).toBe('validation_failed');
      expect(
        r.body.error.fields.map((f: { path: string }) => f.path),
        JSON.stringify(tuning),
      ).toContain(path);
    }
    const bad = await search('linen', { content_type: 'blog' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.fields[0].path).toBe('content_type');
  });

  it('answers an empty result set, not an error, when processing fails', async () => {
    const r = await search('linen', {}, broken);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      query: 'linen',
      contentType: null,
      results: [],
      totalResults: 0,
      totalPages: 0,
      page: 1,
      _meta: { degraded: 'processing_failed' },
    });
    const event = broken.events.at(-1);
    expect(event).toMatchObject({ kind: 'content', status_code: 200, total_results: 0, query: 'linen' });
  });

  it('emits a content request event with the filter and the results', async () => {
    await search('linen', { content_type: 'page' });
    const e = h.events.at(-1);
    expect(e).toMatchObject({
      kind: 'content',
      query: 'linen',
      content_type: 'page',
      total_results: 1,
      result_count: 1,
    });
    expect(JSON.parse(e?.details_json ?? '{}')).toEqual({ content_ids: ['201'] });
  });

  it('a content change published on agg:catalog is searchable at once', async () => {
    await deliver(h.storeId, [article(105, 'Caring for cashmere', 'Cashmere likes a cold rinse.', 1)]);
    const pub = createRedis(redis.url, { connectionName: 'content-test-pub' });
    const key = catalogKey({ topic: 'content', store_id: h.storeId, content_type: 'article', content_id: '105' });
    for (const m of encodeCatalogMessages([{ store_id: h.storeId, topic: 'content', keys: [key] }]))
      await pub.publish(CATALOG_CHANNEL, m);
    pub.disconnect();
    await vi.waitFor(async () => expect((await search('cashmere')).body.totalResults).toBe(1), { timeout: 10_000 });
  });
});

describe('content ranking', () => {
  it('min-max normalizes each group over the candidates and combines them linearly', () => {
    expect(minMax([2, 4, 6])).toEqual([0, 0.5, 1]);
    expect(minMax([3, 3])).toEqual([0, 0]);
    const views = [
      { id: '1', title: 'linen linen linen', days: 100, image: 0.2 },
      { id: '2', title: 'linen notes', days: 0, image: 0.9 },
      { id: '3', title: 'linen shirt care', days: 50, image: 0.5 },
    ].map((v) => ({
      content_type: 'article' as const,
      content_id: v.id,
      handle: v.id,
      title: v.title,
      summary_text: '',
      body_text: '',
      author: null,
      tags: [],
      image: null,
      blog_handle: null,
      published_at: new Date(Date.UTC(2026, 0, 1) - v.days * DAY).toISOString(),
      updated_at: at(0),
      seo_hidden: false,
      _image: v.image,
    }));
    const store = new StoreContent('s', views);
    const imageOf = new Map(views.map((v) => [v.content_id, v._image]));
    const weights = contentWeights(undefined);
    const ranked = rankContent(store, 'linen', {
      contentType: null,
      weights,
      imageSimilarity: (item) => imageOf.get(item.view.content_id) ?? 0,
    });
    const text = minMax(store.textScores('linen', null).map((t) => t.score));
    for (const r of ranked) {
      expect(r.score).toBeCloseTo(0.5 * r.signals.text + 0.2 * r.signals.image + 0.3 * r.signals.freshness, 9);
      expect(text).toContain(r.signals.text);
    }
    const byId = Object.fromEntries(ranked.map((r) => [r.item.view.content_id, r.signals]));
    expect(byId['1'].freshness).toBe(0);
    expect(byId['2'].freshness).toBe(1);
    expect(byId['3'].freshness).toBeCloseTo(0.5, 9);
    expect(byId['1'].image).toBe(0);
    expect(byId['2'].image).toBe(1);
    expect(byId['3'].image).toBeCloseTo(3 / 7, 9);
    expect(ranked.map((r) => r.score)).toEqual([...ranked.map((r) => r.score)].sort((a, b) => b - a));
  });
});
