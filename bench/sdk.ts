// `npm run bench -- sdk`: the storefront SDK and the demo shop, on the single-node app with the demo store
// (`npm start` on a fresh data dir and free ports, 200 products, 50 replayed sessions).
//   - bundle size: /sdk/v1/storefront-sdk.js as served, raw and gzipped (goal ≤ 15 KB gzipped);
//   - keystroke → suggestions painted in the shop (headless chromium): from the key press (the keydown
//     event's timeStamp, recorded by a capturing listener the bench installs before the page's scripts) to
//     the frame after the suggestion list was drawn, each keystroke of the demo's trending prefix, 40
//     rounds (goal p95 ≤ 50 ms on loopback); baseline in the same run: GET /search/complete from Node;
//   - events lost across 100 page navigations: one shopper opens 100 product pages in a row, each leaving
//     before the 1 s batch timer (so every page's product_view goes out with the pagehide beacon or the
//     next page's retry); the product_view rows of that session in ClickHouse are counted (goal 0 lost).
// Printed next to the goals (never asserted), and written to bench/out/latest.json under "sdk".
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { DEMO_SUGGEST_PREFIX } from '../services/demo/module.ts';
import { SDK_BUNDLE_PATH } from '../services/sdk/version.ts';
import { startDemoApp } from './demo-app.ts';
import { recordFigures } from './out.ts';

const ROUNDS = Number(process.env.BENCH_SDK_ROUNDS ?? 40);
const NAVIGATIONS = Number(process.env.BENCH_SDK_NAVIGATIONS ?? 100);
const USER_AGENT = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const line = (label: string, value: string) => process.stdout.write(`  ${label.padEnd(58)} ${value}\n`);

const app = await startDemoApp({ products: 200, sessions: 50 });
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  // the shopper's agent on the browser too: a context's override misses the sendBeacon of `pagehide`
  args: [
    '--no-sandbox',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    `--user-agent=${USER_AGENT}`,
  ],
});
try {
  const [, shopUrl] = await app.waitFor(/Demo shop \(storefront SDK\):\n\s+(\S+)\n/, 180_000);
  await app.waitFor(/demo: shopper sessions replayed/, 1_800_000);
  const base = `http://127.0.0.1:${app.http}`;
  const { token, storeId } = app.loaded();

  // --- bundle size ---------------------------------------------------------------------------------
  const js = await (await fetch(`${base}${SDK_BUNDLE_PATH}`)).text();
  const gz = gzipSync(js, { level: 9 }).length;
  line('SDK + tracking bundle, raw', `${(js.length / 1024).toFixed(1)} KB`);
  line('SDK + tracking bundle, gzipped (goal ≤ 15 KB)', `${(gz / 1024).toFixed(2)} KB`);

  // --- keystroke → suggestions painted ---------------------------------------------------------------
  const api = (q: string) =>
    fetch(`${base}/api/storefront/v1/search/complete?query=${encodeURIComponent(q)}&limit=8`, {
      headers: { 'x-storefront-access-token': token },
    });
  const http: number[] = [];
  for (let i = 0; i < ROUNDS; i++)
    for (let n = 1; n <= DEMO_SUGGEST_PREFIX.length; n++) {
      const t0 = performance.now();
      await (await api(DEMO_SUGGEST_PREFIX.slice(0, n))).json();
      http.push(performance.now() - t0);
    }
  const context = await browser.newContext({ userAgent: USER_AGENT });
  const page = await context.newPage();
  // the key press: a capturing keydown listener on the window, before any script of the page, keeps each
  // event's timeStamp (when the browser took the key, on the clock of performance.now()) — the timer
  // starts there, not in the shop's input handler after the key was processed
  await page.addInitScript(
    'window.__keydown = []; addEventListener("keydown", (e) => window.__keydown.push(e.timeStamp), true);',
  );
  await page.goto(shopUrl);
  await page.waitForFunction('document.body.dataset.ready === "1"');
  const input = page.locator('#search input');
  const painted: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    await input.fill('');
    await page.waitForTimeout(20);
    for (const ch of DEMO_SUGGEST_PREFIX) {
      const [keys, draws] = (await page.evaluate('[window.__keydown.length, window.shop.metrics.painted.length]')) as [
        number,
        number,
      ];
      await input.press(ch === ' ' ? 'Space' : ch);
      await page.waitForFunction(
        `window.__keydown.length === ${keys + 1} && window.shop.metrics.painted.length > ${draws}`,
      );
      // this key's press → the frame after its suggestions were drawn
      painted.push((await page.evaluate('window.shop.metrics.painted.at(-1) - window.__keydown.at(-1)')) as number);
    }
  }
  await context.close();
  line(
    `autocomplete HTTP from Node (baseline), ${http.length} calls`,
    `p50 ${pct(http, 50).toFixed(1)} ms  p95 ${pct(http, 95).toFixed(1)} ms`,
  );
  line(
    `keystroke → suggestions painted, ${painted.length} keystrokes (goal p95 ≤ 50)`,
    `p50 ${pct(painted, 50).toFixed(1)} ms  p95 ${pct(painted, 95).toFixed(1)} ms  (p95 ${(pct(painted, 95) / pct(http, 95)).toFixed(2)}× the HTTP p95)`,
  );

  // --- events lost across page navigations -----------------------------------------------------------
  const nav = await browser.newContext({ userAgent: USER_AGENT });
  const p = await nav.newPage();
  // published products (members of a collection), so every page shows its product and sends product_view
  const ids = app.loaded().store.collections[0].product_ids.slice(0, 20).map(String);
  let shown = 0;
  await p.goto(`${shopUrl}/products/${ids[0]}`);
  await p.waitForFunction('document.body.dataset.ready === "1"');
  shown += await p.locator('article.pdp').count();
  const session = (await p.evaluate('window.shop.tracker.sessionId')) as string;
  const t0 = performance.now();
  for (let i = 1; i < NAVIGATIONS; i++) {
    await p.goto(`${shopUrl}/products/${ids[i % ids.length]}`);
    await p.waitForFunction('document.body.dataset.ready === "1"');
    shown += await p.locator('article.pdp').count();
  }
  const navMs = (performance.now() - t0) / (NAVIGATIONS - 1);
  await p.goto('about:blank');
  await nav.close();
  const count = async () => {
    const qs = new URLSearchParams({ param_s: storeId, param_sess: session });
    const r = await fetch(`http://127.0.0.1:${app.clickhouse}/?${qs}`, {
      method: 'POST',
      body: "SELECT count() AS n, uniqExact(event_id) AS u FROM discovery.events_raw WHERE store_id = {s:String} AND session_id = {sess:String} AND event_type = 'product_view' FORMAT JSONEachRow",
    });
    return JSON.parse(await r.text()) as { n: string; u: string };
  };
  let seen = { n: '0', u: '0' };
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    seen = await count();
    if (Number(seen.u) >= shown) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const lost = shown - Number(seen.u);
  line(`page navigations (product pages), mean per page`, `${NAVIGATIONS} × ${navMs.toFixed(0)} ms`);
  line(
    'product_view events lost (goal 0)',
    `${lost}  (${shown} pages showed a product; rows ${seen.n}, distinct ids ${seen.u})`,
  );

  recordFigures('sdk', {
    bundleBytes: js.length,
    bundleGzipBytes: gz,
    autocompleteHttpP50Ms: pct(http, 50),
    autocompleteHttpP95Ms: pct(http, 95),
    suggestPaintedP50Ms: pct(painted, 50),
    suggestPaintedP95Ms: pct(painted, 95),
    keystrokes: painted.length,
    navigations: NAVIGATIONS,
    navigationMs: navMs,
    productPages: shown,
    eventsLost: lost,
    eventRows: Number(seen.n),
  });
} finally {
  await browser.close();
  process.stdout.write(`  stack output: ${await app.stop('sdk-bench-stack.log')}\n`);
}
