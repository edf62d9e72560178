// Query helpers over the catalog projections (migrations 0210-0228) for the read API and tools.
//
// Every helper takes the store id first and filters on it (it leads every sort key); values travel only
// as server-side parameters. Ids are returned as digit strings (UInt64 can exceed 2^53), money as
// decimal strings in major units, times as ISO 8601 UTC. Lists of ids travel as Array(UInt64) parameters
// (BigInt values, so ids above 2^53 stay exact), which lets the primary key prune. These run on chDB's single query slot: hot paths should keep in-process indexes
// built from `allProducts` and refreshed when `catalogFingerprint` changes.
import type { Db } from '../client.ts';
import { toNumericId } from '../../schemas/fields.ts';

export interface VariantView {
  id: string;
  title: string;
  sku: string | null;
  barcode: string | null;
  price: string;
  compare_at_price: string | null;
  option1: string | null;
  option2: string | null;
  option3: string | null;
  position: number;
  /** inventory-aware: stock across locations when levels are known, else the platform's flag */
  available: boolean;
  inventory_quantity: number | null;
  inventory_item_id: string | null;
  inventory_policy: string;
  inventory_management: string | null;
  requires_components: boolean;
  image_id: string | null;
}

export interface ProductView {
  id: string;
  title: string;
  handle: string;
  body_html: string;
  vendor: string;
  product_type: string;
  tags: string[];
  status: 'active' | 'draft' | 'archived';
  published_at: string | null;
  created_at: string | null;
  updated_at: string;
  options: { name: string; position: number; values: string[] }[];
  variants: VariantView[];
  images: {
    id: string | null;
    src: string;
    alt: string | null;
    width: number | null;
    height: number | null;
    position: number;
    variant_ids: string[];
  }[];
  metafields: Record<string, Record<string, unknown>>;
  is_gift_card: boolean;
  combined_listing_parent_product_id: string | null;
  combined_listing_role: string | null;
  has_variants_that_require_components: boolean;
  category: { id: string; name: string; full_name: string } | null;
  price_range: { from: string; to: string };
  /** any variant available */
  available: boolean;
}

const U64_MAX = (1n << 64n) - 1n;
/** digit-string ids → UInt64 parameter values; anything else cannot match and is left out */
export function u64s(ids: readonly string[]): bigint[] {
  const out: bigint[] = [];
  for (const id of ids) {
    if (!/^\d{1,20}$/.test(id)) continue;
    const v = BigInt(id);
    if (v <= U64_MAX) out.push(v);
  }
  return out;
}

const toIso = (t: string | null): string | null => (t ? `${t.replace(' ', 'T')}Z` : null);
const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const parseJson = <T>(s: string, fallback: T): T => {
  if (!s) return fallback;
  try {
    return JSON.parse(s) as T;
  } catch {
    return fallback;
  }
};
/** Decimal text without trailing zeros beyond 2 places ("19.9000" → "19.90", "5.1250" → "5.125"). */
export function money(v: string): string {
  if (!v.includes('.')) return `${v}.00`;
  const [i, f] = v.split('.');
  const trimmed = f.replace(/0+$/, '');
  return `${i}.${trimmed.length < 2 ? trimmed.padEnd(2, '0') : trimmed}`;
}

interface ProductRow {
  product_id: string;
  title: string;
  handle: string;
  body_html: string;
  vendor: string;
  product_type: string;
  tags: string[];
  status: string;
  published_at: string | null;
  created_at: string | null;
  updated_at: string;
  options: string;
  variants: {
    id: string;
    title: string;
    sku: string;
    barcode: string;
    price: string;
    compare_at_price: string | null;
    option1: string | null;
    option2: string | null;
    option3: string | null;
    position: number;
    available: number;
    inventory_quantity: number | null;
    inventory_item_id: string;
    inventory_policy: string;
    inventory_management: string | null;
    requires_components: number;
    image_id: string | null;
  }[];
  images: string;
  metafields: string;
  is_gift_card: number;
  combined_listing_parent_product_id: string | null;
  combined_listing_role: string | null;
  has_variants_that_require_components: number;
  category: string;
  price_min: string;
  price_max: string;
}

// Variants as strings (ids, money) so nothing is rounded on the way out; availability from the
// inventory-aware view, keyed by variant id.
const PRODUCT_COLUMNS = `
  toString(p.product_id) AS product_id, p.title AS title, p.handle AS handle, p.body_html AS body_html, p.vendor AS vendor,
  p.product_type AS product_type, p.tags AS tags, toString(p.status) AS status,
  toString(p.published_at) AS published_at, toString(p.created_at) AS created_at, toString(p.updated_at) AS updated_at,
  p.options AS options,
  arrayMap(v -> tuple(toString(v.id), v.title, v.sku, v.barcode, toString(v.price), toString(v.compare_at_price), v.option1, v.option2, v.option3,
    v.position, v.available, v.inventory_quantity, toString(v.inventory_item_id), toString(v.inventory_policy), v.inventory_management,
    v.requires_components, toString(v.image_id))::Tuple(id String, title String, sku String, barcode String, price String, compare_at_price Nullable(String),
    option1 Nullable(String), option2 Nullable(String), option3 Nullable(String), position UInt32, available UInt8, inventory_quantity Nullable(Int32),
    inventory_item_id String, inventory_policy String, inventory_management Nullable(String), requires_components UInt8, image_id Nullable(String)),
    p.variants) AS variants,
  p.images AS images, p.metafields AS metafields, p.is_gift_card AS is_gift_card,
  toString(p.combined_listing_parent_product_id) AS combined_listing_parent_product_id, p.combined_listing_role AS combined_listing_role,
  p.has_variants_that_require_components AS has_variants_that_require_components, p.category AS category,
  toString(p.price_min) AS price_min, toString(p.price_max) AS price_max`;

interface LevelTotals {
  levels: number;
  total: number;
}

/**
 * Inventory totals per variant (across locations) for the given variants: levels keyed by inventory item
 * and levels keyed by variant id. Both lookups are sort-key prefixes of catalog_inventory_levels.
 */
async function levelTotals(
  db: Db,
  storeId: string,
  variants: readonly { id: string; inventory_item_id: string }[],
): Promise<Map<string, LevelTotals>> {
  const out = new Map<string, LevelTotals>();
  if (variants.length === 0) return out;
  const byItem = new Map<string, string>();
  for (const v of variants) if (v.inventory_item_id !== '0') byItem.set(v.inventory_item_id, v.id);
  const rows = await db.query<{ item: string; vid: string; total: string; levels: string }>(
    `SELECT toString(inventory_item_id) AS item, toString(variant_id) AS vid, toString(sum(available)) AS total, toString(count()) AS levels
     FROM catalog_inventory_levels FINAL
     WHERE store_id = {store:String} AND is_deleted = 0
       AND (inventory_item_id IN {items:Array(UInt64)}
            OR (inventory_item_id = 0 AND variant_id IN {vids:Array(UInt64)}))
     GROUP BY inventory_item_id, variant_id`,
    { store: storeId, items: u64s([...byItem.keys()]), vids: u64s(variants.map((v) => v.id)) },
  );
  for (const r of rows) {
    const vid = r.item !== '0' ? byItem.get(r.item) : r.vid;
    if (!vid) continue;
    const prev = out.get(vid) ?? { levels: 0, total: 0 };
    out.set(vid, { levels: prev.levels + Number(r.levels), total: prev.total + Number(r.total) });
  }
  return out;
}

/** The availability rule of catalog_variant_availability, for variants read with their product. */
function variantAvailable(v: ProductRow['variants'][number], totals: LevelTotals | undefined): boolean {
  if (totals && totals.levels > 0)
    return !v.inventory_management || v.inventory_policy === 'continue' || totals.total > 0;
  return Number(v.available) === 1;
}

async function toProductViews(db: Db, storeId: string, rows: ProductRow[]): Promise<ProductView[]> {
  const totals = await levelTotals(
    db,
    storeId,
    rows.flatMap((r) => r.variants.map((v) => ({ id: v.id, inventory_item_id: v.inventory_item_id }))),
  );
  return rows.map((r) => toProductView(r, totals));
}

function toProductView(r: ProductRow, totals: Map<string, LevelTotals>): ProductView {
  const variants: VariantView[] = r.variants.map((v) => ({
    id: v.id,
    title: v.title,
    sku: v.sku || null,
    barcode: v.barcode || null,
    price: money(v.price),
    compare_at_price: v.compare_at_price === null ? null : money(v.compare_at_price),
    option1: v.option1,
    option2: v.option2,
    option3: v.option3,
    position: Number(v.position),
    available: variantAvailable(v, totals.get(v.id)),
    inventory_quantity: num(v.inventory_quantity),
    inventory_item_id: v.inventory_item_id === '0' ? null : v.inventory_item_id,
    inventory_policy: v.inventory_policy,
    inventory_management: v.inventory_management,
    requires_components: Number(v.requires_components) === 1,
    image_id: v.image_id,
  }));
  return {
    id: r.product_id,
    title: r.title,
    handle: r.handle,
    body_html: r.body_html,
    vendor: r.vendor,
    product_type: r.product_type,
    tags: r.tags,
    status: r.status as ProductView['status'],
    published_at: toIso(r.published_at),
    created_at: toIso(r.created_at),
    updated_at: toIso(r.updated_at) as string,
    options: parseJson(r.options, []),
    variants,
    images: parseJson(r.images, []),
    metafields: parseJson(r.metafields, {}),
    is_gift_card: Number(r.is_gift_card) === 1,
    combined_listing_parent_product_id: r.combined_listing_parent_product_id,
    combined_listing_role: r.combined_listing_role,
    has_variants_that_require_components: Number(r.has_variants_that_require_components) === 1,
    category: parseJson(r.category, null),
    price_range: { from: money(r.price_min), to: money(r.price_max) },
    available: variants.some((v) => v.available),
  };
}

/** Current products by id (any order of `ids`; missing and deleted ids are left out), in `ids` order. */
export async function productsByIds(db: Db, storeId: string, ids: readonly string[]): Promise<ProductView[]> {
  if (ids.length === 0) return [];
  const rows = await db.query<ProductRow>(
    `SELECT ${PRODUCT_COLUMNS}
     FROM catalog_products AS p FINAL
     WHERE p.store_id = {store:String} AND p.is_deleted = 0 AND p.product_id IN {ids:Array(UInt64)}`,
    { store: storeId, ids: u64s(ids) },
  );
  const byId = new Map((await toProductViews(db, storeId, rows)).map((p) => [p.id, p]));
  return ids.map((id) => byId.get(id)).filter((p): p is ProductView => p !== undefined);
}

/** Current products by handle, in `handles` order. */
export async function productsByHandles(db: Db, storeId: string, handles: readonly string[]): Promise<ProductView[]> {
  if (handles.length === 0) return [];
  const rows = await db.query<{ id: string; handle: string }>(
    `SELECT toString(product_id) AS id, handle FROM catalog_products FINAL
     WHERE store_id = {store:String} AND is_deleted = 0 AND handle IN {handles:Array(String)}`,
    { store: storeId, handles: [...handles] },
  );
  const idByHandle = new Map(rows.map((r) => [r.handle, r.id]));
  const products = await productsByIds(db, storeId, [...new Set(rows.map((r) => r.id))]);
  const byId = new Map(products.map((p) => [p.id, p]));
  return handles.map((h) => byId.get(idByHandle.get(h) ?? '')).filter((p): p is ProductView => p !== undefined);
}

/**
 * Every current product of a store, paged by product id (`after` = the last id of the previous page).
 * `publishedOnly`: only what the online store shows (status active, published_at set and not in the future).
 */
export async function allProducts(
  db: Db,
  storeId: string,
  opts: { after?: string; limit?: number; publishedOnly?: boolean } = {},
): Promise<ProductView[]> {
  const limit = Math.min(Math.max(opts.limit ?? 1000, 1), 10_000);
  const rows = await db.query<ProductRow>(
    `SELECT ${PRODUCT_COLUMNS}
     FROM catalog_products AS p FINAL
     WHERE p.store_id = {store:String} AND p.is_deleted = 0 AND p.product_id > toUInt64OrZero({after:String})
       AND ({published:UInt8} = 0 OR (p.status = 'active' AND p.published_at IS NOT NULL AND p.published_at <= now64(3)))
     ORDER BY p.product_id
     LIMIT {limit:UInt32}`,
    { store: storeId, after: opts.after ?? '0', limit, published: opts.publishedOnly ? 1 : 0 },
  );
  return toProductViews(db, storeId, rows);
}

/** Changes whenever any product, collection, inventory level or price of the store changes (cache key). */
export async function catalogFingerprint(db: Db, storeId: string): Promise<string> {
  const [r] = await db.query<{ f: string }>(
    `SELECT concat(
        (SELECT toString(max(_version)) || '/' || toString(count()) FROM catalog_products WHERE store_id = {store:String}), ':',
        (SELECT toString(max(_version)) || '/' || toString(count()) FROM catalog_collection_members WHERE store_id = {store:String}), ':',
        (SELECT toString(max(_version)) || '/' || toString(count()) FROM catalog_collections WHERE store_id = {store:String}), ':',
        (SELECT toString(max(_version)) || '/' || toString(count()) FROM catalog_inventory_levels WHERE store_id = {store:String}), ':',
        (SELECT toString(max(_version)) || '/' || toString(count()) FROM catalog_prices WHERE store_id = {store:String}), ':',
        (SELECT toString(max(_version)) || '/' || toString(count()) FROM catalog_b2b_catalogs WHERE store_id = {store:String})) AS f`,
    { store: storeId },
  );
  return r?.f ?? '';
}

// ------------------------------------------------------------------------------------------------
// collections

export interface CollectionView {
  id: string;
  handle: string;
  title: string;
  body_html: string;
  collection_type: 'custom' | 'smart';
  sort_order: string;
  default_sort_order: string | null;
  published: boolean;
  published_at: string | null;
  image: { src: string; alt: string | null; width: number | null; height: number | null } | null;
  metafields: Record<string, Record<string, unknown>>;
  updated_at: string;
}

interface CollectionRow {
  id: string;
  handle: string;
  title: string;
  body_html: string;
  collection_type: string;
  sort_order: string;
  default_sort_order: string | null;
  published: number;
  published_at: string | null;
  image: string;
  metafields: string;
  updated_at: string;
}

const COLLECTION_COLUMNS = `toString(collection_id) AS id, handle, title, body_html, toString(collection_type) AS collection_type,
  toString(sort_order) AS sort_order, default_sort_order, published, toString(published_at) AS published_at, image, metafields,
  toString(updated_at) AS updated_at`;

function toCollectionView(r: CollectionRow): CollectionView {
  const image = parseJson<{ src: string; alt: string | null; width: number | null; height: number | null } | null>(
    r.image,
    null,
  );
  return {
    id: r.id,
    handle: r.handle,
    title: r.title,
    body_html: r.body_html,
    collection_type: r.collection_type as CollectionView['collection_type'],
    sort_order: r.sort_order,
    default_sort_order: r.default_sort_order,
    published: Number(r.published) === 1,
    published_at: toIso(r.published_at),
    image: image ? { src: image.src, alt: image.alt, width: image.width, height: image.height } : null,
    metafields: parseJson(r.metafields, {}),
    updated_at: toIso(r.updated_at) as string,
  };
}

/** A current collection by handle (or by numeric id when `handleOrId` is all digits and no handle matches). */
export async function collectionByHandle(
  db: Db,
  storeId: string,
  handleOrId: string,
): Promise<CollectionView | undefined> {
  const rows = await db.query<CollectionRow & { by_handle: number }>(
    `SELECT ${COLLECTION_COLUMNS}, handle = {h:String} AS by_handle FROM catalog_collections FINAL
     WHERE store_id = {store:String} AND is_deleted = 0
       AND (handle = {h:String} OR collection_id = toUInt64OrZero({h:String}))
     ORDER BY by_handle DESC LIMIT 1`,
    { store: storeId, h: handleOrId },
  );
  return rows[0] ? toCollectionView(rows[0]) : undefined;
}

/** Every current collection of a store. */
export async function allCollections(db: Db, storeId: string): Promise<CollectionView[]> {
  const rows = await db.query<CollectionRow>(
    `SELECT ${COLLECTION_COLUMNS} FROM catalog_collections FINAL WHERE store_id = {store:String} AND is_deleted = 0 ORDER BY collection_id`,
    { store: storeId },
  );
  return rows.map(toCollectionView);
}

/** Current collections by id (missing and deleted ones left out). */
export async function collectionsByIds(db: Db, storeId: string, ids: readonly string[]): Promise<CollectionView[]> {
  if (ids.length === 0) return [];
  const rows = await db.query<CollectionRow>(
    `SELECT ${COLLECTION_COLUMNS} FROM catalog_collections FINAL
     WHERE store_id = {store:String} AND is_deleted = 0 AND collection_id IN {ids:Array(UInt64)} ORDER BY collection_id`,
    { store: storeId, ids: u64s(ids) },
  );
  return rows.map(toCollectionView);
}

/**
 * The current membership lists of a store's collections (all, or the given ids): collection id → product
 * ids in merchandised order, as the platform sent them (products that no longer exist are the caller's to skip).
 */
export async function collectionMemberLists(
  db: Db,
  storeId: string,
  ids?: readonly string[],
): Promise<Map<string, string[]>> {
  const rows = await db.query<{ id: string; product_ids: string[] }>(
    `SELECT toString(collection_id) AS id, arrayMap(x -> toString(x), product_ids) AS product_ids
     FROM catalog_collection_members FINAL
     WHERE store_id = {store:String} AND is_deleted = 0 AND ({all:UInt8} = 1 OR collection_id IN {ids:Array(UInt64)})`,
    { store: storeId, all: ids ? 0 : 1, ids: u64s(ids ?? []) },
  );
  return new Map(rows.map((r) => [r.id, r.product_ids]));
}

/** A collection's products in merchandised order (position 1-based); current, non-deleted products only. */
export async function collectionMembers(
  db: Db,
  storeId: string,
  collectionId: string,
  opts: { offset?: number; limit?: number } = {},
): Promise<{ product_id: string; position: number }[]> {
  const limit = Math.min(Math.max(opts.limit ?? 100_000, 1), 1_000_000);
  const rows = await db.query<{ product_id: string; position: string }>(
    `SELECT toString(m.product_id) AS product_id, m.position AS position
     FROM (
       SELECT product_id, position FROM (
         SELECT product_ids FROM catalog_collection_members FINAL
         WHERE store_id = {store:String} AND collection_id = toUInt64({cid:String}) AND is_deleted = 0
       ) ARRAY JOIN product_ids AS product_id, arrayEnumerate(product_ids) AS position
     ) AS m
     WHERE m.product_id IN (
       SELECT product_id FROM catalog_products FINAL
       WHERE store_id = {store:String} AND is_deleted = 0
         AND product_id IN (
           SELECT arrayJoin(product_ids) FROM catalog_collection_members FINAL
           WHERE store_id = {store:String} AND collection_id = toUInt64({cid:String}) AND is_deleted = 0))
     ORDER BY m.position
     LIMIT {limit:UInt32} OFFSET {offset:UInt32}`,
    { store: storeId, cid: collectionId, limit, offset: Math.max(opts.offset ?? 0, 0) },
  );
  return rows.map((r) => ({ product_id: r.product_id, position: Number(r.position) }));
}

/** The current collections each product belongs to (id, handle, title), for `collection_titles`. */
export async function collectionsOfProducts(
  db: Db,
  storeId: string,
  productIds: readonly string[],
): Promise<Map<string, { id: string; handle: string; title: string }[]>> {
  const out = new Map<string, { id: string; handle: string; title: string }[]>();
  if (productIds.length === 0) return out;
  const rows = await db.query<{ product_id: string; id: string; handle: string; title: string }>(
    `SELECT toString(product_id) AS product_id, toString(m.collection_id) AS id, c.handle AS handle, c.title AS title
     FROM (
       SELECT collection_id, product_id FROM (
         SELECT collection_id, product_ids FROM catalog_collection_members FINAL WHERE store_id = {store:String} AND is_deleted = 0
       ) ARRAY JOIN product_ids AS product_id
       WHERE product_id IN {ids:Array(UInt64)}
     ) AS m
     INNER JOIN (
       SELECT collection_id, handle, title FROM catalog_collections FINAL WHERE store_id = {store:String} AND is_deleted = 0
     ) AS c ON c.collection_id = m.collection_id
     ORDER BY product_id, c.title`,
    { store: storeId, ids: u64s(productIds) },
  );
  for (const r of rows) {
    const list = out.get(r.product_id) ?? [];
    list.push({ id: r.id, handle: r.handle, title: r.title });
    out.set(r.product_id, list);
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// content

export interface ContentView {
  content_type: 'article' | 'page';
  content_id: string;
  handle: string;
  title: string;
  summary_text: string;
  body_text: string;
  author: string | null;
  tags: string[];
  image: { url: string; width: number | null; height: number | null; altText: string | null } | null;
  blog_handle: string | null;
  published_at: string | null;
  updated_at: string;
  seo_hidden: boolean;
}

/** Current articles and pages of a store; by default only published ones not hidden from search. */
export async function contentItems(
  db: Db,
  storeId: string,
  opts: { contentType?: 'article' | 'page'; includeHidden?: boolean } = {},
): Promise<ContentView[]> {
  const rows = await db.query<{
    content_type: string;
    content_id: string;
    handle: string;
    title: string;
    summary_text: string;
    body_text: string;
    author: string | null;
    tags: string[];
    image: string;
    blog_handle: string | null;
    published_at: string | null;
    updated_at: string;
    seo_hidden: number;
  }>(
    `SELECT toString(content_type) AS content_type, toString(content_id) AS content_id, handle, title, summary_text, body_text, author, tags,
            image, blog_handle, toString(published_at) AS published_at, toString(updated_at) AS updated_at, seo_hidden
     FROM catalog_content FINAL
     WHERE store_id = {store:String} AND is_deleted = 0
       AND ({type:String} = '' OR content_type = {type:String})
       AND ({all:UInt8} = 1 OR (seo_hidden = 0 AND published_at IS NOT NULL))
     ORDER BY content_type, content_id`,
    { store: storeId, type: opts.contentType ?? '', all: opts.includeHidden ? 1 : 0 },
  );
  return rows.map((r) => ({
    content_type: r.content_type as ContentView['content_type'],
    content_id: r.content_id,
    handle: r.handle,
    title: r.title,
    summary_text: r.summary_text,
    body_text: r.body_text,
    author: r.author,
    tags: r.tags,
    image: parseJson(r.image, null),
    blog_handle: r.blog_handle,
    published_at: toIso(r.published_at),
    updated_at: toIso(r.updated_at) as string,
    seo_hidden: Number(r.seo_hidden) === 1,
  }));
}

// ------------------------------------------------------------------------------------------------
// availability and inventory

/** product id → available (any variant available); products without a current record are absent. */
export async function productAvailability(
  db: Db,
  storeId: string,
  productIds: readonly string[],
): Promise<Map<string, boolean>> {
  const products = await productsByIds(db, storeId, productIds);
  return new Map(products.map((p) => [p.id, p.available]));
}

/** Stock per variant and location of the given products. */
export async function inventoryByLocation(
  db: Db,
  storeId: string,
  productIds: readonly string[],
): Promise<{ product_id: string; variant_id: string; location_id: string; available: number }[]> {
  if (productIds.length === 0) return [];
  const variants = await db.query<{ product_id: string; variant_id: string; item: string }>(
    `SELECT toString(product_id) AS product_id, toString(v.id) AS variant_id, toString(v.inventory_item_id) AS item
     FROM catalog_products FINAL ARRAY JOIN variants AS v
     WHERE store_id = {store:String} AND is_deleted = 0 AND product_id IN {ids:Array(UInt64)}`,
    { store: storeId, ids: u64s(productIds) },
  );
  if (variants.length === 0) return [];
  const byItem = new Map(variants.filter((v) => v.item !== '0').map((v) => [v.item, v]));
  const byVariant = new Map(variants.map((v) => [v.variant_id, v]));
  const rows = await db.query<{ item: string; vid: string; location_id: string; available: number }>(
    `SELECT toString(inventory_item_id) AS item, toString(variant_id) AS vid, toString(location_id) AS location_id, available
     FROM catalog_inventory_levels FINAL
     WHERE store_id = {store:String} AND is_deleted = 0
       AND (inventory_item_id IN {items:Array(UInt64)}
            OR (inventory_item_id = 0 AND variant_id IN {vids:Array(UInt64)}))`,
    { store: storeId, items: u64s([...byItem.keys()]), vids: u64s([...byVariant.keys()]) },
  );
  const out: { product_id: string; variant_id: string; location_id: string; available: number }[] = [];
  for (const r of rows) {
    const v = r.item !== '0' ? byItem.get(r.item) : byVariant.get(r.vid);
    if (v)
      out.push({
        product_id: v.product_id,
        variant_id: v.variant_id,
        location_id: r.location_id,
        available: Number(r.available),
      });
  }
  const key = (x: { product_id: string; variant_id: string; location_id: string }) =>
    [x.product_id, x.variant_id, x.location_id].map((s) => s.padStart(20, '0')).join('|');
  return out.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** Products with stock at any of `locationIds` (location-based stock rules). */
export async function productsAvailableAtLocations(
  db: Db,
  storeId: string,
  locationIds: readonly string[],
): Promise<Set<string>> {
  if (locationIds.length === 0) return new Set();
  const rows = await db.query<{ product_id: string }>(
    `SELECT DISTINCT toString(product_id) AS product_id FROM catalog_product_location_availability
     WHERE store_id = {store:String} AND available = 1 AND location_id IN {ids:Array(UInt64)}`,
    { store: storeId, ids: u64s(locationIds) },
  );
  return new Set(rows.map((r) => r.product_id));
}

// ------------------------------------------------------------------------------------------------
// prices and B2B

export interface PriceView {
  variant_id: string;
  product_id: string;
  currency: string;
  price: string;
  compare_at_price: string | null;
}

/** Prices of a price list (a platform list, or `market-<code>`; see normalize.ts marketPriceListId). */
export async function priceListPrices(
  db: Db,
  storeId: string,
  priceListId: string,
  opts: { variantIds?: readonly string[]; productIds?: readonly string[] } = {},
): Promise<Map<string, PriceView>> {
  const rows = await db.query<{
    variant_id: string;
    product_id: string;
    currency: string;
    price: string;
    compare_at_price: string | null;
  }>(
    `SELECT toString(variant_id) AS variant_id, toString(product_id) AS product_id, toString(currency) AS currency,
            toString(price) AS price, toString(compare_at_price) AS compare_at_price
     FROM catalog_prices_current
     WHERE store_id = {store:String} AND price_list_id = {list:String}
       AND ({all_v:UInt8} = 1 OR variant_id IN {vids:Array(UInt64)})
       AND ({all_p:UInt8} = 1 OR product_id IN {pids:Array(UInt64)})`,
    {
      store: storeId,
      list: priceListId,
      all_v: opts.variantIds ? 0 : 1,
      all_p: opts.productIds ? 0 : 1,
      vids: u64s(opts.variantIds ?? []),
      pids: u64s(opts.productIds ?? []),
    },
  );
  return new Map(
    rows.map((r) => [
      r.variant_id,
      { ...r, price: money(r.price), compare_at_price: r.compare_at_price === null ? null : money(r.compare_at_price) },
    ]),
  );
}

/** Every current price entry of a store (all lists, or the given (list, variant) pairs), grouped by list. */
export async function storePrices(
  db: Db,
  storeId: string,
  only?: readonly { priceListId: string; variantId: string }[],
): Promise<Map<string, Map<string, PriceView>>> {
  const rows = await db.query<{
    list: string;
    vid: string;
    pid: string;
    currency: string;
    price: string;
    compare_at_price: string | null;
  }>(
    // aliases differ from the column names: a WHERE clause would otherwise see the String aliases.
    // Two IN sets (hashed once) rather than a (list, variant) pair test: `has(array, tuple)` scans the
    // array for every row, minutes for a backlog of changed prices; the exact pairs are kept below.
    `SELECT price_list_id AS list, toString(variant_id) AS vid, toString(product_id) AS pid,
            toString(currency) AS currency, toString(price) AS price, toString(compare_at_price) AS compare_at_price
     FROM catalog_prices_current
     WHERE store_id = {store:String}
       AND ({all:UInt8} = 1 OR (variant_id IN {vids:Array(UInt64)} AND price_list_id IN {lists:Array(String)}))`,
    {
      store: storeId,
      all: only ? 0 : 1,
      lists: [...new Set((only ?? []).map((o) => o.priceListId))],
      vids: [...new Set((only ?? []).map((o) => o.variantId))].map(BigInt),
    },
  );
  const wanted = only && new Set(only.map((o) => `${o.priceListId}\n${o.variantId}`));
  const out = new Map<string, Map<string, PriceView>>();
  for (const r of rows) {
    if (wanted && !wanted.has(`${r.list}\n${r.vid}`)) continue;
    let list = out.get(r.list);
    if (!list) out.set(r.list, (list = new Map()));
    list.set(r.vid, {
      variant_id: r.vid,
      product_id: r.pid,
      currency: r.currency,
      price: money(r.price),
      compare_at_price: r.compare_at_price === null ? null : money(r.compare_at_price),
    });
  }
  return out;
}

export interface B2bCatalogView {
  catalog_id: string;
  title: string;
  price_list_id: string | null;
  all_products: boolean;
  company_location_ids: string[];
  /** listed products and collections (the collections' members are in the catalog too) */
  product_ids: string[];
  collection_ids: string[];
}

/** The active B2B catalogs assigned to a company location (numeric id or gid://…/CompanyLocation/<id>). */
export async function b2bCatalogsForLocation(
  db: Db,
  storeId: string,
  companyLocationId: string,
): Promise<B2bCatalogView[]> {
  const id = toNumericId(companyLocationId, 'CompanyLocation');
  if (id === undefined) return [];
  return b2bCatalogs(db, storeId, { locationId: id });
}

/** Active B2B catalogs by id or by assigned location. */
export async function b2bCatalogs(
  db: Db,
  storeId: string,
  by: { catalogId?: string; locationId?: string } = {},
): Promise<B2bCatalogView[]> {
  const rows = await db.query<{
    catalog_id: string;
    title: string;
    price_list_id: string | null;
    all_products: number;
    location_ids: string[];
    product_ids: string[];
    collection_ids: string[];
  }>(
    `SELECT catalog_id, title, price_list_id, all_products, arrayMap(x -> toString(x), company_location_ids) AS location_ids,
            arrayMap(x -> toString(x), product_ids) AS product_ids, arrayMap(x -> toString(x), collection_ids) AS collection_ids
     FROM catalog_b2b_catalogs FINAL
     WHERE store_id = {store:String} AND is_deleted = 0 AND status = 'active'
       AND ({cid:String} = '' OR catalog_id = {cid:String})
       AND ({loc:String} = '' OR has(company_location_ids, toUInt64OrZero({loc:String})))
     ORDER BY catalog_id`,
    { store: storeId, cid: by.catalogId ?? '', loc: by.locationId ?? '' },
  );
  return rows.map((r) => ({
    catalog_id: r.catalog_id,
    title: r.title,
    price_list_id: r.price_list_id,
    all_products: Number(r.all_products) === 1,
    company_location_ids: r.location_ids,
    product_ids: r.product_ids,
    collection_ids: r.collection_ids,
  }));
}

/** The product ids a B2B catalog includes; `all` when it includes every product. */
export async function b2bCatalogProducts(db: Db, storeId: string, catalogId: string): Promise<Set<string> | 'all'> {
  const [cat] = await b2bCatalogs(db, storeId, { catalogId });
  if (!cat) return new Set();
  if (cat.all_products) return 'all';
  const rows = await db.query<{ product_id: string }>(
    `SELECT toString(product_id) AS product_id FROM catalog_b2b_scope WHERE store_id = {store:String} AND catalog_id = {cid:String}`,
    { store: storeId, cid: catalogId },
  );
  return new Set(rows.map((r) => r.product_id));
}
