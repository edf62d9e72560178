// Tenancy: two stores generated from the same demo seed (the same product ids, handles, collections,
// queries, blocks and shopper sessions), told apart only by a marker word appended to every product and
// content title ("tenantay" in store A, "tenantbee" in store B). Every storefront endpoint, the beacon and
// feedback are called with each store's token: no response carries the other store's marker, a search for
// the other store's marker finds nothing, the aggregates of the two stores are equal (a leak would add one
// store's events to the other's), every results-cache key is scoped `sf:rc:{<store>}:…` and holds that
// store's answers only, and every request event is recorded under the token's store. The site's one
// store-scoped endpoint (GET /api/ops/dashboard?store=) answers each store's figures only, and a replay of
// the events processor (POST /internal/replay, the CLI's single-node path) leaves each store's aggregates
// at its own ground truth. The replay has no per-store scope (it rebuilds every store's rows of the
// processor's tables from the log), so the two stores are checked side by side through one full replay.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DemoStore } from '../../services/demo/generator/model.ts';
import { DEMO_BLOCKS } from '../../services/demo/generator/model.ts';
import { eventsProcessor } from '../../streams/events/processor.ts';
import type { ReplayEvent, TableDiff } from '../../streams/replay/replay.ts';
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

/** the mirror of the beacon test's event (sent with each store's token): the stores stay symmetric */
const EXTRA_EVENT_ID = `01JDTENANCY00000000000000${process.pid % 10}`;

async function sendExtraEvent(s: Side): Promise<void> {
  const res = await fetch(`${stack().httpUrl}/beacon`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-storefront-access-token': stores[s].token },
    body: JSON.stringify({
      events: [
        {
          event_id: EXTRA_EVENT_ID,
          event_type: 'product_view',
          timestamp: new Date().toISOString(),
          session_id: 'x',
          product_id: Number(demo.product(0).id),
          store_id: stores[other(s)].storeId,
        },
      ],
    }),
  });
  expect(res.status).toBe(201);
}

/** each table of the events processor: the store's total of the measure its replay compares */
async function eventsAggregates(s: Side): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [table, spec] of Object.entries(eventsProcessor.tables.compare)) {
    const final = spec.final || table.endsWith('_raw') ? ' FINAL' : '';
    const rows = await sql<{ m: string }>(
      `SELECT toString(${spec.measure}) AS m FROM ${table}${final} WHERE store_id = {s:String}`,
      { s: stores[s].storeId },
    );
    out[table] = rows[0]?.m ?? '0';
  }
  return out;
}

/** the events each store accepted (the ground truth of its events_raw) */
const distinctEvents = async (s: Side) =>
  Number(
    (
      await sql<{ n: string }>(
        'SELECT toString(uniqExact(event_id)) AS n FROM events_raw WHERE store_id = {s:String}',
        {
          s: stores[s].storeId,
        },
      )
    )[0].n,
  );

/** POST /internal/replay (what `npm run replay` calls on a single node) and its NDJSON events */
async function replayProcessor(processor: string): Promise<ReplayEvent[]> {
  const token = readFileSync(path.join(stack().dataDir, 'replay.token'), 'utf8').trim();
  const res = await fetch(`${stack().httpUrl}/internal/replay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ processor, from: 'earliest', swap: true }),
  });
  const text = await res.text();
  expect(res.status, text.slice(0, 500)).toBe(200);
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as ReplayEvent);
}

const BROWSER =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

interface Dashboard {
  store: string | null;
  throughput: Record<'events' | 'requests', { t: string; n: number }[]>;
  trending: { query: string; votes: number; searches: number }[];
  searchesPerDay: { day: string; n: number }[];
}

async function dashboard(store: string): Promise<Dashboard> {
  const res = await fetch(`${stack().httpUrl}/api/ops/dashboard?store=${encodeURIComponent(store)}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Dashboard;
}

/** the store's rows per minute of `table` over the last 30 minutes, read directly */
async function perMinute(table: 'events_raw' | 'requests_raw', s: Side): Promise<Map<string, number>> {
  const rows = await sql<{ t: string; n: string }>(
    `SELECT formatDateTime(toStartOfMinute(ts), '%Y-%m-%dT%H:%i:00Z') AS t, toString(count()) AS n FROM ${table}
     WHERE store_id = {s:String} AND ts >= now() - toIntervalMinute(31) GROUP BY t`,
    { s: stores[s].storeId },
  );
  return new Map(rows.map((r) => [r.t, Number(r.n)]));
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
  }, 180_000);

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
  it("the site's store-scoped dashboard (/api/ops/dashboard?store=) answers each store's figures only", async () => {
    // a query only one store is asked, by 40 shoppers (more than any demo query has): it is in that store's
    // trending list with its 40 votes, never in the other's
    const solo = (s: Side) => `solo${s}${process.pid}`;
    for (const s of ['a', 'b'] as const)
      for (let i = 0; i < 40; i++) {
        const r = await stores[s].post(
          `/search/${solo(s)}/execute`,
          { identity: { sessionId: `tenancy-trend-${s}-${i}-${process.pid}` } },
          // a shopper's browser: trending leaves bots' searches out
          { 'user-agent': BROWSER },
        );
        expect(r.res.status).toBe(200);
      }
    await vi.waitFor(
      async () => {
        const all = await dashboard('');
        for (const s of ['a', 'b'] as const) {
          const d = await dashboard(stores[s].storeId);
          expect(d.store).toBe(stores[s].storeId);
          expect(d.trending).toContainEqual({ query: solo(s), votes: 40, searches: 40 });
          expect(d.trending.map((t) => t.query)).not.toContain(solo(other(s)));
          // searches per day: the store's own rows of searches_served_daily
          const perDay = await sql<{ d: string; n: string }>(
            'SELECT toString(day) AS d, toString(sum(searches)) AS n FROM searches_served_daily WHERE store_id = {s:String} AND day > today() - 30 GROUP BY day ORDER BY day',
            { s: stores[s].storeId },
          );
          expect(d.searchesPerDay).toEqual(perDay.map((r) => ({ day: r.d, n: Number(r.n) })));
          // throughput per minute: the store's own events and requests (the oldest minute is cut by the window)
          for (const table of ['events', 'requests'] as const) {
            const own = await perMinute(`${table}_raw`, s);
            const series = d.throughput[table].slice(1);
            expect(series.map((p) => [p.t, p.n])).toEqual(series.map((p) => [p.t, own.get(p.t) ?? 0]));
            expect(series.reduce((n, p) => n + p.n, 0)).toBeGreaterThan(0);
          }
        }
        // the unscoped dashboard counts both stores' searches (and other suites' stores')
        const total = (d: Dashboard) => d.searchesPerDay.reduce((n, p) => n + p.n, 0);
        const [a, b] = [await dashboard(stores.a.storeId), await dashboard(stores.b.storeId)];
        expect(total(all)).toBeGreaterThanOrEqual(total(a) + total(b));
      },
      { timeout: 120_000, interval: 1000 },
    );
  }, 240_000);

  it("a replay of the events processor leaves each store's aggregates at its own ground truth", async () => {
    // both stores got the same sessions and the same extra event: their ground truth is the same
    for (const s of ['a', 'b'] as const) await sendExtraEvent(s);
    const before = {} as Record<Side, Record<string, string>>;
    await vi.waitFor(
      async () => {
        for (const s of ['a', 'b'] as const) {
          expect(await distinctEvents(s)).toBe(replayed[s] + 1);
          before[s] = await eventsAggregates(s);
        }
        expect(before.a).toEqual(before.b);
      },
      { timeout: 120_000, interval: 1000 },
    );
    for (const t of ['events_raw', 'sessions', 'co_view_pairs', 'product_daily_engagement'])
      expect(Number(before.a[t]), JSON.stringify(before.a)).toBeGreaterThan(0);

    const events = await replayProcessor('events');
    const errors = events.filter((e) => e.type === 'error');
    expect(errors).toEqual([]);
    const result = events.find((e) => e.type === 'result');
    if (result?.type !== 'result') throw new Error(`no result: ${JSON.stringify(events.slice(-3))}`);
    expect(result.result.swapped).toBe(true);
    // it read the whole log: both stores' events at least
    expect(result.result.messages).toBeGreaterThanOrEqual(replayed.a + replayed.b + 2);
    // the rebuilt tables agree with the live ones on both stores (other suites' stores are theirs to check)
    const ours = (d: TableDiff) => d.store_id === stores.a.storeId || d.store_id === stores.b.storeId;
    const diffs = events.flatMap((e) => (e.type === 'diff' ? [e.diff] : [])).filter(ours);
    expect(diffs).toEqual([]);

    // after the swap: each store's aggregates are its own again, no row of one store under the other
    for (const s of ['a', 'b'] as const) {
      expect(await distinctEvents(s)).toBe(replayed[s] + 1);
      expect(await eventsAggregates(s)).toEqual(before[s]);
    }
    // the extra event (sent with each store's token, naming the other store in its body) once under each
    const extra = await sql<{ store_id: string; n: string }>(
      'SELECT store_id, toString(count()) AS n FROM events_raw FINAL WHERE event_id = {e:String} GROUP BY store_id ORDER BY store_id',
      { e: EXTRA_EVENT_ID },
    );
    expect(extra).toEqual([stores.a.storeId, stores.b.storeId].sort().map((store_id) => ({ store_id, n: '1' })));
  }, 600_000);
});
