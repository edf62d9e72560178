// The demo shop (services/shop) in a real browser — playwright-core driving Debian's chromium, headless —
// against the running stack, on a demo catalog loaded through the catalog topics. The shop runs on the
// demo store named by DATA_DIR/demo-store.json (the test writes it for its store, as the demo module
// does). Typing shows suggestions; a search shows results and facets; a click sends product_click with
// the attribution token (read back from ClickHouse); sessions that view A then B put B into A's
// "also viewed" block; events queued offline arrive once after reconnecting; page hide flushes the queue.
// Screenshots go to test-artifacts/shop/ (git-ignored).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEMO_FREE_SHIPPING_BLOCK } from '../../services/demo/generator/config.ts';
import { generateDemoStore } from '../../services/demo/generator/generator.ts';
import { DEMO_STATE_FILE } from '../../services/demo/generator/load.ts';
import { DEMO_BLOCKS, DEMO_MERCH_COLLECTION } from '../../services/demo/generator/model.ts';
import { visibleAt } from '../../services/demo/generator/quality.ts';
import { FREE_SHIPPING_THRESHOLD } from '../../services/shop/module.ts';
import { createClient } from '../../services/sdk/index.ts';
import { type DemoImageServer, serveDemoImages } from '../helpers/demo-images.ts';
import { type DemoStack, demoStack, testSeed } from '../helpers/demo-stack.ts';
import { sql, stack } from '../helpers/stack.ts';

const ARTIFACTS = path.resolve(import.meta.dirname, '../../test-artifacts/shop');
/**
 * a shopper's browser: headless chromium's own user agent is a bot, and bots feed no aggregate. Set on the
 * browser (`--user-agent`), not only on the contexts: a context's override does not reach the sendBeacon a
 * page sends at `pagehide` while navigating away, which went out as HeadlessChrome — stored as a bot's view,
 * and, arriving before the next page re-sent the same event_id, it made the view feed no co-view pair.
 */
const USER_AGENT = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';
const SLOW = { timeout: 30_000, interval: 250 };

let browser: Browser;
let base: string;
let d: DemoStack;
let query: string;
let images: DemoImageServer;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  base = stack().httpUrl;
  images = await serveDemoImages();
  d = await demoStack({
    name: 'shop browser',
    products: 120,
    demo: generateDemoStore({
      seed: testSeed('shop'),
      products: 120,
      sessions: 50,
      imageBaseUrl: images.base,
    }),
  });
  // the shop serves the demo store's token: this store is the demo store of the running stack
  writeFileSync(
    path.join(stack().dataDir, DEMO_STATE_FILE),
    JSON.stringify({
      version: 1,
      storeId: d.storeId,
      token: d.token,
      tokenId: 'test',
      createdAt: new Date().toISOString(),
      seed: 'test',
      products: 120,
      sessions: 50,
      imageBaseUrl: `${base}/demo/images`,
      anchorMs: Date.now(),
      progress: { config: true, catalog: true, catalogLines: 0, replayStartMs: null, replayed: 0, done: true },
    }),
  );
  // shoppers searched a product word: it trends, so autocomplete suggests it. The word ending the most
  // visible products' titles (their kind): results to filter and sort whatever the seed (the first
  // product's kind had a single visible product for some seeds)
  const kinds = new Map<string, number>();
  for (const p of d.demo.products())
    if (visibleAt(p)) {
      const word = (String(p.title).split(' ').at(-1) as string).toLowerCase();
      kinds.set(word, (kinds.get(word) ?? 0) + 1);
    }
  query = [...kinds].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0][0];
  for (let s = 0; s < 6; s++) {
    const client = createClient({
      token: d.token,
      baseUrl: base,
      identity: { sessionId: `shop-trend-${process.pid}-${s}` },
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init?.headers, 'user-agent': USER_AGENT } }),
    });
    expect((await client.search(query)).status).toBe(200);
  }
  const client = createClient({ token: d.token, baseUrl: base });
  await vi.waitFor(
    async () => expect((await client.autocomplete(query.slice(0, 3))).data?.matchedQueries ?? []).toContain(query),
    SLOW,
  );
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-agent=${USER_AGENT}`,
    ],
  });
}, 240_000);
afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  await d?.close();
  images?.close();
});

async function newPage(): Promise<{ page: Page; context: BrowserContext }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, userAgent: USER_AGENT });
  contexts.push(context);
  const page = await context.newPage();
  page.on('pageerror', (err) => {
    throw err;
  });
  return { page, context };
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
const ready = (page: Page) => page.waitForFunction('document.body.dataset.ready === "1"', undefined, SLOW);
const sessionOf = (page: Page) => page.evaluate('window.shop.tracker.sessionId') as Promise<string>;
const pending = (page: Page) => page.evaluate('window.shop.tracker.pending()') as Promise<number>;

async function events(where: string, params: Record<string, string>) {
  return sql<{
    event_type: string;
    attribution_token: string | null;
    product_id: string;
    event_id: string;
    is_bot: number;
  }>(
    `SELECT event_type, attribution_token, toString(product_id) AS product_id, event_id, is_bot FROM events_raw
     WHERE store_id = {store:String} AND ${where} ORDER BY ts`,
    { store: d.storeId, ...params },
  );
}

/** on failure, what the pair aggregate holds for the products (the block's input) and the sessions' events */
async function diagnosed(products: string[], sessions: string[], check: () => Promise<void>): Promise<void> {
  try {
    await check();
  } catch (err) {
    const rows = await sql<{ a: string; b: string; n: string }>(
      `SELECT toString(product_a) AS a, toString(product_b) AS b, toString(sum(sessions)) AS n FROM co_view_pairs
       WHERE store_id = {store:String} AND product_a IN {ps:Array(UInt64)} GROUP BY product_a, product_b
       ORDER BY product_a, sum(sessions) DESC`,
      { store: d.storeId, ps: `[${products.join(',')}]` },
    );
    const evs = await sql<Record<string, string>>(
      `SELECT session_id, toString(product_id) AS p, is_bot, toString(ts) AS ts, toString(_partition) AS part,
              toString(_offset) AS off, event_id FROM events_raw
       WHERE store_id = {store:String} AND session_id IN {ss:Array(String)} ORDER BY ts`,
      { store: d.storeId, ss: `[${sessions.map((x) => `'${x}'`).join(',')}]` },
    );
    (err as Error).message += `\nco_view_pairs: ${JSON.stringify(rows)}\nevents: ${JSON.stringify(evs)}`;
    throw err;
  }
}

describe('demo shop in a browser', () => {
  it('typing shows suggestions; a search shows results and facets; a click sends product_click with the attribution token', async () => {
    const { page } = await newPage();
    expect((await page.goto(`${base}/shop`))?.status()).toBe(200);
    await ready(page);
    await shot(page, 'home');
    await page.locator('#search input').pressSequentially(query.slice(0, 3), { delay: 50 });
    const suggestion = page.locator(`#suggestions li[data-query="${query}"]`);
    await expect.poll(() => suggestion.count(), SLOW).toBe(1);
    await shot(page, 'suggestions');

    await suggestion.dispatchEvent('mousedown');
    await page.waitForURL(`**/shop/search?q=${query}&source=autocomplete`);
    await ready(page);
    const tiles = page.locator('#results a.product');
    expect(await tiles.count()).toBeGreaterThan(0);
    expect(await page.locator('#facets fieldset[data-facet]').count()).toBeGreaterThan(0);
    expect(Number(await page.locator('#total').getAttribute('data-total'))).toBeGreaterThan(0);
    await shot(page, 'search');

    const token = (await page.evaluate('window.shop.tracker.attributionToken')) as string;
    expect(token).toMatch(/^[0-9A-Z]{26}$/);
    const session = await sessionOf(page);
    const productId = (await tiles.first().getAttribute('data-product-id')) as string;
    await tiles.first().click();
    await page.waitForURL(`**/shop/products/${productId}`);
    await ready(page);
    expect(await page.locator('article.pdp h1').textContent()).toBeTruthy();
    await shot(page, 'product');

    await expect
      .poll(async () => await events('session_id = {s:String}', { s: session }), SLOW)
      .toEqual(
        expect.arrayContaining([
          expect.objectContaining({ event_type: 'search' }),
          expect.objectContaining({ event_type: 'product_click', attribution_token: token, product_id: productId }),
          expect.objectContaining({ event_type: 'product_view', attribution_token: token, product_id: productId }),
        ]),
      );
  });

  it('a facet filters the results and the sort select reorders them', async () => {
    const { page } = await newPage();
    await page.goto(`${base}/shop/search?q=${encodeURIComponent(query)}`);
    await ready(page);
    const before = Number(await page.locator('#total').getAttribute('data-total'));
    const facet = page.locator('#facets fieldset[data-facet="vendor"] a.facet').first();
    await facet.click();
    await page.waitForURL(/f=vendor/);
    await ready(page);
    expect(Number(await page.locator('#total').getAttribute('data-total'))).toBeLessThanOrEqual(before);
    expect(await page.locator('#facets a.facet.on').count()).toBe(1);

    // the sort select reloads the results in its order (a tile's price is price_range.from, the price sorted on)
    await page.goto(`${base}/shop/search?q=${encodeURIComponent(query)}`);
    await ready(page);
    const tiles = page.locator('#results a.product');
    const shown = async () => ({
      ids: await tiles.evaluateAll((els) => els.map((e) => e.getAttribute('data-product-id'))),
      prices: (await tiles.locator('.price').allTextContents()).map((t) => Number(t.replace('$', ''))),
    });
    const orders: Record<string, Awaited<ReturnType<typeof shown>>> = {};
    for (const [code, dir] of [
      ['price_asc', 1],
      ['price_desc', -1],
    ] as const) {
      await page.locator('#sort').selectOption(code);
      await page.waitForURL(new RegExp(`[?&]sort=${code}`));
      await ready(page);
      expect(await page.locator('#sort').inputValue()).toBe(code);
      orders[code] = await shown();
      expect(orders[code].prices.length).toBeGreaterThan(1);
      expect(orders[code].prices.every(Number.isFinite)).toBe(true);
      expect(orders[code].prices, code).toEqual([...orders[code].prices].sort((a, b) => dir * (a - b)));
    }
    expect(orders.price_asc.prices[0]).toBeLessThan(orders.price_desc.prices[0]);
    expect(orders.price_asc.ids[0]).not.toBe(orders.price_desc.ids[0]);
    await shot(page, 'search-sorted');
  });

  it('a collection shows its merchandising pin first and its banners; a product page its blocks; the cart and content search render', async () => {
    const { page } = await newPage();
    // the demo's merchandising rule pins one product of summer-edit at position 1 (unconditionally)
    const pin = d.demo.config.merch_rule?.[0]?.pins?.find((p) => !p.conditions);
    expect(pin?.position).toBe(1);
    await page.goto(`${base}/shop/collections/${DEMO_MERCH_COLLECTION}`);
    await ready(page);
    const tiles = page.locator('#results a.product');
    expect(await tiles.count()).toBeGreaterThan(1);
    expect(await tiles.first().getAttribute('data-product-id')).toBe(String(pin?.product_id));
    expect(await page.locator('a.banner').count()).toBeGreaterThan(0);
    await shot(page, 'collection');

    await tiles.first().click();
    await page.waitForURL(`**/shop/products/${pin?.product_id}`);
    await ready(page);
    // "Frequently bought together" and "Similar products" draw product tiles (not the product itself)
    for (const block of [DEMO_BLOCKS.boughtTogether, 'similar']) {
      const ids = await page
        .locator(`section[data-block-id="${block}"] a.product`)
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-product-id')));
      expect(ids.length, `${block} renders products`).toBeGreaterThan(0);
      expect(ids, block).not.toContain(String(pin?.product_id));
    }
    await shot(page, 'product-blocks');
    await page.locator('#add-to-cart').click();
    await page.goto(`${base}/shop/cart`);
    await ready(page);
    expect(await page.locator('ul.cart li').count()).toBe(1);
    await shot(page, 'cart');

    await page.goto(`${base}/shop/content?q=shipping`);
    await ready(page);
    const content = page.locator('#content-results li[data-content-id]');
    expect(await content.count()).toBeGreaterThan(0);
    expect(await content.first().textContent()).toMatch(/shipping/i);
    await shot(page, 'content');
  });

  it('the cart shows the free-shipping picks block: products whose price closes the gap, not the cart’s', async () => {
    const client = createClient({ token: d.token, baseUrl: base });
    // a product well under the threshold, priced as the product page prices it (its first available variant)
    const listed = await client.browse('accessories', { attributes: ['id', 'variants'], pagination: { limit: 100 } });
    const priceOf = (p: { variants?: { price?: string; available?: boolean }[] }) =>
      Number((p.variants?.find((v) => v.available) ?? p.variants?.[0])?.price);
    // in stock: a sold-out product page has no add-to-cart button (the random demo seed decides which are)
    const cheap = listed.data?.results.find(
      (p) => p.variants?.some((v) => v.available) && priceOf(p) >= 5 && priceOf(p) <= FREE_SHIPPING_THRESHOLD - 20,
    );
    expect(cheap, 'an accessory in stock under the free-shipping threshold').toBeDefined();
    const id = cheap?.id as number;
    const gap = FREE_SHIPPING_THRESHOLD - priceOf(cheap ?? {});

    const { page } = await newPage();
    await page.goto(`${base}/shop/products/${id}`);
    await ready(page);
    await page.locator('#add-to-cart').click();
    await page.goto(`${base}/shop/cart`);
    await ready(page);
    expect(Number(await page.locator('p.total').getAttribute('data-gap'))).toBeCloseTo(gap, 2);
    const section = page.locator(`section[data-block-id="${DEMO_FREE_SHIPPING_BLOCK}"]`);
    expect(await section.locator('h2').textContent()).toBe('Add one for free shipping');
    const shown = (await section.locator('a.product').evaluateAll((els) => els.map((e) => e.dataset.productId))).map(
      Number,
    );
    await shot(page, 'cart-free-shipping');
    expect(shown.length).toBeGreaterThan(0);
    expect(shown).not.toContain(id);

    // what the page drew, from the records it kept of the block's products (their variants): each has an
    // available variant priced at or above the gap, the smallest overshoot first
    type Variant = { price?: string; available?: boolean };
    const records = (await page.evaluate(
      `${JSON.stringify(shown)}.map((id) => JSON.parse(sessionStorage.getItem('shop:p:' + id)))`,
    )) as { id: number; variants?: Variant[] }[];
    const overshootOf = (p: { id: number; variants?: Variant[] }) => {
      const prices = (p.variants ?? [])
        .filter((v) => v.available && Number(v.price) >= gap)
        .map((v) => Number(v.price));
      expect(prices.length, `product ${p.id} has an available variant closing the gap`).toBeGreaterThan(0);
      return Math.round((Math.min(...prices) - gap) * 100) / 100;
    };
    const overshoot = records.map(overshootOf);
    expect(overshoot).toEqual([...overshoot].sort((a, b) => a - b));
    // and they are the block's best picks: the same overshoots as the block asked from Node with that cart
    // (ties of equal overshoot are ordered by popularity, which may move between the two calls)
    const picks = await client.block(DEMO_FREE_SHIPPING_BLOCK, {
      attributes: ['id', 'variants'],
      pagination: { limit: 8 },
      context: {
        productsInCart: [{ productId: id, price: priceOf(cheap ?? {}), quantity: 1 }],
        freeShippingThreshold: FREE_SHIPPING_THRESHOLD,
      },
    });
    expect((picks.data?.results ?? []).map((p) => overshootOf(p as { id: number; variants?: Variant[] }))).toEqual(
      overshoot,
    );
  });

  it('sessions that view A then B through the pages put B into A’s also-viewed block', async () => {
    // two published products of one collection, the least popular ones in stock (nobody viewed them
    // together yet; the block hides what is out of stock)
    const byId = new Map(
      [...d.demo.products()].map((p) => [String(p.id), p as { variants?: { available?: boolean }[] }]),
    );
    const inStock = (id: string) => byId.get(id)?.variants?.some((v) => v.available) === true;
    const [a, b] = d.demo.collections[0].product_ids.map(String).filter(inStock).slice(-2);
    const sessions: string[] = [];
    for (let s = 0; s < 6; s++) {
      const { page, context } = await newPage();
      await page.goto(`${base}/shop/products/${a}`);
      await ready(page);
      sessions.push(await sessionOf(page));
      await page.goto(`${base}/shop/products/${b}`);
      await ready(page);
      await expect.poll(() => pending(page), SLOW).toBe(0);
      await context.close();
    }
    // every session's views are stored, A before B, as a shopper's (a bot's views feed no co-view pair)
    await expect
      .poll(async () => {
        const rows = await events("event_type = 'product_view' AND session_id IN {ss:Array(String)}", {
          ss: `[${sessions.map((x) => `'${x}'`).join(',')}]`,
        });
        return rows.map((r) => `${r.product_id}${Number(r.is_bot) ? ' (bot)' : ''}`).join(',');
      }, SLOW)
      .toBe(sessions.map(() => `${a},${b}`).join(','));
    const { page } = await newPage();
    const block = page.locator(`[data-block-id="${DEMO_BLOCKS.alsoViewed}"] a.product`);
    await diagnosed([a, b], sessions, () =>
      expect
        .poll(
          async () => {
            await page.goto(`${base}/shop/products/${a}`);
            await ready(page);
            return await block.evaluateAll((els) => els.map((e) => e.getAttribute('data-product-id')));
          },
          // the co-view aggregate and the block's refresh behind six sessions: 120 s on a loaded machine
          { timeout: 120_000, interval: 1_000 },
        )
        .toContain(b),
    );
    await shot(page, 'also-viewed');
  }, 240_000);

  it('events queued while offline arrive once after reconnecting', async () => {
    const { page, context } = await newPage();
    // on the storefront and in stock: a sold-out product page has no add-to-cart button (the random seed decides)
    const product = [...d.demo.products()].find(
      (p) => visibleAt(p) && (p as { variants?: { available?: boolean }[] }).variants?.some((v) => v.available),
    )?.id;
    expect(product, 'a published product in stock').toBeDefined();
    await page.goto(`${base}/shop/products/${product}`);
    await ready(page);
    await expect.poll(() => pending(page), SLOW).toBe(0);
    await context.setOffline(true);
    await page.locator('#add-to-cart').click();
    await page.locator('#add-to-cart').click();
    await page.waitForTimeout(1_500);
    expect(await pending(page)).toBe(2);
    const session = await sessionOf(page);
    await context.setOffline(false);
    await expect.poll(() => pending(page), SLOW).toBe(0);
    await expect
      .poll(
        async () => (await events("session_id = {s:String} AND event_type = 'add_to_cart'", { s: session })).length,
        SLOW,
      )
      .toBe(2);
    // nothing more arrives later (no double count of a retried batch)
    await page.waitForTimeout(2_000);
    expect((await events("session_id = {s:String} AND event_type = 'add_to_cart'", { s: session })).length).toBe(2);
  });

  it('a platform session cookie is the session id when present', async () => {
    const { page, context } = await newPage();
    await context.addCookies([{ name: 'sf_session', value: `platform-${process.pid}`, url: base }]);
    await page.goto(`${base}/shop`);
    await ready(page);
    expect(await sessionOf(page)).toBe(`platform-${process.pid}`);
  });

  it('visibilitychange to hidden sends the queue with sendBeacon', async () => {
    const { page } = await newPage();
    await page.goto(`${base}/shop/cart`);
    await ready(page);
    await expect.poll(() => pending(page), SLOW).toBe(0);
    // the page's beacons: sendBeacon posts to /beacon with the token in the query (fetch sends a header)
    const beacons: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().includes('/beacon?token=')) beacons.push(r.postData() ?? '');
    });
    // headless chromium never hides a page (no other tab or window covers it): the document turns hidden
    // and the event fires as a browser does it when the shopper switches tabs
    const eventId = (await page.evaluate(`(() => {
      const e = window.shop.tracker.track('content_view', { content_type: 'page', content_id: 2 });
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
      document.dispatchEvent(new Event('visibilitychange'));
      return e.event_id;
    })()`)) as string;
    await expect.poll(() => beacons.filter((b) => b.includes(eventId)).length, SLOW).toBe(1);
    await expect.poll(async () => (await events('event_id = {e:String}', { e: eventId })).length, SLOW).toBe(1);
  });

  it('history.pushState and replaceState are route changes: they keep the session alive', async () => {
    const { page } = await newPage();
    await page.goto(`${base}/shop`);
    await ready(page);
    // a tracker of the page with a 4 s inactivity window (the shop's has 30 minutes) and storage of its own
    await page.evaluate(`(async () => {
      const { createTracker } = await import('/sdk/v1/storefront-sdk.js');
      const m = new Map();
      window.shortTracker = createTracker({
        token: 'unused', baseUrl: '', sessionTimeoutMs: 4000, flushDelayMs: 600000, sessionCookies: [],
        storage: { getItem: (k) => m.get(k) ?? null, setItem: (k, v) => void m.set(k, v) },
      });
    })()`);
    const sessionNow = () =>
      page.evaluate(
        'window.shortTracker.track("collection_view", { collection_handle: "x" }).session_id',
      ) as Promise<string>;
    const first = await sessionNow();
    // 2.5 s, a pushState, 2.5 s, a replaceState, 2.5 s: 7.5 s in all, never 4 s without a route change
    await page.waitForTimeout(2_500);
    await page.evaluate(`history.pushState({}, '', '/shop/cart?step=1')`);
    await page.waitForTimeout(2_500);
    await page.evaluate(`history.replaceState({}, '', '/shop/cart?step=2')`);
    await page.waitForTimeout(2_500);
    expect(await sessionNow()).toBe(first);
    // without a route change (or an event) for longer than the window, a new session starts
    await page.waitForTimeout(4_500);
    expect(await sessionNow()).not.toBe(first);
  });

  it('page hide flushes the queue', async () => {
    const { page } = await newPage();
    await page.goto(`${base}/shop/cart`);
    await ready(page);
    await expect.poll(() => pending(page), SLOW).toBe(0);
    // queued, then the page goes away before the batch timer (1 s) fires: only the pagehide beacon can send it
    const eventId = (await page.evaluate(`(() => {
      const e = window.shop.tracker.track('content_view', { content_type: 'page', content_id: 1 });
      location.href = 'about:blank';
      return e.event_id;
    })()`)) as string;
    await page.waitForURL('about:blank');
    await expect.poll(async () => (await events('event_id = {e:String}', { e: eventId })).length, SLOW).toBe(1);
  });
});
