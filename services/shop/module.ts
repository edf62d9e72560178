// The demo shop, as a module of the app: plain pages under /shop driven only by the storefront SDK, which
// the app serves as one ES module at a stable versioned URL (/sdk/v1/storefront-sdk.js, bundled from
// services/sdk at first request). The shop runs on the demo store: its storefront token is put in the
// page only when DATA_DIR/demo-store.json (written by the demo module) names a store; without it the
// pages say how to get one. `npm start` prints the shop's URL.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext, AppModule } from '../app/context.ts';
import { DEMO_FREE_SHIPPING_BLOCK } from '../demo/generator/config.ts';
import { readDemoState } from '../demo/generator/load.ts';
import { DEMO_BLOCKS, DEMO_MERCH_COLLECTION } from '../demo/generator/model.ts';
import { sdkBundle } from '../sdk/bundle.ts';
import { SDK_BUNDLE_PATH, SDK_VERSION } from '../sdk/version.ts';

const STATIC = path.join(import.meta.dirname, 'static');
const ASSETS: Record<string, string> = { 'shop.js': 'text/javascript', 'shop.css': 'text/css' };
/** the demo store's browsable collections (services/demo/generator/collections.ts) */
export const SHOP_COLLECTIONS = [
  { handle: DEMO_MERCH_COLLECTION, title: 'Summer Edit' },
  { handle: 'new-arrivals', title: 'New Arrivals' },
  { handle: 'apparel', title: 'Apparel' },
  { handle: 'footwear', title: 'Footwear' },
  { handle: 'accessories', title: 'Accessories' },
  { handle: 'home', title: 'Home' },
  { handle: 'beauty', title: 'Beauty' },
];
/** free shipping from this cart total (major units), sent as context.freeShippingThreshold */
export const FREE_SHIPPING_THRESHOLD = 75;

export interface ShopOptions {
  /** the demo store's token, or undefined when there is none (read per request: the demo module may write it later) */
  token(): Promise<string | undefined>;
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

export function shopPage(config: Record<string, unknown> | undefined): string {
  const json = JSON.stringify(config ?? null).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Demo shop</title>
<link rel="modulepreload" href="${SDK_BUNDLE_PATH}"><link rel="stylesheet" href="/shop/assets/shop.css">
<script id="shop-config" type="application/json">${json}</script>
<script type="module" src="/shop/assets/shop.js"></script>
</head><body>
<header><a class="logo" href="/shop">Demo shop</a>
<form id="search" action="/shop/search" role="search" autocomplete="off"><input name="q" type="search" placeholder="Search products" aria-label="Search" aria-autocomplete="list" aria-controls="suggestions"><ul id="suggestions" role="listbox" hidden></ul></form>
<nav>${SHOP_COLLECTIONS.map((c) => `<a href="/shop/collections/${c.handle}">${escapeHtml(c.title)}</a>`).join('')}<a href="/shop/content">Journal</a><a id="cart-link" href="/shop/cart">Cart (<span data-cart-count>0</span>)</a></nav>
</header>
<main id="main">${config ? '<p class="loading">Loading…</p>' : '<h1>No demo store</h1><p>The demo shop runs on the demo store: start the stack with <code>DEMO_STORE=true</code> (the default of <code>npm start</code>).</p>'}</main>
<footer>Storefront SDK ${SDK_VERSION} · <a href="${SDK_BUNDLE_PATH}">${SDK_BUNDLE_PATH}</a></footer>
</body></html>`;
}

export async function shopPlugin(app: FastifyInstance, opts: ShopOptions) {
  app.get(SDK_BUNDLE_PATH, async (_req, reply) => {
    const js = await sdkBundle();
    return reply
      .header('content-type', 'text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .header('access-control-allow-origin', '*')
      .send(js);
  });
  const assets = new Map<string, Promise<Buffer>>();
  app.get<{ Params: { name: string } }>('/shop/assets/:name', async (req, reply) => {
    const type = ASSETS[req.params.name];
    if (!type) return reply.code(404).send({ error: { code: 'not_found', message: 'no such asset', fields: [] } });
    let body = assets.get(req.params.name);
    if (!body) assets.set(req.params.name, (body = readFile(path.join(STATIC, req.params.name))));
    return reply
      .header('content-type', `${type}; charset=utf-8`)
      .header('cache-control', 'no-cache')
      .send(await body);
  });
  const page = async (reply: FastifyReply) => {
    const token = await opts.token();
    const config = token
      ? {
          token,
          baseUrl: '',
          blocks: { ...DEMO_BLOCKS, freeShippingPicks: DEMO_FREE_SHIPPING_BLOCK },
          collections: SHOP_COLLECTIONS,
          freeShippingThreshold: FREE_SHIPPING_THRESHOLD,
        }
      : undefined;
    return reply
      .code(token ? 200 : 503)
      .header('content-type', 'text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(shopPage(config));
  };
  app.get('/shop', (_req, reply) => page(reply));
  app.get('/shop/*', (_req, reply) => page(reply));
}

export const shopModule: AppModule = {
  name: 'shop',
  async start(ctx: AppContext) {
    const { config } = ctx;
    // the demo state file is re-read at most once a second (the demo module writes it at its first start)
    let cached: { at: number; token: Promise<string | undefined> } | undefined;
    const token = () => {
      if (!cached || Date.now() - cached.at > 1000)
        cached = {
          at: Date.now(),
          token: readDemoState(config.dataDir).then(
            (s) => s?.token,
            () => undefined,
          ),
        };
      return cached.token;
    };
    await ctx.http.register(shopPlugin, { token });
    if (config.DEMO_STORE) {
      const host = config.HOST === '0.0.0.0' || config.HOST === '::' || config.HOST === '' ? '127.0.0.1' : config.HOST;
      ctx.announce('shop', `http://${host}:${config.HTTP_PORT}/shop`);
    }
  },
};
