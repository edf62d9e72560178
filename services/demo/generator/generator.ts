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
import type {
  B2bCatalogInput,
  PriceInput,
  ShopifyCollectionInput,
  ShopifyContentInput,
  ShopifyOrderInput,
  ShopifyProductInput,
} from '../../../schemas/catalog.ts';
import type { ConfigInput } from '../../../schemas/config.ts';
import { Rng } from './prng.ts';
import {
  BUNDLE_TEMPLATES,
  BURST_LINE,
  COLORS,
  type ColorSpec,
  LINES,
  LOCATIONS,
  PRODUCT_TYPES,
  type ProductTypeSpec,
  SHOPPER_IPS,
  STYLES,
  USER_AGENTS,
  VENDORS,
} from './vocab.ts';

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

export type SessionKind = 'cluster' | 'search' | 'trending' | 'bundle' | 'browse';

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
  };
  session(i: number): SimSession;
  sessions(from?: number): Generator<SimSession>;
  /** the orders the sessions placed (Shopify-shaped; `created_at` needs the replay start, see orderInput) */
  groundTruth: GroundTruth;
}

// ------------------------------------------------------------------------------------------------
// ids (Shopify-like numeric ids; stable for a product index)

const PRODUCT_ID_BASE = 9_000_000_000;
const VARIANT_ID_BASE = 40_000_000_000;
const INVENTORY_ITEM_BASE = 50_000_000_000;
const IMAGE_ID_BASE = 60_000_000_000;
const COLLECTION_ID_BASE = 3_000_000_000;
const ARTICLE_ID_BASE = 5_100_000_000;
const PAGE_ID_BASE = 5_200_000_000;
const ORDER_ID_BASE = 6_000_000_000;
const BLOG_ID = '8800000001';
const MAX_VARIANTS = 16;

export const productIdOf = (i: number) => String(PRODUCT_ID_BASE + i + 1);
export const productIndexOf = (id: string) => Number(id) - PRODUCT_ID_BASE - 1;
const variantIdOf = (i: number, v: number) => String(VARIANT_ID_BASE + i * MAX_VARIANTS + v + 1);

export const DEMO_COMPANY_LOCATION_GID = 'gid://shopify/CompanyLocation/7700000001';
export const DEMO_COMPANY_ID = '7700000100';
export const DEMO_B2B_CUSTOMER_ID = '7700000200';
export const DEMO_B2B_CATALOG_ID = 'b2b-wholesale';
export const DEMO_WHOLESALE_PRICE_LIST = 'pl-wholesale';
export const DEMO_EU_PRICE_LIST = 'pl-eu';
/** block ids (fixed ULIDs, so the storefront examples in docs/demo.md work on every demo store) */
export const DEMO_BLOCKS = {
  bestSellers: '01JDDEM0000000000000000B01',
  trendingNow: '01JDDEM0000000000000000B02',
  newArrivals: '01JDDEM0000000000000000B03',
  alsoViewed: '01JDDEM0000000000000000B04',
  boughtTogether: '01JDDEM0000000000000000B05',
} as const;

const DAY = 24 * 60 * 60 * 1000;
const HOUR = 60 * 60 * 1000;
const MINUTE = 60 * 1000;

const money = (n: number) => n.toFixed(2);
/** retail-looking prices: 19.00, 24.95, 129.00 … */
function retail(n: number, rng: Rng): number {
  const whole = Math.max(1, Math.round(n));
  return rng.chance(0.5) ? whole : whole - 0.05;
}
const slug = (s: string) =>
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

export function generateDemoStore(opts: DemoOptions = {}): DemoStore {
  const o = resolveDemoOptions(opts);
  const root = new Rng(o.seed);
  const n = o.products;

  // --- product metas (one pass, small objects) ---------------------------------------------------
  const typeWeights = PRODUCT_TYPES.map((t) => t.weight);
  const popularity = root.fork('popularity').shuffle(Array.from({ length: n }, (_, i) => i));
  const rankOf = new Int32Array(n);
  popularity.forEach((productIndex, rank) => {
    rankOf[productIndex] = rank;
  });
  const ordinaryLines: readonly string[] = LINES.filter((l: string) => l !== BURST_LINE);
  // the products of the trending burst: a new line, a handful of recent products of one type
  const burstRng = root.fork('burst');
  const burstType = burstRng.pick(PRODUCT_TYPES.filter((t) => t.category === 'Apparel' || t.category === 'Footwear'));
  const burstCount = Math.max(3, Math.min(8, Math.round(n / 2000)));
  const burstIndexes = new Set(burstRng.sample(popularity.slice(Math.floor(n / 2)), burstCount));

  const metas: ProductMeta[] = new Array(n);
  const metaRng = root.fork('products');
  for (let i = 0; i < n; i++) {
    const burst = burstIndexes.has(i);
    const type = burst ? burstType : metaRng.weighted(PRODUCT_TYPES, typeWeights);
    const material = metaRng.pick(type.materials);
    const colorCount = type.category === 'Beauty' ? 1 : metaRng.weighted([1, 2, 3, 4], [5, 3, 2, 1]);
    const colors = metaRng.sample(COLORS, colorCount);
    const base = type.price[0] + (type.price[1] - type.price[0]) * metaRng.next() ** 1.6;
    const price = retail(base, metaRng);
    const onSale = metaRng.chance(0.12);
    const compareAt = onSale ? retail(price * (1.2 + metaRng.next() * 0.4), metaRng) : null;
    // creation: most of the catalog over two years, 5 % in the last two weeks; the burst line is new
    const ageDays = burst ? metaRng.next() * 3 : metaRng.chance(0.05) ? metaRng.next() * 14 : 14 + metaRng.next() * 716;
    const createdMs = Math.round(o.anchorMs - ageDays * DAY);
    const unpublished = !burst && metaRng.chance(0.015);
    const draft = !burst && !unpublished && metaRng.chance(0.01);
    metas[i] = {
      index: i,
      productId: productIdOf(i),
      type,
      material,
      colors,
      line: burst ? BURST_LINE : metaRng.pick(ordinaryLines),
      style: metaRng.pick(STYLES),
      vendor: metaRng.pick(VENDORS[type.category]),
      price,
      compareAt,
      popularityRank: rankOf[i],
      createdMs,
      publishedMs: unpublished || draft ? null : createdMs + Math.round(metaRng.next() * 3 * DAY),
      status: draft ? 'draft' : 'active',
      pattern: metaRng.int(0, 3),
    };
  }
  const sellable = (m: ProductMeta) => m.status === 'active' && m.publishedMs !== null;

  const imageUrl = (typeSlug: string, colorSlug: string, pattern: number) =>
    `${o.imageBaseUrl}/${typeSlug}-${colorSlug}-${pattern}.png`;

  // --- products (lazily, each from its own stream) -------------------------------------------------
  const variantsOf = (m: ProductMeta) => {
    const sizes = m.type.sizes.length ? m.type.sizes : [null];
    const out: { color: ColorSpec; size: string | null; v: number }[] = [];
    for (const color of m.colors)
      for (const size of sizes) if (out.length < MAX_VARIANTS) out.push({ color, size, v: out.length });
    return out;
  };

  const product = (i: number): ShopifyProductInput & { id: string } => {
    const m = metas[i];
    const rng = root.fork(`product:${i}`);
    const title = `${m.line} ${m.style} ${m.material} ${m.type.name}`;
    const handle = `${slug(title)}-${m.productId.slice(-6)}`;
    const variants = variantsOf(m);
    const options: { name: string; position: number; values: string[] }[] = [
      { name: 'Color', position: 1, values: m.colors.map((c) => c.name) },
    ];
    if (m.type.sizes.length) options.push({ name: 'Size', position: 2, values: [...m.type.sizes] });
    const images = m.colors.map((c, k) => ({
      id: String(IMAGE_ID_BASE + i * MAX_VARIANTS + k + 1),
      src: imageUrl(m.type.slug, c.slug, m.pattern),
      alt: `${title} in ${c.name}`,
      width: IMAGE_SIZE,
      height: IMAGE_SIZE,
      position: k + 1,
      variant_ids: variants.filter((v) => v.color === c).map((v) => variantIdOf(i, v.v)),
    }));
    const tags = [
      m.type.category.toLowerCase(),
      slug(m.material),
      m.type.season,
      ...m.colors.map((c) => c.slug),
      ...(m.compareAt ? ['sale'] : []),
      ...(o.anchorMs - m.createdMs < 30 * DAY ? ['new'] : []),
      ...(m.popularityRank < Math.max(20, n * 0.02) ? ['bestseller'] : []),
      ...(/organic|recycled|vegan|cork/i.test(m.material) ? ['eco'] : []),
    ];
    return {
      id: m.productId,
      title,
      handle,
      body_html:
        `<p>The ${title.toLowerCase()} by ${m.vendor}: ${m.style.toLowerCase()} ${m.type.name.toLowerCase()} in ${m.material.toLowerCase()}, ` +
        `made for ${m.type.season === 'all-season' ? 'every season' : m.type.season}.</p>` +
        `<ul><li>Material: ${m.material}</li><li>Colours: ${m.colors.map((c) => c.name).join(', ')}</li><li>Line: ${m.line}</li></ul>`,
      vendor: m.vendor,
      product_type: m.type.name,
      tags,
      status: m.status,
      published_at: m.publishedMs === null ? null : new Date(m.publishedMs).toISOString(),
      created_at: new Date(m.createdMs).toISOString(),
      updated_at: new Date(Math.max(m.createdMs, m.publishedMs ?? 0) + HOUR).toISOString(),
      options,
      variants: variants.map((v) => {
        const outOfStock = rng.chance(0.06);
        const qty = outOfStock ? 0 : rng.int(1, 120);
        const usShare = Math.round(qty * (0.5 + rng.next() * 0.4));
        const surcharge = v.size === 'XL' || v.size === '50 ml' ? 1.1 : 1;
        const price = retail(m.price * surcharge, rng);
        return {
          id: variantIdOf(i, v.v),
          title: v.size ? `${v.color.name} / ${v.size}` : v.color.name,
          sku: `${m.type.slug.toUpperCase().slice(0, 4)}-${m.productId.slice(-6)}-${v.color.slug.slice(0, 3).toUpperCase()}${v.size ? `-${v.size.replace(/\W+/g, '')}` : ''}`,
          barcode: null,
          price: money(price),
          compare_at_price: m.compareAt ? money(retail(m.compareAt * surcharge, rng)) : null,
          option1: v.color.name,
          option2: v.size,
          option3: null,
          position: v.v + 1,
          available: qty > 0,
          inventory_quantity: qty,
          inventory_item_id: String(INVENTORY_ITEM_BASE + i * MAX_VARIANTS + v.v + 1),
          inventory_policy: 'deny',
          inventory_management: 'shopify',
          requires_components: false,
          image_id: String(IMAGE_ID_BASE + i * MAX_VARIANTS + m.colors.indexOf(v.color) + 1),
          inventory_levels: [
            { location_id: LOCATIONS[0].id, available: usShare },
            { location_id: LOCATIONS[1].id, available: qty - usShare },
          ],
        };
      }),
      images,
      metafields: [
        { namespace: 'custom', key: 'material', value: m.material, type: 'single_line_text_field' },
        { namespace: 'custom', key: 'line', value: m.line, type: 'single_line_text_field' },
      ],
      is_gift_card: false,
      category: {
        id: `demo-${slug(m.type.category)}-${m.type.slug}`,
        name: m.type.name,
        full_name: `${m.type.category} > ${m.type.plural}`,
      },
    };
  };

  // --- collections -------------------------------------------------------------------------------
  const byPopularity = (ids: number[]) => ids.sort((a, b) => rankOf[a] - rankOf[b]);
  const visible = metas.filter(sellable).map((m) => m.index);
  const visibleByType = new Map<ProductTypeSpec, number[]>(PRODUCT_TYPES.map((t) => [t, []]));
  for (const i of visible) visibleByType.get(metas[i].type)?.push(i);
  const collections: DemoStore['collections'] = [];
  const addCollection = (
    title: string,
    members: number[],
    body: string,
    sortOrder: string,
    defaultSort: string | null,
    image?: string,
  ) => {
    const id = String(COLLECTION_ID_BASE + collections.length + 1);
    collections.push({
      id,
      handle: slug(title),
      title,
      body_html: `<p>${body}</p>`,
      collection_type: 'custom',
      sort_order: sortOrder,
      published: true,
      published_at: new Date(o.anchorMs - 800 * DAY).toISOString(),
      updated_at: new Date(o.anchorMs).toISOString(),
      image: image ? { src: image, alt: title, width: IMAGE_SIZE, height: IMAGE_SIZE } : null,
      metafields: defaultSort
        ? [{ namespace: 'service', key: 'default_sort_order', value: defaultSort, type: 'single_line_text_field' }]
        : [],
      product_ids: members.map(productIdOf),
    });
  };
  for (const t of PRODUCT_TYPES) {
    const members = byPopularity([...(visibleByType.get(t) ?? [])]);
    if (members.length)
      addCollection(
        t.plural,
        members,
        `All ${t.plural.toLowerCase()}, most popular first.`,
        'manual',
        'best_selling',
        imageUrl(t.slug, 'beige', 0),
      );
  }
  for (const cat of ['Apparel', 'Footwear', 'Accessories', 'Home', 'Beauty'] as const) {
    addCollection(
      cat,
      byPopularity(visible.filter((i) => metas[i].type.category === cat)),
      `Everything in ${cat.toLowerCase()}.`,
      'best-selling',
      'best_selling',
    );
  }
  addCollection(
    'New Arrivals',
    [...visible].sort((a, b) => metas[b].createdMs - metas[a].createdMs).slice(0, 120),
    'The newest additions.',
    'created-desc',
    'newest',
  );
  addCollection(
    'Best Sellers',
    byPopularity([...visible]).slice(0, 100),
    'What everyone is buying.',
    'best-selling',
    'best_selling',
  );
  addCollection(
    'Sale',
    byPopularity(visible.filter((i) => metas[i].compareAt !== null)),
    'Reduced prices, while stocks last.',
    'price-asc',
    'price_asc',
  );
  addCollection(
    'Summer Edit',
    byPopularity(visible.filter((i) => metas[i].type.season === 'summer')).slice(0, 300),
    'Light layers for warm days.',
    'manual',
    null,
  );
  addCollection(
    'Gifts Under 50',
    byPopularity(visible.filter((i) => metas[i].price < 50)).slice(0, 200),
    'Thoughtful gifts under $50.',
    'manual',
    'price_asc',
  );

  // --- content -----------------------------------------------------------------------------------
  const contentRng = root.fork('content');
  const articles: DemoStore['articles'] = [];
  const articleTopics: [string, string, string][] = [];
  for (const t of PRODUCT_TYPES) {
    for (const mat of t.materials.slice(0, 2)) {
      articleTopics.push([`How to care for your ${mat.toLowerCase()} ${t.plural.toLowerCase()}`, t.slug, mat]);
    }
    articleTopics.push([
      `Five ways to style ${t.plural.toLowerCase()} this ${t.season === 'winter' ? 'winter' : 'summer'}`,
      t.slug,
      t.materials[0],
    ]);
  }
  const authors = ['Maya Lindqvist', 'Tomás Ferreira', 'Priya Nair', 'Jonas Weber', 'Aiko Tanaka'];
  contentRng.shuffle(articleTopics);
  articleTopics.slice(0, 36).forEach(([title, typeSlug, mat], k) => {
    const published = o.anchorMs - Math.round(contentRng.next() * 365 * DAY);
    const colour = contentRng.pick(COLORS);
    articles.push({
      id: String(ARTICLE_ID_BASE + k + 1),
      handle: slug(title),
      title,
      body_html:
        `<p>${title}. Our editors share what they learned about ${mat.toLowerCase()} and how to make it last.</p>` +
        `<img src="${imageUrl(typeSlug, colour.slug, 0)}" alt="${title}">` +
        `<p>Wash cool, dry flat and store away from direct sun. Pair with pieces in ${colour.name.toLowerCase()} for an easy look.</p>`,
      author: contentRng.pick(authors),
      tags: [typeSlug, slug(mat), 'guide'],
      image: { src: imageUrl(typeSlug, colour.slug, 0), width: IMAGE_SIZE, height: IMAGE_SIZE, alt: title },
      blog_id: BLOG_ID,
      blog_handle: 'journal',
      published: true,
      published_at: new Date(published).toISOString(),
      created_at: new Date(published - DAY).toISOString(),
      updated_at: new Date(published).toISOString(),
      metafields: null,
    });
  });
  const pageDefs: [string, string][] = [
    ['About Us', 'We make considered everyday goods with partners we know by name.'],
    [
      'Shipping and Returns',
      'Free shipping over $75 in the US and €70 in the EU. Returns within 30 days, free of charge.',
    ],
    ['Size Guide', 'Our sizes run true to fit. Measure chest, waist and hips and compare with the table below.'],
    ['Gift Cards', 'Gift cards are delivered by email and never expire.'],
    ['Sustainability', 'Organic and recycled materials, repair programmes and carbon-neutral shipping.'],
    ['Contact', 'Write to hello@demo-store.example, we answer within one business day.'],
  ];
  const pages: DemoStore['pages'] = pageDefs.map(([title, text], k) => ({
    id: String(PAGE_ID_BASE + k + 1),
    handle: slug(title),
    title,
    body_html: `<h1>${title}</h1><p>${text}</p>`,
    author: null,
    tags: [],
    image: null,
    published: true,
    published_at: new Date(o.anchorMs - 700 * DAY).toISOString(),
    created_at: new Date(o.anchorMs - 700 * DAY).toISOString(),
    updated_at: new Date(o.anchorMs - 30 * DAY).toISOString(),
    metafields: k === 5 ? [{ namespace: 'seo', key: 'hidden', value: '1', type: 'number_integer' }] : null,
  }));

  // --- markets, prices, B2B ----------------------------------------------------------------------
  const markets: ConfigInput<'market'>[] = [
    { code: 'us', name: 'United States', market_id: '1001', countries: ['us'], currency: 'usd', price_list_id: null },
    {
      code: 'eu',
      name: 'Europe',
      market_id: '1002',
      countries: ['de', 'fr', 'it', 'es', 'nl', 'be', 'at', 'ie', 'pt', 'fi'],
      currency: 'eur',
      price_list_id: DEMO_EU_PRICE_LIST,
    },
  ];
  const b2bIndexes = visible.filter(
    (i) => metas[i].type.category === 'Home' || metas[i].type.category === 'Accessories',
  );
  const b2bCollections = collections.filter((c) => ['Home', 'Accessories'].includes(String(c.title))).map((c) => c.id);
  const b2bSet = new Set(b2bIndexes);
  const pricesOf = (p: ShopifyProductInput & { id: string }): PriceInput[] => {
    const out: PriceInput[] = [];
    const i = productIndexOf(p.id);
    for (const v of p.variants ?? []) {
      const variantId = String(v.id);
      const usd = Number(v.price);
      // EUR: converted, rounded to .95 / .00 the way European storefronts price
      const eur = Math.max(1, Math.round(usd * 0.93)) - (usd > 20 ? 0.05 : 0);
      out.push({
        price_list_id: DEMO_EU_PRICE_LIST,
        variant_id: variantId,
        product_id: p.id,
        currency: 'EUR',
        price: money(eur),
        compare_at_price: v.compare_at_price ? money(Math.round(Number(v.compare_at_price) * 0.93) - 0.05) : null,
      });
      if (b2bSet.has(i)) {
        out.push({
          price_list_id: DEMO_WHOLESALE_PRICE_LIST,
          variant_id: variantId,
          product_id: p.id,
          currency: 'USD',
          price: money(usd * 0.6),
          compare_at_price: null,
        });
      }
    }
    return out;
  };
  const b2b: DemoStore['b2b'] = {
    catalog: {
      id: DEMO_B2B_CATALOG_ID,
      title: 'Wholesale: home and accessories',
      status: 'active',
      company_location_ids: [DEMO_COMPANY_LOCATION_GID.split('/').pop() as string],
      price_list_id: DEMO_WHOLESALE_PRICE_LIST,
      all_products: false,
      product_ids: b2bIndexes.map(productIdOf),
      collection_ids: b2bCollections,
      updated_at: new Date(o.anchorMs).toISOString(),
    },
    companyLocation: {
      gid: DEMO_COMPANY_LOCATION_GID,
      company_id: DEMO_COMPANY_ID,
      catalog_id: DEMO_B2B_CATALOG_ID,
      price_list_id: DEMO_WHOLESALE_PRICE_LIST,
    },
    customer: { customer_id: DEMO_B2B_CUSTOMER_ID, company_ids: [DEMO_COMPANY_ID] },
  };

  // --- configuration -----------------------------------------------------------------------------
  const config: DemoStore['config'] = {
    sort_order: [
      {
        code: 'best_selling',
        nickname: 'Best selling',
        scope: 'both',
        expressions: [{ attribute: 'revenue_7d', direction: 'desc' }],
      },
      {
        code: 'newest',
        nickname: 'Newest',
        scope: 'both',
        expressions: [{ attribute: 'published_at', direction: 'desc' }],
      },
      {
        code: 'price_asc',
        nickname: 'Price: low to high',
        scope: 'both',
        expressions: [{ attribute: 'price', direction: 'asc' }],
      },
      {
        code: 'price_desc',
        nickname: 'Price: high to low',
        scope: 'both',
        expressions: [{ attribute: 'price', direction: 'desc' }],
      },
    ],
    block: [
      {
        id: DEMO_BLOCKS.bestSellers,
        title: 'Best sellers',
        anchor_type: 'none',
        strategy_key: 'best_sellers',
        priority: 10,
      },
      {
        id: DEMO_BLOCKS.trendingNow,
        title: 'Trending now',
        anchor_type: 'home',
        strategy_key: 'trending_now',
        fallback: [{ block_id: DEMO_BLOCKS.bestSellers, mode: 'fill' }],
        priority: 20,
      },
      {
        id: DEMO_BLOCKS.newArrivals,
        title: 'New arrivals',
        anchor_type: 'none',
        strategy_key: 'new_arrivals',
        priority: 30,
      },
      {
        id: DEMO_BLOCKS.alsoViewed,
        title: 'Customers also viewed',
        anchor_type: 'product',
        strategy_key: 'customers_also_viewed',
        safeguards: { min_products: 3, max_products: 12, hide_out_of_stock: true, personalization_strength: 0.2 },
        fallback: [{ block_id: DEMO_BLOCKS.bestSellers, mode: 'fill' }],
        priority: 10,
      },
      {
        id: DEMO_BLOCKS.boughtTogether,
        title: 'Frequently bought together',
        anchor_type: 'product',
        strategy_key: 'frequently_bought_together',
        safeguards: { min_products: 1, max_products: 4, hide_out_of_stock: true, personalization_strength: 0 },
        fallback: [{ block_id: DEMO_BLOCKS.bestSellers, mode: 'fill' }],
        priority: 20,
      },
    ],
    redirect_term: [
      { term: 'gift card', url: '/pages/gift-cards', match: 'exact' },
      { term: 'returns', url: '/pages/shipping-and-returns', match: 'exact' },
    ],
    synonym: [
      { id: 'sneakers', type: 'two_way', terms: ['sneakers', 'trainers', 'kicks'] },
      { id: 'tshirt', type: 'two_way', terms: ['t-shirt', 'tee', 'tshirt'] },
      { id: 'trousers', type: 'one_way', term: 'pants', synonyms: ['trousers', 'jeans'] },
      { id: 'sweater', type: 'two_way', terms: ['sweater', 'jumper', 'pullover'] },
    ],
  };

  // --- ground truth and the session plan ---------------------------------------------------------
  const planRng = root.fork('plan');
  const S = o.sessions;
  const scale = S / DEFAULT_SESSIONS;
  // candidate products for planted structures: visible, in stock somewhere, not the head of popularity
  // (the head is viewed by noise sessions too) and not the burst line
  const headCut = Math.min(200, Math.floor(n * 0.02));
  const plantable = visible.filter((i) => rankOf[i] >= headCut && !burstIndexes.has(i));
  const plantableByType = new Map<ProductTypeSpec, number[]>(PRODUCT_TYPES.map((t) => [t, []]));
  for (const i of plantable) plantableByType.get(metas[i].type)?.push(i);
  const used = new Set<number>();
  /** `k` distinct products of `pool` not used by another planted structure (marks them used) */
  const take = (pool: number[], k: number) => {
    const out: number[] = [];
    // rejection sampling first (pools are large, few are used); the exact filter when that stalls
    for (let tries = 0; out.length < k && tries < 20 * k; tries++) {
      const i = pool[Math.floor(planRng.next() * pool.length)];
      if (i !== undefined && !used.has(i)) {
        used.add(i);
        out.push(i);
      }
    }
    if (out.length < k) {
      for (const i of planRng.sample(
        pool.filter((i) => !used.has(i)),
        k - out.length,
      )) {
        used.add(i);
        out.push(i);
      }
    }
    return out;
  };

  // co-view clusters: 4-5 products of one type (and colour where possible) compared in one session
  const clusterCount = Math.max(3, Math.min(40, Math.round(20 * scale)));
  const sessionsPerCluster = 8 + Math.max(0, Math.round(4 * Math.min(scale, 2)));
  const clusters: GroundTruth['coViewClusters'] = [];
  for (let c = 0; c < clusterCount; c++) {
    const type = planRng.weighted(PRODUCT_TYPES, typeWeights);
    const color = planRng.pick(COLORS);
    const sameType = (plantableByType.get(type) ?? []).filter((i) => !used.has(i));
    const sameColor = sameType.filter((i) => metas[i].colors.includes(color));
    const k = planRng.int(4, 5);
    const pool = sameColor.length >= k ? sameColor : sameType.length >= k ? sameType : plantable;
    const members = take(pool, k);
    if (members.length < 3) continue;
    clusters.push({ id: clusters.length, productIds: members.map(productIdOf), sessions: sessionsPerCluster });
  }

  // planted queries: "<material> <type>" and "<colour> <type>" with 3-60 matching products
  const queryCandidates: { query: string; type: ProductTypeSpec; attribute: string; members: number[] }[] = [];
  for (const t of PRODUCT_TYPES) {
    const byMaterial = new Map<string, number[]>(t.materials.map((m) => [m, []]));
    const byColor = new Map<ColorSpec, number[]>(COLORS.map((c) => [c, []]));
    for (const i of visibleByType.get(t) ?? []) {
      if (burstIndexes.has(i)) continue;
      byMaterial.get(metas[i].material)?.push(i);
      for (const c of metas[i].colors) byColor.get(c)?.push(i);
    }
    for (const mat of t.materials) {
      const members = byMaterial.get(mat) ?? [];
      queryCandidates.push({
        query: `${mat} ${planRng.chance(0.3) ? t.plural : t.name}`.toLowerCase(),
        type: t,
        attribute: mat,
        members,
      });
    }
    for (const col of COLORS) {
      queryCandidates.push({
        query: `${col.name} ${t.name}`.toLowerCase(),
        type: t,
        attribute: col.name,
        members: byColor.get(col) ?? [],
      });
    }
  }
  const maxRelevant = Math.max(60, Math.round(n / 150));
  const usable = queryCandidates.filter((q) => q.members.length >= 3 && q.members.length <= maxRelevant);
  const queryCount = Math.max(5, Math.min(60, Math.round(24 * scale)));
  const sessionsPerQuery = 10 + Math.max(0, Math.round(6 * Math.min(scale, 2)));
  const queries: GroundTruth['queries'] = planRng.sample(usable, queryCount).map((q) => {
    // the products shoppers prefer for this query: a few of the matches, in order of preference
    const engagedIdx = planRng.sample(q.members, Math.min(5, q.members.length));
    return {
      query: q.query,
      productType: q.type.name,
      attribute: q.attribute,
      relevant: q.members.map(productIdOf),
      engaged: engagedIdx.map(productIdOf),
      sessions: sessionsPerQuery,
    };
  });

  // bundles: complementary types bought together
  const bundleCount = Math.max(3, Math.min(30, Math.round(12 * scale)));
  const ordersPerBundle = 6 + Math.max(0, Math.round(6 * Math.min(scale, 2)));
  const bundles: GroundTruth['bundles'] = [];
  for (let b = 0; b < bundleCount; b++) {
    const template = BUNDLE_TEMPLATES[b % BUNDLE_TEMPLATES.length];
    const members: number[] = [];
    for (const typeSlug of template) {
      const pool = plantableByType.get(PRODUCT_TYPES.find((t) => t.slug === typeSlug) as ProductTypeSpec) ?? [];
      members.push(...take(pool.length ? pool : plantable, 1));
    }
    if (members.length >= 2)
      bundles.push({ id: bundles.length, productIds: members.map(productIdOf), orders: ordersPerBundle });
  }

  // trending burst: many distinct sessions, all in the last `burstWindow` minutes, none before
  const burstMembers = [...burstIndexes];
  const burstQuery = `${BURST_LINE} ${burstType.plural}`.toLowerCase();
  const burstSessions = Math.max(25, Math.round(60 * Math.min(scale, 2)));
  const burstWindow = 45;
  const groundTruth: GroundTruth = {
    seed: o.seed,
    coViewClusters: clusters,
    queries,
    trending: {
      query: burstQuery,
      sessions: burstSessions,
      windowMinutes: burstWindow,
      relevant: burstMembers.map(productIdOf),
    },
    bundles,
  };

  // the plan: one entry per session; planted sessions interleaved with browsing, in time order
  type Plan = { kind: SessionKind; ref: number };
  const planned: Plan[] = [];
  for (const c of clusters) for (let k = 0; k < c.sessions; k++) planned.push({ kind: 'cluster', ref: c.id });
  queries.forEach((q, qi) => {
    for (let k = 0; k < q.sessions; k++) planned.push({ kind: 'search', ref: qi });
  });
  for (const b of bundles) for (let k = 0; k < b.orders; k++) planned.push({ kind: 'bundle', ref: b.id });
  const browseCount = Math.max(0, S - burstSessions - planned.length);
  for (let k = 0; k < browseCount; k++) planned.push({ kind: 'browse', ref: 0 });
  planRng.shuffle(planned);
  for (let k = 0; k < burstSessions; k++) planned.push({ kind: 'trending', ref: 0 });
  const sessionCount = planned.length;
  const regular = sessionCount - burstSessions;
  // regular sessions spread over the last 7 days up to 2 hours ago; the burst in the last 45 minutes
  const startOf = (i: number) => {
    if (i < regular) return -7 * DAY + Math.round(((7 * DAY - 2 * HOUR) * i) / Math.max(1, regular));
    return -burstWindow * MINUTE + Math.round(((burstWindow - 5) * MINUTE * (i - regular)) / burstSessions);
  };
  const byPop = popularity.filter((i) => sellable(metas[i]) && !burstIndexes.has(i));
  const visibleCollections = collections.filter((c) => c.product_ids.length > 0);

  const session = (i: number): SimSession => {
    if (!Number.isInteger(i) || i < 0 || i >= sessionCount) throw new RangeError(`session ${i} out of range`);
    const p = planned[i];
    const rng = root.fork(`session:${i}`);
    const market: 'us' | 'eu' = rng.chance(0.7) ? 'us' : 'eu';
    const s: SimSession = {
      index: i,
      kind: p.kind,
      sessionId: `demo-s-${rng.uuid()}`,
      deviceId: `demo-d-${rng.uuid()}`,
      customerId: rng.chance(0.2) ? String(7_100_000_000 + rng.int(1, 5000)) : null,
      market,
      ip: rng.pick(SHOPPER_IPS[market]),
      userAgent: rng.pick(USER_AGENTS),
      start: startOf(i),
      steps: [],
    };
    let t = s.start;
    const step = <T extends Omit<SimStep, 't' | 'eventId'>>(x: T) => {
      t += Math.round(4_000 + rng.exp(20_000));
      s.steps.push({ ...x, t, eventId: rng.uuid() } as unknown as SimStep);
    };
    const firstVariant = (pi: number) => variantIdOf(pi, 0);
    const view = (pi: number) =>
      step({ type: 'product_view', productId: productIdOf(pi), variantId: firstVariant(pi) });
    const noiseView = () => view(byPop[rng.zipf(byPop.length, 1.05)]);
    const searchFor = (query: string) => {
      if (rng.chance(0.4)) {
        const typed = query.slice(0, Math.min(query.length, rng.int(2, 4)));
        step({ type: 'autocomplete', typed });
        step({ type: 'autocomplete_click', typed, query, position: 1 });
        step({ type: 'search', query, source: 'autocomplete' });
      } else {
        step({ type: 'search', query, source: 'typed' });
      }
    };
    switch (p.kind) {
      case 'cluster': {
        const members = rng.shuffle(clusters[p.ref].productIds.map(productIndexOf));
        if (rng.chance(0.5)) step({ type: 'collection_view', handle: slug(metas[members[0]].type.plural) });
        for (const pi of members) view(pi);
        for (let k = rng.int(0, 2); k > 0; k--) noiseView();
        break;
      }
      case 'search': {
        const q = queries[p.ref];
        searchFor(q.query);
        const clicks = rng.weighted([1, 2, 3], [5, 3, 2]);
        const picks = new Set<string>();
        for (let k = 0; k < clicks; k++)
          picks.add(q.engaged[Math.min(q.engaged.length - 1, rng.zipf(q.engaged.length, 1.2))]);
        let addedToCart = false;
        for (const id of picks) {
          step({ type: 'product_click', productId: id, position: rng.int(1, 8), query: q.query });
          step({ type: 'product_view', productId: id, variantId: firstVariant(productIndexOf(id)) });
          if (!addedToCart && rng.chance(0.2)) {
            addedToCart = true;
            const m = metas[productIndexOf(id)];
            step({
              type: 'add_to_cart',
              productId: id,
              variantId: firstVariant(m.index),
              price: money(m.price),
              quantity: 1,
            });
          }
        }
        break;
      }
      case 'trending': {
        searchFor(burstQuery);
        if (rng.chance(0.7)) {
          const pi = rng.pick(burstMembers);
          step({ type: 'product_click', productId: productIdOf(pi), position: rng.int(1, 4), query: burstQuery });
          view(pi);
        }
        break;
      }
      case 'bundle': {
        const b = bundles[p.ref];
        const lines: OrderLine[] = [];
        for (const id of b.productIds) {
          const pi = productIndexOf(id);
          const v = firstVariant(pi);
          const price = money(metas[pi].price);
          view(pi);
          step({ type: 'add_to_cart', productId: id, variantId: v, price, quantity: 1 });
          lines.push({ productId: id, variantId: v, quantity: 1, price });
        }
        const total = money(lines.reduce((sum, l) => sum + Number(l.price) * l.quantity, 0));
        step({ type: 'purchase', orderId: String(ORDER_ID_BASE + i + 1), lines, total });
        break;
      }
      case 'browse': {
        if (rng.chance(0.4)) step({ type: 'collection_view', handle: rng.pick(visibleCollections).handle });
        if (rng.chance(0.08)) {
          const a = rng.pick(articles);
          step({ type: 'content_view', contentType: 'article', contentId: a.id, handle: a.handle });
        }
        for (let k = rng.weighted([1, 2, 3, 4], [4, 3, 2, 1]); k > 0; k--) noiseView();
        break;
      }
    }
    return s;
  };

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
  put('m', store.markets);
  for (const pr of store.prices()) put('$', pr);
  put('b', store.b2b);
  put('k', store.config);
  for (const s of store.sessions()) put('s', s);
  put('t', store.groundTruth);
  return h.digest('hex');
}
