// The storefront SDK (services/sdk) against the running stack: every endpoint through its typed method
// (image upload and image search on the demo's served product images), errors as { data: null, error }
// with the API's code and field paths, X-SDK-Client recorded with each request, prepare → execute
// (polling a not-ready search on 425 Retry-After, and giving up on it after maxPrepareWaitMs), the
// tracker's identity/context sent with requests and the attribution token carried by the events that
// follow, and a retry after a network failure stored once.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDemoStore } from '../../services/demo/generator/generator.ts';
import { visibleAt } from '../../services/demo/generator/quality.ts';
import { DEMO_BLOCKS, DEMO_MERCH_COLLECTION } from '../../services/demo/generator/model.ts';
import { createClient, createTracker, SDK_NAME, SDK_VERSION } from '../../services/sdk/index.ts';
import { type PreparedRecord, SearchState } from '../../services/storefront/search/prepared.ts';
import { type DemoImageServer, serveDemoImages } from '../helpers/demo-images.ts';
import { type DemoStack, demoStack, testSeed } from '../helpers/demo-stack.ts';
import { sql, stack } from '../helpers/stack.ts';

let d: DemoStack;
let base: string;
let titles: string[];
let redis: Redis;
/** the storefront's prepared-search records, in the stack's Redis */
let searchState: SearchState;
const SLOW = { timeout: 30_000, interval: 250 };

let images: DemoImageServer;

beforeAll(async () => {
  // product images served from this process, so the app describes them for image search
  images = await serveDemoImages();
  d = await demoStack({
    name: 'sdk client',
    products: 120,
    demo: generateDemoStore({
      seed: testSeed('sdk-client'),
      products: 120,
      sessions: 50,
      imageBaseUrl: images.base,
    }),
  });
  base = stack().httpUrl;
  titles = [...d.demo.products()].slice(0, 2).map((p) => String(p.title));
  redis = new Redis(stack().redisUrl);
  searchState = new SearchState(redis);
});
afterAll(async () => {
  redis?.disconnect();
  await d?.close();
  images?.close();
});

const requestRow = async (requestId: string) =>
  (
    await sql<{ sdk_client: string | null; context_json: string; session_id: string }>(
      'SELECT sdk_client, context_json, session_id FROM requests_raw WHERE store_id = {s:String} AND request_id = {r:String}',
      { s: d.storeId, r: requestId },
    )
  )[0];

describe('storefront SDK client', () => {
  it('calls every read endpoint with its typed method and names itself in X-SDK-Client', async () => {
    const client = createClient({ token: d.token, baseUrl: base, attributes: ['id', 'title', 'price_range'] });
    const sorts = await client.sortOrders();
    expect(sorts.error).toBeNull();
    expect(sorts.data?.sortOrders.map((s) => s.code)).toContain('relevance');

    const ac = await client.autocomplete('sh', { limit: 5 });
    expect(ac.error).toBeNull();
    expect(Array.isArray(ac.data?.matchedQueries)).toBe(true);

    // the collection with the most products on the storefront (the random seed can leave the first one
    // with fewer than 5 visible: drafts, unpublished and scheduled products are not listed)
    const visibleIn = (c: { product_ids: unknown[] }) => c.product_ids.filter((id) => visible.has(String(id))).length;
    const visible = new Set([...d.demo.products()].filter((p) => visibleAt(p)).map((p) => String(p.id)));
    const listed = d.demo.collections.reduce((a, c) => (visibleIn(c) > visibleIn(a) ? c : a));
    const handle = listed.handle;
    const browse = await client.browse(handle, { pagination: { limit: 5 } });
    expect(browse.error).toBeNull();
    expect(browse.data?.results).toHaveLength(Math.min(5, visibleIn(listed)));
    // the client's default attributes were applied
    expect(Object.keys(browse.data?.results[0] ?? {}).sort()).toEqual(['__typename', 'id', 'price_range', 'title']);
    expect(browse.requestId).toBe(browse.data?.attributionToken);

    const facets = await client.facets(handle, { facets: ['vendor'], retrieveFacetCount: true });
    expect(Object.keys(facets.data?.facets?.vendor ?? {}).length).toBeGreaterThan(0);

    const title = titles[0].split(' ').slice(-1)[0];
    const search = await client.search(title, { pagination: { limit: 3 } });
    expect(search.error).toBeNull();
    expect(search.data?.totalResults).toBeGreaterThan(0);

    const anchor = browse.data?.results[0].id as number;
    const block = await client.block(DEMO_BLOCKS.alsoViewed, { anchor_id: String(anchor) });
    expect(block.error).toBeNull();
    expect(block.data?.block?.id).toBe(DEMO_BLOCKS.alsoViewed);

    const similar = await client.similarProducts(`gid://shopify/Product/${anchor}`);
    expect(similar.error).toBeNull();
    expect(similar.data?.results.every((p) => p.id !== anchor)).toBe(true);

    const content = await client.searchContent('shipping');
    expect(content.error).toBeNull();
    expect(content.data?.query).toBe('shipping');

    const feedback = await client.searchFeedback({
      search_id: search.data?.attributionToken as string,
      rating: 'positive',
    });
    expect(feedback.status).toBe(201);
    expect(feedback.data?.recorded).toBe(true);

    // the header reached the request events
    await expect
      .poll(async () => (await requestRow(browse.requestId as string))?.sdk_client, SLOW)
      .toBe(`${SDK_NAME}/${SDK_VERSION}`);
  });

  it('uploads an image (multipart) and searches by its image_id or inline image_data', async () => {
    const tracker = createTracker({ token: d.token, baseUrl: base });
    const client = createClient({ token: d.token, baseUrl: base, tracker, attributes: ['id', 'title'] });
    // a listed product's photograph, and every product showing the same photograph (look-alikes)
    const product = [...d.demo.products()].find((p) => p.id === d.demo.collections[0].product_ids[0]);
    const src = String(product?.images?.[0]?.src);
    const sharing = [...d.demo.products()]
      .filter((p) => p.images?.some((im) => im.src === src))
      .map((p) => Number(p.id));
    const bytes = await images.render(src.split('/').at(-1) as string);

    const upload = await client.uploadImage(new Blob([new Uint8Array(bytes)], { type: 'image/png' }));
    expect(upload.error).toBeNull();
    expect(upload.status).toBe(200);
    expect(upload.data?.imageId).toMatch(/^[0-9a-f-]{36}$/);
    // the app describes the store's images in the background: the photo's own products come first once it has
    await expect
      .poll(
        async () =>
          (await client.searchImage({ image_id: upload.data?.imageId, pagination: { limit: 5 } })).data?.results[0]?.id,
        { timeout: 120_000, interval: 1_000 },
      )
      .toBeOneOf(sharing);
    const byId = await client.searchImage({ image_id: upload.data?.imageId, pagination: { limit: 5 } });
    expect(byId.status).toBe(200);
    expect(tracker.attributionToken).toBe(byId.data?.attributionToken);

    const inline = await client.searchImage({ image_data: bytes.toString('base64'), pagination: { limit: 5 } });
    expect(inline.error).toBeNull();
    expect(sharing).toContain(inline.data?.results[0]?.id);

    // not an image: the API's 422 naming the multipart field, as { data: null, error }
    const bad = await client.uploadImage(new Blob(['not an image'], { type: 'image/png' }));
    expect(bad.data).toBeNull();
    expect(bad.status).toBe(422);
    expect(bad.error?.fields.map((f) => f.path)).toEqual(['image']);
  }, 180_000);

  it('answers an error as { data: null, error } with the API code, message and field paths', async () => {
    const client = createClient({ token: d.token, baseUrl: base });
    const r = await client.browse(d.demo.collections[0].handle, { pagination: { page: 1, limit: 1000 } });
    expect(r.data).toBeNull();
    expect(r.status).toBe(422);
    expect(r.error?.code).toBe('validation_failed');
    expect(r.error?.fields.map((f) => f.path)).toContain('pagination.limit');

    const missing = await client.browse('no-such-collection');
    expect(missing.error?.code).toBe('not_found');
    expect(missing.status).toBe(404);

    const bad = await createClient({ token: 'nope', baseUrl: base }).autocomplete('x');
    expect(bad.error?.code).toBe('invalid_token');

    const down = await createClient({ token: d.token, baseUrl: 'http://127.0.0.1:9' }).sortOrders();
    expect(down.error?.code).toBe('network_error');
    expect(down.status).toBe(0);
  });

  /** a client whose fetch is the real one, recording each execute: status, Retry-After, the search_id sent */
  function recordingClient(extra: { maxPrepareWaitMs?: number; onStatus?: (status: number) => Promise<void> } = {}) {
    const calls: { status: number; retryAfter: string | null; searchId: string | null; at: number }[] = [];
    const client = createClient({
      token: d.token,
      baseUrl: base,
      maxPrepareWaitMs: extra.maxPrepareWaitMs,
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        if (String(input).includes('/execute')) {
          const body = JSON.parse(String(init?.body)) as { search_id?: string };
          calls.push({
            status: res.status,
            retryAfter: res.headers.get('retry-after'),
            searchId: body.search_id ?? null,
            at: performance.now(),
          });
          await extra.onStatus?.(res.status);
        }
        return res;
      },
    });
    return { client, calls };
  }

  /** prepare's work done, then its record put back to `pending` (as the moment after the 202): not ready */
  async function preparedNotReady(client: ReturnType<typeof createClient>, query: string) {
    const prep = await client.prepareSearch(query);
    expect(prep.status).toBe(202);
    const id = prep.data?.search_id as string;
    await expect.poll(async () => (await searchState.get(d.storeId, id))?.state, SLOW).toBe('ready');
    const ready = (await searchState.get(d.storeId, id)) as Extract<PreparedRecord, { state: 'ready' }>;
    await searchState.start(d.storeId, id, query);
    expect((await searchState.get(d.storeId, id))?.state).toBe('pending');
    return { id, ready };
  }

  it('polls a prepared search the API answers 425 Retry-After for, and executes with the search_id once ready', async () => {
    let prepared: { id: string; ready: Extract<PreparedRecord, { state: 'ready' }> } | undefined;
    const { client, calls } = recordingClient({
      // the understanding becomes ready right after the first 425 (the real server answers every call)
      onStatus: async (status) => {
        if (status === 425 && prepared)
          await searchState.complete(d.storeId, prepared.id, prepared.ready.plan, prepared.ready.startedAt);
      },
    });
    const query = `${titles[1].split(' ').slice(-1)[0]} under 80`;
    prepared = await preparedNotReady(client, query);
    const r = await client.search(query, { pagination: { limit: 5 } });
    expect(r.status).toBe(200);
    expect(calls.map((c) => [c.status, c.retryAfter, c.searchId])).toEqual([
      [425, '1', prepared.id],
      [200, null, prepared.id],
    ]);
    // the retry came after the Retry-After second (a lower bound: the SDK slept before asking again)
    expect(calls[1].at - calls[0].at, 'retry sent before Retry-After elapsed').toBeGreaterThanOrEqual(950);
    // the prepared understanding was used (intent modifiers of "under 80"), and the request event names the id
    expect(r.data?._workflow.map((s) => s.type)).toContain('intent-modifiers');
    await expect
      .poll(
        async () =>
          (
            await sql<{ search_id: string | null }>(
              'SELECT search_id FROM requests_raw WHERE store_id = {s:String} AND request_id = {r:String}',
              { s: d.storeId, r: r.requestId as string },
            )
          )[0]?.search_id,
        SLOW,
      )
      .toBe(prepared.id);
  });

  it('gives up on a prepared search still not ready after maxPrepareWaitMs and executes without the search_id', async () => {
    const { client, calls } = recordingClient({ maxPrepareWaitMs: 1_500 });
    const query = titles[0].split(' ').slice(-1)[0];
    const { id } = await preparedNotReady(client, query);
    const r = await client.search(query, { pagination: { limit: 5 } });
    expect(r.status).toBe(200);
    expect(r.data?.totalResults).toBeGreaterThan(0);
    // 425s with the id while waiting (one or two: 1 s each within the 1.5 s), then one call without it
    const waits = calls.slice(0, -1);
    expect(waits.length).toBeGreaterThanOrEqual(1);
    expect(waits.length).toBeLessThanOrEqual(2);
    expect(waits.every((c) => c.status === 425 && c.retryAfter === '1' && c.searchId === id)).toBe(true);
    expect(calls.at(-1)).toMatchObject({ status: 200, searchId: null });
    // it was the deadline, not readiness: the record is still pending
    expect((await searchState.get(d.storeId, id))?.state).toBe('pending');
  });

  it('sends the tracker identity and context, and the attribution token rides on the next events', async () => {
    const tracker = createTracker({ token: d.token, baseUrl: base, flushDelayMs: 10 });
    const client = createClient({ token: d.token, baseUrl: base, tracker });
    const ids = d.demo.collections[0].product_ids.slice(0, 3).map(Number);
    for (const id of ids) tracker.productView(id);
    const r = await client.browse(DEMO_MERCH_COLLECTION, { pagination: { limit: 4 } });
    expect(r.error).toBeNull();
    const token = r.data?.attributionToken as string;
    expect(tracker.attributionToken).toBe(token);
    const click = tracker.productClick(r.data?.results[0].id as number, 1);
    await tracker.flush();
    await expect.poll(() => tracker.pending(), SLOW).toBe(0);

    await expect.poll(() => requestRow(r.requestId as string), SLOW).toBeTruthy();
    const req = await requestRow(r.requestId as string);
    expect(req.session_id).toBe(tracker.sessionId);
    const ctx = JSON.parse(req.context_json) as { productsViewed?: { productId?: number; id?: number }[] };
    expect(JSON.stringify(ctx)).toContain(String(ids[2]));

    await expect
      .poll(
        async () =>
          (
            await sql<{ attribution_token: string; event_type: string }>(
              'SELECT attribution_token, event_type FROM events_raw WHERE store_id = {s:String} AND event_id = {e:String}',
              { s: d.storeId, e: click.event_id },
            )
          )[0],
        SLOW,
      )
      .toEqual({ attribution_token: token, event_type: 'product_click' });
  });

  it('pins the landing URL’s utm_products to the top of browse (dynamicLinking)', async () => {
    const collection = d.demo.collections[0];
    const plain = await createClient({ token: d.token, baseUrl: base }).browse(collection.handle, {
      pagination: { limit: 24 },
      attributes: ['id', 'handle', 'available'],
    });
    // two of the page's last products (available: an unavailable one is not pinned)
    const [before, last] = plain.data?.results.filter((p) => p.available).slice(-2) ?? [];
    expect(last).toBeDefined();
    // the spec's form: handles joined by underscores, pinned in that order
    const tracker = createTracker({
      token: d.token,
      baseUrl: base,
      landingUrl: `https://shop.example/collections/${collection.handle}?utm_products=${last?.handle}_${before?.handle}`,
    });
    const r = await createClient({ token: d.token, baseUrl: base, tracker }).browse(collection.handle, {
      pagination: { limit: 24 },
      attributes: ['id', 'handle'],
    });
    expect(r.data?.results.slice(0, 2).map((p) => p.id)).toEqual([last?.id, before?.id]);
  });

  it('keeps events through a network failure and stores a retried batch once', async () => {
    let offline = true;
    const tracker = createTracker({
      token: d.token,
      baseUrl: base,
      flushDelayMs: 10,
      // the real fetch; while "offline" it goes to a closed port (a real connection failure)
      fetch: (input, init) => fetch(offline ? String(input).replace(base, 'http://127.0.0.1:9') : input, init),
    });
    const e = tracker.track('collection_view', { collection_handle: DEMO_MERCH_COLLECTION });
    await tracker.flush();
    expect(tracker.pending()).toBe(1);
    offline = false;
    await tracker.flush();
    expect(tracker.pending()).toBe(0);
    // the same batch sent again (as after a lost acknowledgement) is a duplicate
    const res = await fetch(`${base}/beacon`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-storefront-access-token': d.token },
      body: JSON.stringify({ events: [e] }),
    });
    expect(((await res.json()) as { duplicates: number }).duplicates).toBe(1);
    await expect
      .poll(
        async () =>
          (
            await sql<{ n: string }>(
              'SELECT toString(count()) AS n FROM events_raw FINAL WHERE store_id = {s:String} AND event_id = {e:String}',
              { s: d.storeId, e: e.event_id },
            )
          )[0]?.n,
        SLOW,
      )
      .toBe('1');
  });
});
