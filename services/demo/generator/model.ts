// The demo store's shapes, options, id spaces and small helpers, shared by the generator's sections
// (generator.ts composes them and re-exports this module).
import type {
  B2bCatalogInput,
  PriceInput,
  ShopifyCollectionInput,
  ShopifyContentInput,
  ShopifyMetaobjectInput,
  ShopifyProductInput,
} from '../../../schemas/catalog.ts';
import type { ConfigInput } from '../../../schemas/config.ts';
import type { Rng } from './prng.ts';
import type { ColorSpec, ProductTypeSpec } from './vocab.ts';

// ------------------------------------------------------------------------------------------------
// options and shapes

export interface DemoOptions {
  seed?: string | number;
  /** number of products (default 10 000; 100k+ works) */
  products?: number;
  /** number of simulated shopper sessions (default 3 000) */
  sessions?: number;
  /** epoch ms the catalog's dates are relative to (default 2026-01-01T00:00:00Z) */
  anchorMs?: number;
  /** where product images are served (the app's /demo/images route) */
  imageBaseUrl?: string;
}

export type ResolvedDemoOptions = Required<DemoOptions> & { seed: string };

export const DEFAULT_SEED = 'demo';
export const DEFAULT_PRODUCTS = 10_000;
export const DEFAULT_SESSIONS = 3_000;
export const DEFAULT_ANCHOR_MS = Date.UTC(2026, 0, 1);
export const DEFAULT_IMAGE_BASE_URL = 'http://127.0.0.1:3000/demo/images';
export const IMAGE_SIZE = 512;

/** The compact description a product is built from (the rest is derived from its own PRNG stream). */
export interface ProductMeta {
  index: number;
  productId: string;
  type: ProductTypeSpec;
  material: string;
  colors: ColorSpec[];
  line: string;
  style: string;
  vendor: string;
  /** base price in USD (major units) */
  price: number;
  compareAt: number | null;
  /** 0 = most popular */
  popularityRank: number;
  createdMs: number;
  /** null = not published to the online store */
  publishedMs: number | null;
  status: 'active' | 'draft';
  /** 0-3: picks the image pattern */
  pattern: number;
}

export type SimStep =
  | { t: number; eventId: string; type: 'autocomplete'; typed: string }
  | { t: number; eventId: string; type: 'autocomplete_click'; typed: string; query: string; position: number }
  | { t: number; eventId: string; type: 'search'; query: string; source: 'typed' | 'autocomplete' }
  | { t: number; eventId: string; type: 'product_click'; productId: string; position: number; query: string | null }
  | { t: number; eventId: string; type: 'product_view'; productId: string; variantId: string }
  | { t: number; eventId: string; type: 'collection_view'; handle: string }
  | {
      t: number;
      eventId: string;
      type: 'content_view';
      contentType: 'article' | 'page';
      contentId: string;
      handle: string;
    }
  | {
      t: number;
      eventId: string;
      type: 'add_to_cart';
      productId: string;
      variantId: string;
      price: string;
      quantity: number;
    }
  | { t: number; eventId: string; type: 'purchase'; orderId: string; lines: OrderLine[]; total: string };

export interface OrderLine {
  productId: string;
  variantId: string;
  quantity: number;
  /** unit price, USD decimal string */
  price: string;
}

export type SessionKind = 'cluster' | 'search' | 'learned' | 'trending' | 'bundle' | 'browse';

export interface SimSession {
  index: number;
  kind: SessionKind;
  sessionId: string;
  deviceId: string;
  customerId: string | null;
  market: 'us' | 'eu';
  /** X-Forwarded-For the replay sends (geo) */
  ip: string;
  userAgent: string;
  /** offset of the first step, ms relative to the replay start (negative = past) */
  start: number;
  steps: SimStep[];
}

export interface GroundTruth {
  seed: string;
  /** groups of products viewed together; every pair of a cluster co-occurs in ≥ `sessions` sessions */
  coViewClusters: { id: number; productIds: string[]; sessions: number }[];
  /** planted queries: `relevant` = products matching type and material/colour; `engaged` = products
   *  the planted sessions clicked (most relevant first); `sessions` = sessions that searched it */
  queries: {
    query: string;
    productType: string;
    attribute: string;
    relevant: string[];
    engaged: string[];
    sessions: number;
  }[];
  /** a query nobody searched before, searched by `sessions` distinct sessions within the last `windowMinutes` */
  trending: { query: string; sessions: number; windowMinutes: number; relevant: string[] };
  /** complementary products bought together in `orders` orders (every product of the bundle in each order) */
  bundles: { id: number; productIds: string[]; orders: number }[];
  /** queries whose words no product text contains, searched by `sessions` sessions that then viewed and
   *  carted `engaged` (most preferred first): only the learned expansion can answer them */
  learnedQueries: { query: string; engaged: string[]; sessions: number }[];
  /** the relevance evaluation: planted queries as typed (exact), in the other number (plural), with one
   *  typo (misspelled), through a configured synonym, narrowed by a third word (multi_word), and the learned
   *  queries; `engaged` products are judged 2, the other `relevant` ones 1 */
  searchEval: {
    query: string;
    kind: 'exact' | 'plural' | 'misspelled' | 'synonym' | 'multi_word' | 'learned';
    relevant: string[];
    engaged: string[];
  }[];
}

export interface DemoStore {
  options: ResolvedDemoOptions;
  productCount: number;
  sessionCount: number;
  meta(i: number): ProductMeta;
  /** the Shopify-shaped product (bulk-import object) of product `i` */
  product(i: number): ShopifyProductInput & { id: string };
  products(): Generator<ShopifyProductInput & { id: string }>;
  collections: (ShopifyCollectionInput & { id: string; handle: string; product_ids: string[] })[];
  articles: (ShopifyContentInput & { id: string; handle: string })[];
  pages: (ShopifyContentInput & { id: string; handle: string })[];
  /** swatch metaobjects, one per colour (metaobjects.ts); products reference them from `shopify.color-pattern` */
  metaobjects: (ShopifyMetaobjectInput & { id: string; type: string; handle: string })[];
  markets: ConfigInput<'market'>[];
  /** market (EUR) and B2B (wholesale) price-list entries of one product */
  pricesOf(product: ShopifyProductInput & { id: string }): PriceInput[];
  /** every product's price-list entries */
  prices(): Generator<PriceInput>;
  b2b: {
    catalog: B2bCatalogInput;
    companyLocation: ConfigInput<'b2b_company_location'>;
    customer: ConfigInput<'b2b_customer'>;
  };
  config: {
    sort_order: ConfigInput<'sort_order'>[];
    block: ConfigInput<'block'>[];
    redirect_term: ConfigInput<'redirect_term'>[];
    synonym: ConfigInput<'synonym'>[];
    merch_rule: ConfigInput<'merch_rule'>[];
    variant_breakout: ConfigInput<'variant_breakout'>[];
  };
  session(i: number): SimSession;
  sessions(from?: number): Generator<SimSession>;
  /** the orders the sessions placed (Shopify-shaped; `created_at` needs the replay start, see orderInput) */
  groundTruth: GroundTruth;
}

// ------------------------------------------------------------------------------------------------
// ids (Shopify-like numeric ids; stable for a product index)

export const PRODUCT_ID_BASE = 9_000_000_000;
export const VARIANT_ID_BASE = 40_000_000_000;
export const INVENTORY_ITEM_BASE = 50_000_000_000;
export const IMAGE_ID_BASE = 60_000_000_000;
export const COLLECTION_ID_BASE = 3_000_000_000;
export const ARTICLE_ID_BASE = 5_100_000_000;
export const PAGE_ID_BASE = 5_200_000_000;
export const ORDER_ID_BASE = 6_000_000_000;
export const BLOG_ID = '8800000001';
export const MAX_VARIANTS = 16;

export const productIdOf = (i: number) => String(PRODUCT_ID_BASE + i + 1);
export const productIndexOf = (id: string) => Number(id) - PRODUCT_ID_BASE - 1;
export const variantIdOf = (i: number, v: number) => String(VARIANT_ID_BASE + i * MAX_VARIANTS + v + 1);

export const DEMO_COMPANY_LOCATION_GID = 'gid://shopify/CompanyLocation/7700000001';
export const DEMO_COMPANY_ID = '7700000100';
export const DEMO_B2B_CUSTOMER_ID = '7700000200';
export const DEMO_B2B_CATALOG_ID = 'b2b-wholesale';
export const DEMO_WHOLESALE_PRICE_LIST = 'pl-wholesale';
export const DEMO_EU_PRICE_LIST = 'pl-eu';
/** the merchandising rule on DEMO_MERCH_COLLECTION (pins, a boost, banners) and the variant breakout by colour */
export const DEMO_MERCH_RULE_ID = '01JDDEM0000000000000000R01';
export const DEMO_MERCH_COLLECTION = 'summer-edit';
export const DEMO_BREAKOUT_COLLECTION = 'footwear';
/** block ids (fixed ULIDs, so the storefront examples in docs/demo.md work on every demo store) */
export const DEMO_BLOCKS = {
  bestSellers: '01JDDEM0000000000000000B01',
  trendingNow: '01JDDEM0000000000000000B02',
  newArrivals: '01JDDEM0000000000000000B03',
  alsoViewed: '01JDDEM0000000000000000B04',
  boughtTogether: '01JDDEM0000000000000000B05',
} as const;

export const DAY = 24 * 60 * 60 * 1000;
export const HOUR = 60 * 60 * 1000;
export const MINUTE = 60 * 1000;

export const money = (n: number) => n.toFixed(2);
/** retail-looking prices: 19.00, 24.95, 129.00 … */
export function retail(n: number, rng: Rng): number {
  const whole = Math.max(1, Math.round(n));
  return rng.chance(0.5) ? whole : whole - 0.05;
}
export const slug = (s: string) =>
  s
    .toLowerCase()
    .replace(/&/g, 'and')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');

// ------------------------------------------------------------------------------------------------
// the generator

export function resolveDemoOptions(opts: DemoOptions = {}): ResolvedDemoOptions {
  const products = opts.products ?? DEFAULT_PRODUCTS;
  const sessions = opts.sessions ?? DEFAULT_SESSIONS;
  if (!Number.isInteger(products) || products < 50) throw new RangeError('products must be an integer ≥ 50');
  if (!Number.isInteger(sessions) || sessions < 50) throw new RangeError('sessions must be an integer ≥ 50');
  return {
    seed: String(opts.seed ?? DEFAULT_SEED),
    products,
    sessions,
    anchorMs: opts.anchorMs ?? DEFAULT_ANCHOR_MS,
    imageBaseUrl: (opts.imageBaseUrl ?? DEFAULT_IMAGE_BASE_URL).replace(/\/+$/, ''),
  };
}
