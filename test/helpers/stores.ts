// Stores for stack tests: `createTestStore()` writes a new store (and optional configuration) through the
// store-config writer against the running stack and waits until the app's directory has applied it, so
// the returned token authenticates at once.
//
//   const { storeId, token } = await createTestStore({ name: 'search test', items: { sort_order: [...] } });
//   // later changes: const w = testStoreWriter(); await w.putConfig(storeId, 'block', {...}); await waitForApp(w);
import pino from 'pino';
import { type ConfigInput, type ConfigKind, STRATEGY_KEYS } from '../../schemas/config.ts';
import {
  type ConfigWriter,
  openConfigWriter,
  type StoreSettingsPatch,
  type WriteResult,
} from '../../services/store-config/writer.ts';
import { stack } from './stack.ts';

let shared: ConfigWriter | undefined;

/** One writer per test file (worker), connected to the running stack; closed when the worker exits. */
export function testStoreWriter(): ConfigWriter {
  if (!shared) {
    const s = stack();
    shared = openConfigWriter({
      brokers: s.kafkaBrokers,
      registryUrl: s.schemaRegistryUrl,
      clientId: `test-writer-${process.pid}`,
      logger: pino({ level: process.env.TEST_LOG ?? 'error' }),
    });
  }
  return shared;
}

export async function closeTestStoreWriter(): Promise<void> {
  const w = shared;
  shared = undefined;
  await w?.close();
}

/** Wait until the app's store directory applied `write` (default: the writer's last write). */
export async function waitForApp(writerOrWrite: ConfigWriter | WriteResult, timeoutMs = 15_000): Promise<void> {
  const w = 'offset' in writerOrWrite ? writerOrWrite : writerOrWrite.lastWritten();
  if (!w) return;
  const deadline = Date.now() + timeoutMs;
  const base = stack().httpUrl;
  while (Date.now() < deadline) {
    const res = await fetch(
      `${base}/internal/store-config/caught-up?partition=${w.partition}&offset=${w.offset}&wait_ms=2000`,
    );
    if (res.ok && ((await res.json()) as { caught_up: boolean }).caught_up) return;
    if (!res.ok && res.status !== 404 && res.status !== 503)
      throw new Error(`caught-up endpoint answered ${res.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the app did not apply store-config offset ${w.offset} within ${timeoutMs} ms`);
}

export interface TestStoreOptions {
  name?: string;
  storeId?: string;
  /** store settings applied after creation (market mode, autocomplete mode, media preloads, …) */
  settings?: StoreSettingsPatch;
  /** configuration items to write, by kind (markets are written first, so settings can name one) */
  items?: { [K in ConfigKind]?: ConfigInput<K>[] };
}

export async function createTestStore(
  opts: TestStoreOptions = {},
): Promise<{ storeId: string; token: string; tokenId: string }> {
  const w = testStoreWriter();
  const created = await w.createStore({ name: opts.name ?? `test store ${process.pid}`, storeId: opts.storeId });
  const items = opts.items ?? {};
  const kinds = Object.keys(items).sort((a, b) => (a === 'market' ? -1 : b === 'market' ? 1 : 0)) as ConfigKind[];
  for (const kind of kinds) {
    for (const item of items[kind] ?? []) await w.putConfig(created.storeId, kind, item);
  }
  if (opts.settings) await w.updateStore(created.storeId, opts.settings);
  await waitForApp(w);
  return { storeId: created.storeId, token: created.token, tokenId: created.tokenId };
}

// ---------------------------------------------------------------------------------------------------
// one valid sample of every item kind (ids fixed so tests can refer to them)

export const SAMPLE_BLOCK_ID = '01JD0000000000000000000001';
export const SAMPLE_FALLBACK_BLOCK_ID = '01JD0000000000000000000002';

export function sampleItems(): { [K in ConfigKind]?: ConfigInput<K>[] } {
  return {
    market: [
      { code: 'us', name: 'United States', market_id: '1001', countries: ['us'], currency: 'usd', price_list_id: null },
    ],
    sort_order: [
      {
        code: 'newest',
        nickname: 'Newest',
        scope: 'both',
        expressions: [{ attribute: 'published_at', direction: 'desc' }],
      },
      {
        code: 'best_selling',
        nickname: 'Best selling',
        scope: 'collection',
        expressions: [
          { attribute: 'revenue_7d', direction: 'desc', weight: 70 },
          { attribute: 'available', direction: 'desc', boost: { mode: 'multiplicative', factor: 1.5 } },
        ],
      },
    ],
    block: [
      { id: SAMPLE_FALLBACK_BLOCK_ID, title: 'Best sellers', anchor_type: 'none', strategy_key: 'best_sellers' },
      {
        id: SAMPLE_BLOCK_ID,
        title: 'Frequently bought together',
        anchor_type: 'product',
        strategy_type: STRATEGY_KEYS.frequently_bought_together,
        strategy_key: 'frequently_bought_together',
        rules: [
          {
            name: 'hide for bots',
            conditions: {
              conditional: 'AND',
              expressions: [{ property: 'device_type', operator: 'eq', values: ['bot'] }],
            },
            actions: [{ type: 'hide_block' }],
          },
        ],
        safeguards: { min_products: 2, max_products: 8, hide_out_of_stock: true, personalization_strength: 0.3 },
        fallback: [{ block_id: SAMPLE_FALLBACK_BLOCK_ID, mode: 'fill' }],
        priority: 10,
        status: 'published',
      },
    ],
    merch_rule: [
      {
        id: '01JD0000000000000000000010',
        name: 'Summer shoes',
        collection_handle: 'shoes',
        sort_order_code: 'best_selling',
        pins: [{ product_id: '4242', position: 1 }],
        boosts: [
          {
            match: { conditional: 'AND', expressions: [{ property: 'vendor', operator: 'eq', values: ['Acme'] }] },
            factor: 1.4,
          },
        ],
        banners: [
          {
            id: '01JD0000000000000000000011',
            name: 'Hero',
            mode: 'inject',
            link: '/collections/sale',
            web_media: { src: 'https://cdn.example.com/hero.jpg', alt: 'Sale' },
            mobile_media: { src: 'https://cdn.example.com/hero-m.jpg', alt: 'Sale' },
            web_layout: { placement: 'hero' },
            mobile_layout: { placement: 'inline', width: 1, height: 1, position: 3 },
          },
        ],
        schedule: { start_at: '2026-06-01T00:00:00Z', end_at: '2026-09-01T00:00:00Z' },
      },
    ],
    search_rule: [
      {
        id: '01JD0000000000000000000020',
        name: 'Sneakers means trainers',
        targeting: { query_match: 'exact', queries: ['sneakers'] },
        actions: [
          { type: 'replace_query', query: 'trainers' },
          { type: 'future_action', anything: 1 },
        ],
      },
    ],
    redirect_term: [{ term: 'Gift Cards', url: '/products/gift-card', match: 'exact' }],
    synonym: [
      { id: 'tees', type: 'two_way', terms: ['t-shirt', 'tee'] },
      { id: 'pants', type: 'one_way', term: 'pants', synonyms: ['trousers', 'chinos'] },
    ],
    variant_breakout: [
      {
        id: 'color',
        name: 'Colour breakout',
        option_code: 'Color',
        applies: 'collections',
        include_option_value_in_title: false,
      },
    ],
    autocomplete_curation: [
      { query: 'cheap knockoff', allowed: false },
      { query: 'tshirt', allowed: true, display_label: 'T-shirts' },
    ],
    b2b_company_location: [
      {
        gid: 'gid://shopify/CompanyLocation/555',
        company_id: '77',
        catalog_id: 'catalog-b2b',
        price_list_id: 'pl-wholesale',
      },
    ],
    b2b_customer: [{ customer_id: 'gid://shopify/Customer/9001', company_ids: ['77'] }],
    ranking_rule: [
      {
        id: '01JD0000000000000000000030',
        name: 'Pin the classic',
        queries: ['Boots'],
        type: 'pin',
        product_ids: ['1234'],
        status: 'published',
      },
    ],
  };
}
