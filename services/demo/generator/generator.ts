// The demo store generator: a realistic store (products with options, variants and prices, vendors,
// types, tags, collections with ordered membership, articles and pages, a US and an EU market with EUR
// prices, a B2B catalog with a company location and a customer, store configuration) and simulated
// shopper sessions with *planted ground truth*:
//
// - co-view clusters: groups of products that the same sessions view together (comparison shopping);
// - queries → relevant products: searches whose shoppers click products of the matching type and
//   material/colour (graded: clicked products are the most relevant);
// - a trending burst: a query nobody searched before, searched by many distinct sessions in the last hour;
// - bundles: groups of complementary products bought together in orders.
//
// Everything is a pure function of the seed (services/demo/generator/prng.ts; never Math.random) and of the options,
// so tests and benchmarks can measure relevance and recommendation quality against `groundTruth` as
// numbers. Products and sessions are built lazily from small per-item specs, each from its own PRNG
// stream, so 100k products generate in seconds and a replay can resume at any session.
//
// Times: catalog dates are absolute, relative to `anchorMs` (the store's creation time, persisted by the
// loader so a restart regenerates the same store); session and step times are offsets in ms relative to
// the moment the replay starts (negative = in the past), which the loader turns into timestamps.
import { createHash } from 'node:crypto';
import type { ShopifyOrderInput } from '../../../schemas/catalog.ts';
import { type DemoOptions, type SimStep, type SimSession, type DemoStore, resolveDemoOptions } from './model.ts';
import { demoBase } from './base.ts';
import { demoCollections } from './collections.ts';
import { demoCommerce } from './commerce.ts';
import { demoConfig } from './config.ts';
import { demoContent } from './content.ts';
import { demoMetaobjects } from './metaobjects.ts';
import { demoPlan } from './plan.ts';
import { productBuilder } from './products.ts';
import { sessionBuilder } from './sessions.ts';

export * from './model.ts';

// ------------------------------------------------------------------------------------------------
// the generator: its sections in the order they draw from the seed (base, content, plan; products and
// sessions each from their own stream when asked for)

export function generateDemoStore(opts: DemoOptions = {}): DemoStore {
  const o = resolveDemoOptions(opts);
  const base = demoBase(o);
  const product = productBuilder(base);
  const collections = demoCollections(base);
  const { articles, pages } = demoContent(base);
  const { markets, pricesOf, b2b } = demoCommerce(base, collections);
  const config = demoConfig(base, collections);
  const plan = demoPlan(base);
  const session = sessionBuilder(base, plan, collections, articles);
  const { metas, n } = base;
  const { sessionCount, groundTruth } = plan;

  return {
    options: o,
    productCount: n,
    sessionCount,
    meta: (i) => metas[i],
    product,
    *products() {
      for (let i = 0; i < n; i++) yield product(i);
    },
    collections,
    articles,
    pages,
    metaobjects: demoMetaobjects(o),
    markets,
    pricesOf,
    *prices() {
      for (let i = 0; i < n; i++) yield* pricesOf(product(i));
    },
    b2b,
    config,
    session,
    *sessions(from = 0) {
      for (let i = from; i < sessionCount; i++) yield session(i);
    },
    groundTruth,
  };
}

/** The order a purchase step places, Shopify-shaped (bulk import `order` line), timed at `replayStartMs + step.t`. */
export function orderInput(
  s: SimSession,
  step: Extract<SimStep, { type: 'purchase' }>,
  replayStartMs: number,
): ShopifyOrderInput {
  const at = new Date(replayStartMs + step.t).toISOString();
  return {
    id: step.orderId,
    customer: s.customerId ? { id: s.customerId } : null,
    note_attributes: [{ name: 'session_id', value: s.sessionId }],
    created_at: at,
    updated_at: at,
    processed_at: at,
    cancelled_at: null,
    currency: 'USD',
    total_price: step.total,
    test: false,
    line_items: step.lines.map((l) => ({
      product_id: l.productId,
      variant_id: l.variantId,
      quantity: l.quantity,
      price: l.price,
    })),
  };
}

/**
 * SHA-256 over everything the generator produces for these options (products, collections, content,
 * markets, prices, B2B, configuration, sessions, ground truth): the determinism check.
 */
export function demoHash(store: DemoStore): string {
  const h = createHash('sha256');
  const put = (label: string, v: unknown) => {
    h.update(label);
    h.update(JSON.stringify(v));
    h.update('\n');
  };
  for (const p of store.products()) put('p', p);
  put('c', store.collections);
  put('a', store.articles);
  put('g', store.pages);
  put('o', store.metaobjects);
  put('m', store.markets);
  for (const pr of store.prices()) put('$', pr);
  put('b', store.b2b);
  put('k', store.config);
  for (const s of store.sessions()) put('s', s);
  put('t', store.groundTruth);
  return h.digest('hex');
}
