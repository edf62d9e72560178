// The public site in a real browser (playwright-core driving Debian's chromium, headless) against the real
// app: the pages render, a form submits and shows its result, a rate-limited form shows the 429 message,
// the arcade starts (keyboard and touch) and a posted score reaches the leaderboard (through the log and
// ClickHouse), and the operations dashboard draws its plots from live data. Screenshots go to
// test-artifacts/site/ (git-ignored).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTICLES } from '../../services/site/content.ts';
import { stack } from '../helpers/stack.ts';
import { closeTestStoreWriter, createTestStore } from '../helpers/stores.ts';

const ARTIFACTS = path.resolve(import.meta.dirname, '../../test-artifacts/site');
let browser: Browser;
let base: string;
const contexts: BrowserContext[] = [];
let ipSeq = 0;
/** a form's answer waits on the log's acknowledgement; the machine is shared */
const SLOW = { timeout: 15_000, interval: 100 };

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  base = stack().httpUrl;
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});
afterAll(async () => {
  for (const c of contexts) await c.close();
  await browser?.close();
  await closeTestStoreWriter();
});

/** a page of its own, from its own client address (the site's limits are per address; loopback is a trusted proxy) */
async function newPage(opts: { touch?: boolean } = {}): Promise<Page> {
  const context = await browser.newContext({
    viewport: opts.touch ? { width: 412, height: 900 } : { width: 1280, height: 900 },
    hasTouch: opts.touch ?? false,
    isMobile: opts.touch ?? false,
    extraHTTPHeaders: { 'x-forwarded-for': `10.88.${process.pid % 250}.${++ipSeq}` },
  });
  contexts.push(context);
  const page = await context.newPage();
  page.on('pageerror', (err) => {
    throw err;
  });
  return page;
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

describe('pages', () => {
  it('the landing page, an article, integrations, the API reference and operations render', async () => {
    const page = await newPage();
    const res = await page.goto(`${base}/`);
    expect(res?.status()).toBe(200);
    await expect.poll(() => page.locator('h1').textContent(), SLOW).toBe('Search that learns from your shoppers');
    // the counter is filled from /api/searches-served
    await expect.poll(() => page.locator('footer [data-counter]').textContent(), SLOW).toMatch(/served$/);
    expect(await page.locator('#articles li').count()).toBe(ARTICLES.length);
    await shot(page, 'landing');

    await page.click(`a[href="/articles/${ARTICLES[0].slug}"]`);
    await page.waitForURL(`**/articles/${ARTICLES[0].slug}`);
    expect(await page.locator('article h1').textContent()).toBe(ARTICLES[0].title);
    await shot(page, 'article');

    for (const [p, heading] of [
      ['/integrations', 'Integrations'],
      ['/docs', 'Storefront Discovery API'],
    ]) {
      expect((await page.goto(`${base}${p}`))?.status()).toBe(200);
      expect(await page.locator('main h1').textContent()).toBe(heading);
      await shot(page, p.slice(1));
    }
    expect(await page.locator('.ops li').count()).toBeGreaterThan(5);
  });
});

describe('forms', () => {
  it('an integration request submits and shows its result', async () => {
    const page = await newPage();
    await page.goto(`${base}/integrations`);
    const f = page.locator('#integration-request');
    await f.locator('[name=name]').fill('Ana');
    await f.locator('[name=email]').fill('ana@example.com');
    await f.locator('[name=service_name]').fill('Gorgias');
    await f.locator('[name=category]').selectOption('Reviews');
    await f.locator('[name=notes]').fill('Helpdesk macros with product links.');
    await f.locator('button[type=submit]').click();
    const out = f.locator('[data-result]');
    await expect.poll(() => out.getAttribute('class'), SLOW).toBe('ok');
    expect(await out.textContent()).toContain('Gorgias');
    await shot(page, 'form-submitted');
  });

  it('a gated article unlocks through its form', async () => {
    const gated = ARTICLES.find((a) => a.gated) as (typeof ARTICLES)[number];
    const page = await newPage();
    await page.goto(`${base}/articles/${gated.slug}`);
    expect(await page.locator('article').getAttribute('data-unlocked')).toBe('false');
    await page.locator('[data-unlock] [name=email]').fill('reader@example.com');
    await page.locator('[data-unlock] button[type=submit]').click();
    await expect.poll(() => page.locator('article').getAttribute('data-unlocked'), SLOW).toBe('true');
    expect(await page.locator('article').textContent()).toContain(gated.body[0].slice(0, 40));
    await shot(page, 'article-unlocked');
  });

  it('the footer subscription shows the 429 message once the address is over its limit', async () => {
    const page = await newPage();
    await page.goto(`${base}/`);
    const f = page.locator('footer form');
    const out = f.locator('[data-result]');
    await f.locator('[name=email]').fill('limit@example.com');
    for (let i = 1; i <= 6; i++) {
      await f.locator('button[type=submit]').click();
      await expect.poll(() => out.getAttribute('class'), SLOW).not.toBe('');
      if (i < 6) {
        expect(await out.getAttribute('class'), `submission ${i}`).toBe('ok');
        await out.evaluate((el) => {
          el.className = '';
        });
      }
    }
    expect(await out.getAttribute('class')).toBe('error');
    expect(await out.getAttribute('data-status')).toBe('429');
    expect(await out.textContent()).toMatch(/^Too many submissions — Wait \d+ seconds .* \(retry after \d+ s\)$/);
    await shot(page, 'rate-limited');
  });
});

describe('the 404 arcade', () => {
  it('starts from the keyboard, ends, and its posted score reaches the leaderboard', async () => {
    const page = await newPage();
    const res = await page.goto(`${base}/no-such-page-${process.pid}`);
    expect(res?.status()).toBe(404);
    await page.locator('#arcade').focus();
    await page.keyboard.press('Enter');
    expect(await page.locator('#arcade').getAttribute('data-state')).toBe('running');
    await page.keyboard.press('ArrowUp');
    // the cart runs into the top wall within a second or two
    await expect.poll(() => page.locator('#arcade').getAttribute('data-state'), { timeout: 10_000 }).toBe('over');
    const score = Number(await page.locator('#arcade-submit [name=score]').inputValue());
    expect(score).toBeGreaterThan(0);
    const player = `kb${process.pid % 100000}`;
    await page.locator('#arcade-submit [name=player]').fill(player);
    await page.locator('#arcade-submit button[type=submit]').click();
    const entry = page.locator(`#leaderboard li[data-player="${player}"]`);
    await expect.poll(() => entry.count(), { timeout: 25_000 }).toBe(1);
    expect(Number(await entry.getAttribute('data-best'))).toBe(score);
    await shot(page, 'arcade');
  });

  it('starts from a tap and steers from the touch pad', async () => {
    const page = await newPage({ touch: true });
    await page.goto(`${base}/also-missing`);
    const arcade = page.locator('#arcade');
    // the cart reaches the right wall 1.1 s after the start: on a loaded machine the pad's tap can come
    // after the game ended, so up to three games are played until one is steered down
    for (let game = 0; game < 3; game++) {
      await arcade.tap();
      expect(await arcade.getAttribute('data-state')).toBe('running');
      await page.locator('.pad [data-dir=down]').tap();
      await expect.poll(() => arcade.getAttribute('data-state'), { timeout: 10_000 }).toBe('over');
      if ((await arcade.getAttribute('data-dir')) === 'down') break;
    }
    expect(await arcade.getAttribute('data-dir')).toBe('down');
    await shot(page, 'arcade-touch');
  });

  it('a swipe on the canvas starts and steers the cart; a short drag does not turn it', async () => {
    const page = await newPage({ touch: true });
    await page.goto(`${base}/missing-for-swipes`);
    const arcade = page.locator('#arcade');
    await arcade.scrollIntoViewIfNeeded();
    const box = (await arcade.boundingBox()) as { x: number; y: number; width: number; height: number };
    const cdp = await page.context().newCDPSession(page);
    /** one finger dragged from the canvas centre by (dx, dy) CSS pixels, as real touch events */
    const swipe = async (dx: number, dy: number) => {
      const x = box.x + box.width / 2;
      const y = box.y + box.height / 2;
      await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [{ x, y }] });
      for (const f of [0.5, 1])
        await cdp.send('Input.dispatchTouchEvent', {
          type: 'touchMove',
          touchPoints: [{ x: x + dx * f, y: y + dy * f }],
        });
      await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
    };
    // one gesture: the touch starts the game (heading right), the upward swipe turns the cart up, and it
    // runs into the top wall
    expect(await arcade.getAttribute('data-state')).toBeNull();
    await swipe(0, -90);
    await expect.poll(() => arcade.getAttribute('data-dir'), { timeout: 10_000 }).toBe('up');
    await expect.poll(() => arcade.getAttribute('data-state'), { timeout: 10_000 }).toBe('over');
    expect(await arcade.getAttribute('data-dir')).toBe('up');
    await shot(page, 'arcade-swipe');
    // a drag under the 20 px threshold restarts the game without turning: the cart ends at the right wall
    await swipe(0, 12);
    expect(await arcade.getAttribute('data-state')).toBe('running');
    await expect.poll(() => arcade.getAttribute('data-state'), { timeout: 10_000 }).toBe('over');
    expect(await arcade.getAttribute('data-dir')).toBe('right');
  });
});

describe('operations dashboard', () => {
  it('draws throughput, lag, DLQ, trending and searches-served plots from live data', async () => {
    // live data: a store's shoppers search (request events → requests_raw, trending, searches served)
    const { token } = await createTestStore({ name: 'site dashboard' });
    for (const q of ['linen dress', 'linen dress', 'wool coat']) {
      const r = await fetch(`${base}/api/storefront/v1/search/${encodeURIComponent(q)}/execute`, {
        method: 'POST',
        headers: {
          'x-storefront-access-token': token,
          'content-type': 'application/json',
          // a shopper's browser: requests from bots cast no trending votes
          'user-agent':
            'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36',
        },
        body: JSON.stringify({ identity: { sessionId: `s-${q}` } }),
      });
      expect(r.status).toBe(200);
    }
    const page = await newPage();
    await page.goto(`${base}/ops`);
    await expect
      .poll(() => page.locator('#plot-throughput path.series').count(), { timeout: 30_000, interval: 1_000 })
      .toBeGreaterThan(0);
    // the requests line carries the searches just made
    await expect
      .poll(
        async () => {
          await page.reload();
          await page.waitForFunction('Number(document.body.dataset.opsLoaded ?? 0) >= 1');
          return page.locator('#plot-trending rect.bar').count();
        },
        { timeout: 40_000, interval: 3_000 },
      )
      .toBeGreaterThan(0);
    expect(await page.locator('#plot-lag path.series').count()).toBeGreaterThan(0);
    expect(await page.locator('#plot-dlq rect.bar').count()).toBeGreaterThan(0);
    expect(Number(await page.locator('#plot-throughput').getAttribute('data-drawn'))).toBeGreaterThan(0);
    expect(await page.locator('[data-ops-counter]').textContent()).toMatch(/served$/);
    await shot(page, 'dashboard');
  });
});
