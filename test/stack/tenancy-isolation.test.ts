// Tenancy: two stores generated from the same demo seed (the same product ids, handles, collections,
// queries, blocks and shopper sessions), told apart only by a marker word appended to every product and
// content title ("tenantay" in store A, "tenantbee" in store B). Every storefront endpoint, the beacon and
// feedback are called with each store's token: no response carries the other store's marker, a search for
// the other store's marker finds nothing, the aggregates of the two stores are equal (a leak would add one
// store's events to the other's), every results-cache key is scoped `sf:rc:{<store>}:…` and holds that
// store's answers only, and every request event is recorded under the token's store.
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DemoStore } from '../../services/demo/generator/model.ts';
import { DEMO_BLOCKS } from '../../services/demo/generator/model.ts';
import { type DemoStack, demoStack, generateTestDemo } from '../helpers/demo-stack.ts';
import { sql, stack } from '../helpers/stack.ts';

const MARK = { a: 'tenantay', b: 'tenantbee' } as const;
type Side = keyof typeof MARK;
const other = (s: Side): Side => (s === 'a' ? 'b' : 'a');
/** a title (product, content) of store `s`: every title of a store ends with its marker (a query that
 * names the other marker is echoed in a response, a title is not) */
const carriesRowsOf = (text: string, s: Side) => new RegExp(`"title":"[^"]*${MARK[s]}"`).test(text);

/** the same generated store, every product, article and page title carrying `mark` */
function marked(demo: DemoStore, mark: string): DemoStore {
  const tag = <T extends { title?: string | number | null }>(x: T): T => ({ ...x, title: `${x.title ?? ''} ${mark}` });
  const m = Object.create(demo) as DemoStore;
  m.product = (i) => tag(demo.product(i));
  m.products = function* () {
    for (const p of demo.products()) yield tag(p);
  };
  m.articles = demo.articles.map(tag);
  m.pages = demo.pages.map(tag);
  return m;
}

const stores = {} as Record<Side, DemoStack>;
const replayed = {} as Record<Side, number>;
let demo: DemoStore;
const session = (s: Side) => `tenancy-session-${s}-${process.pid}`;

/** one request per storefront endpoint with the store's token (and a session id naming the store) */
function requests(s: Side): { name: string; run: () => Promise<{ status: number; text: string }> }[] {
  const d = stores[s];
  const identity = { sessionId: session(s) };
  const handle = demo.collections[0].handle;
  const product = demo.product(0);
  const word = String(product.title).split(/\s+/)[0].toLowerCase();
  const post =
    (path: string, body: Record<string, unknown> = {}) =>
    async () => {
      const r = await d.post(path, { identity, ...body });
      return { status: r.res.status, text: JSON.stringify(r.body) };
    };
  const get = (path: string) => async () => {
    const res = await fetch(`${d.base}${path}`, {
      headers: { 'x-storefront-access-token': d.token, 'x-session-id': session(s) },
    });
    return { status: res.status, text: await res.text() };
  };
  return [
    { name: 'autocomplete', run: get(`/search/complete?query=${encodeURIComponent(word.slice(0, 3))}&limit=50`) },
    { name: 'autocomplete (other marker)', run: get(`/search/complete?query=${MARK[other(s)].slice(0, 7)}`) },
    { name: 'search', run: post(`/search/${encodeURIComponent(word)}/execute`, { pagination: { limit: 100 } }) },
    { name: 'search prepare', run: post(`/search/${encodeURIComponent(word)}/prepare`) },
    { name: 'search (own marker)', run: post(`/search/${MARK[s]}/execute`, { pagination: { limit: 100 } }) },
    { name: 'search (other marker)', run: post(`/search/${MARK[other(s)]}/execute`) },
    { name: 'browse', run: post(`/browse/${handle}`, { pagination: { limit: 100 } }) },
    {
      name: 'facets',
      run: post(`/${handle}/facets`, { facets: ['vendor', 'product_type'], retrieveFacetCount: true }),
    },
    ...Object.entries(DEMO_BLOCKS).map(([k, id]) => ({
      name: `block ${k}`,
      run: post(`/blocks/${id}/products`, { anchor_id: product.id, pagination: { limit: 50 } }),
    })),
    { name: 'similar', run: post(`/search/product/${product.id}`) },
    { name: 'content search', run: post(`/search/content/${MARK[s]}/execute`) },
    { name: 'content search (other marker)', run: post(`/search/content/${MARK[other(s)]}/execute`) },
    { name: 'sort orders', run: get('/sort-orders') },
  ];
}

beforeAll(async () => {
  demo = generateTestDemo({ name: 'tenancy', products: 150, sessions: 60 });
  for (const s of ['a', 'b'] as const)
    stores[s] = await demoStack({ name: `tenancy-${s}`, products: 150, demo: marked(demo, MARK[s]) });
  for (const s of ['a', 'b'] as const) {
    const stats = await stores[s].replay();
    expect(stats.rejected).toBe(0);
    replayed[s] = stats.events;
  }
}, 600_000);

afterAll(async () => {
  await stores.a?.close();
  await stores.b?.close();
});

describe('two stores from the same seed', () => {
  it("every storefront endpoint answers each store's token with that store's rows only", async () => {
    for (const s of ['a', 'b'] as const) {
      for (const r of requests(s)) {
        const { status, text } = await r.run();
        expect(status, `${s} ${r.name}: ${text.slice(0, 300)}`).toBeLessThan(500);
        expect(carriesRowsOf(text, other(s)), `${s} ${r.name} carries the other store's rows`).toBe(false);
      }
      // the marker mechanism works: each store finds its own marker, never the other's
      const own = await stores[s].post(`/search/${MARK[s]}/execute`, { pagination: { limit: 5 } });
      expect(own.body.totalResults).toBeGreaterThan(0);
      const theirs = await stores[s].post(`/search/${MARK[other(s)]}/execute`);
      expect(theirs.body.totalResults ?? 0).toBe(0);
      const browse = await stores[s].post(`/browse/${demo.collections[0].handle}`, { pagination: { limit: 100 } });
      expect(browse.body.results.length).toBeGreaterThan(0);
      for (const p of browse.body.results) expect(String(p.title)).toContain(MARK[s]);
    }
  });

  it("the beacon stores each store's events under its own store id, whatever store_id the client sends", async () => {
    // the replays of the same sessions land under each store id: the same number of distinct events each
    await vi.waitFor(
      async () => {
        const rows = await sql<{ store_id: string; n: string }>(
          'SELECT store_id, toString(uniqExact(event_id)) AS n FROM events_raw WHERE store_id IN ({a:String}, {b:String}) GROUP BY store_id',
          { a: stores.a.storeId, b: stores.b.storeId },
        );
        expect(rows.length).toBe(2);
        expect(Number(rows[0].n)).toBeGreaterThan(0);
        expect(rows[0].n).toBe(rows[1].n);
        expect(replayed.a).toBe(replayed.b);
      },
      { timeout: 120_000, interval: 500 },
    );
    const eventId = '01JDTENANCY00000000000000' + (process.pid % 10);
    const res = await fetch(`${stack().httpUrl}/beacon`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-storefront-access-token': stores.b.token },
      body: JSON.stringify({
        events: [
          {
            event_id: eventId,
            event_type: 'product_view',
            timestamp: new Date().toISOString(),
            session_id: 'x',
            product_id: Number(demo.product(0).id),
            store_id: stores.a.storeId,
          },
        ],
      }),
    });
    expect(res.status).toBe(201);
    await vi.waitFor(
      async () => {
        const rows = await sql<{ store_id: string }>('SELECT store_id FROM events_raw WHERE event_id = {e:String}', {
          e: eventId,
        });
        expect(rows.map((r) => r.store_id)).toEqual([stores.b.storeId]);
      },
      { timeout: 120_000, interval: 500 },
    );
  }, 180_000);

  it('the aggregates of the two stores are equal (the same sessions), none counts the other store', async () => {
    const per = async (q: string, s: Side) => (await sql<{ n: string }>(q, { s: stores[s].storeId }))[0].n;
    const queries = [
      'SELECT toString(count()) AS n FROM co_view_pairs FINAL WHERE store_id = {s:String}',
      'SELECT toString(sum(views)) AS n FROM product_daily_engagement WHERE store_id = {s:String}',
      "SELECT toString(count()) AS n FROM events_raw WHERE store_id = {s:String} AND event_type = 'search'",
    ];
    await vi.waitFor(
      async () => {
        for (const q of queries) {
          const a = await per(q, 'a');
          expect(Number(a), q).toBeGreaterThan(0);
          expect(await per(q, 'b'), q).toBe(a);
        }
      },
      { timeout: 120_000, interval: 1000 },
    );
  }, 180_000);

  it('feedback with the other store’s search id is recorded under the token’s store, without its search context', async () => {
    const searched = await stores.a.post(`/search/${MARK.a}/execute`, {});
    const searchId = searched.body.attributionToken as string;
    for (const s of ['a', 'b'] as const) {
      const r = await stores[s].post('/search/feedback', {
        search_id: searchId,
        rating: 'positive',
        identity: { sessionId: session(s) },
      });
      expect(r.res.status).toBe(201);
    }
    await vi.waitFor(
      async () => {
        const rows = await sql<{ store_id: string; has_search_context: number; query: string | null }>(
          'SELECT store_id, toUInt8(has_search_context) AS has_search_context, query FROM search_feedback WHERE search_id = {id:String} ORDER BY store_id',
          { id: searchId },
        );
        expect(rows.length).toBe(2);
        const byStore = Object.fromEntries(rows.map((r) => [r.store_id, r]));
        expect(byStore[stores.a.storeId]).toMatchObject({ has_search_context: 1, query: MARK.a });
        expect(byStore[stores.b.storeId]).toMatchObject({ has_search_context: 0, query: null });
      },
      { timeout: 120_000, interval: 500 },
    );
  }, 180_000);

  it("an uploaded image id is the uploading store's alone", async () => {
    const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 200, g: 30, b: 30 } } })
      .png()
      .toBuffer();
    const form = new FormData();
    form.append('image', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'red.png');
    const up = await fetch(`${stores.a.base}/images/upload`, {
      method: 'POST',
      headers: { 'x-storefront-access-token': stores.a.token },
      body: form,
    });
    expect(up.status).toBe(200);
    const { imageId } = (await up.json()) as { imageId: string };
    const own = await stores.a.post('/search/image', { image_id: imageId });
    expect(own.res.status).toBe(200);
    const theirs = await stores.b.post('/search/image', { image_id: imageId });
    expect(theirs.res.status).toBe(404);
  });

  it('every results-cache entry is keyed by its store and holds that store’s rows only', async () => {
    const redis = stores.a.redis;
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', 'sf:rc:*', 'COUNT', 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
    const mine = { a: 0, b: 0 };
    const withRows = { a: 0, b: 0 };
    for (const key of keys) {
      const m = /^sf:rc:\{([^}]+)\}:/.exec(key);
      expect(m, key).not.toBeNull();
      const side = (['a', 'b'] as const).find((s) => stores[s].storeId === m?.[1]);
      if (!side) continue; // another suite's store
      mine[side]++;
      const value = (await redis.get(key)) ?? '';
      expect(carriesRowsOf(value, other(side)), `${key} holds the other store's rows`).toBe(false);
      if (carriesRowsOf(value, side)) withRows[side]++;
    }
    expect(mine.a).toBeGreaterThan(0);
    expect(mine.b).toBeGreaterThan(0);
    expect(withRows.a).toBeGreaterThan(0);
    expect(withRows.b).toBeGreaterThan(0);
  });

  it("every request event is recorded under the token's store", async () => {
    await vi.waitFor(
      async () => {
        for (const s of ['a', 'b'] as const) {
          const rows = await sql<{ store_id: string; n: string }>(
            'SELECT store_id, toString(count()) AS n FROM requests_raw WHERE session_id = {sid:String} GROUP BY store_id',
            { sid: session(s) },
          );
          expect(rows.map((r) => r.store_id)).toEqual([stores[s].storeId]);
          expect(Number(rows[0].n)).toBeGreaterThanOrEqual(10);
        }
      },
      { timeout: 120_000, interval: 500 },
    );
  }, 180_000);
});
