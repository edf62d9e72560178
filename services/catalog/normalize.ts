// Platform payloads → catalog records (schemas/catalog.ts). Used by the webhooks and the bulk import, so
// a product reads the same whichever way it arrived. Every function validates its input with the zod
// input schema and returns either the records or the issues with field paths.
import type { z } from 'zod';
import {
  B2bCatalogInput,
  type CatalogCollection,
  type CatalogContent,
  type CatalogInventoryLevel,
  type CatalogMetaobject,
  type CatalogPricing,
  type CatalogProduct,
  type CatalogVariant,
  type Metafields,
  type MetafieldsInput,
  type MetaobjectSwatch,
  PriceInput,
  ShopifyCollectionInput,
  ShopifyContentInput,
  ShopifyInventoryLevelInput,
  ShopifyMetaobjectInput,
  ShopifyOrderInput,
  ShopifyProductInput,
  type ShopifyVariantInput,
} from '../../schemas/catalog.ts';
import { type Order, OrderInputSchema, OrderSchema } from '../../schemas/orders.ts';

export type Source = 'webhook' | 'import';

export interface NormalizeOptions {
  source: Source;
  /** used as updated_at when the payload has none (ISO 8601 UTC) */
  now: string;
}

export interface FieldIssue {
  path: string;
  message: string;
}

export type Normalized<T> = { ok: true; value: T } | { ok: false; issues: FieldIssue[] };

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out ? `.${String(p)}` : String(p);
  }
  return out || '(root)';
}

function issuesOf(err: z.ZodError, prefix = ''): FieldIssue[] {
  return err.issues.map((i) => ({ path: prefix + formatPath(i.path), message: i.message }));
}

// ------------------------------------------------------------------------------------------------
// text helpers

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', '#39': "'" };

export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,8}|#39);/gi, (m, e: string) => {
    const lower = e.toLowerCase();
    if (lower in ENTITIES) return ENTITIES[lower];
    if (lower.startsWith('#x')) return safeCodePoint(Number.parseInt(lower.slice(2), 16), m);
    if (lower.startsWith('#')) return safeCodePoint(Number.parseInt(lower.slice(1), 10), m);
    return m;
  });
}

function safeCodePoint(cp: number, fallback: string): string {
  return Number.isFinite(cp) && cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : fallback;
}

function escapeAttr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function attr(tag: string, name: string): string | undefined {
  const m = new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i').exec(tag);
  return m ? decodeEntities(m[1] ?? m[2] ?? m[3] ?? '') : undefined;
}

const BLOCK_TAG =
  /^(p|div|br|li|ul|ol|h[1-6]|tr|td|th|table|section|article|blockquote|hr|header|footer|figure|figcaption)$/i;

/**
 * HTML → text. `keepImages`: `<img>` tags survive as `<img src="…" alt="…">` (only those two attributes,
 * re-escaped), everything else is stripped; script/style content and comments are dropped, entities are
 * decoded, block boundaries become spaces and whitespace collapses.
 */
export function stripHtml(html: string, opts: { keepImages?: boolean } = {}): string {
  if (!html) return '';
  let s = html.replace(/<!--[\s\S]*?-->/g, ' ').replace(/<(script|style|template|noscript)\b[\s\S]*?<\/\1\s*>/gi, ' ');
  const images: string[] = [];
  s = s.replace(/<\/?([a-zA-Z][a-zA-Z0-9-]*)\b[^>]*>/g, (tag, name: string) => {
    if (opts.keepImages && name.toLowerCase() === 'img') {
      const src = attr(tag, 'src');
      if (!src || !/^(https?:)?\/\//i.test(src)) return ' ';
      const alt = attr(tag, 'alt') ?? '';
      images.push(`<img src="${escapeAttr(src)}" alt="${escapeAttr(alt)}">`);
      return ` \u0000${images.length - 1}\u0000 `;
    }
    return BLOCK_TAG.test(name) ? ' ' : '';
  });
  s = s.replace(/<[^>]*$/, ''); // an unterminated tag at the end
  // a stray `<` or `>` that is not a tag stays as text after decoding
  s = decodeEntities(s).replace(/\s+/g, ' ').trim();
  if (images.length) s = s.replace(/\u0000(\d+)\u0000/g, (_m, i: string) => images[Number(i)] ?? '');
  return s;
}

export const SUMMARY_MAX_CHARS = 500;

/** A summary: HTML stripped except images, cut at a word boundary after at most `max` text characters. */
export function summarize(html: string, max = SUMMARY_MAX_CHARS): string {
  const s = stripHtml(html, { keepImages: true });
  // image tags do not count towards the length and are never cut
  let visible = 0;
  let out = '';
  for (const part of s.split(/(<img [^>]*>)/)) {
    if (part.startsWith('<img ')) {
      out += part;
      continue;
    }
    if (visible + part.length <= max) {
      out += part;
      visible += part.length;
      continue;
    }
    const room = max - visible;
    let cut = part.slice(0, room);
    const space = cut.lastIndexOf(' ');
    if (space > room * 0.6) cut = cut.slice(0, space);
    out += `${cut.trimEnd()}…`;
    break;
  }
  return out.replace(/\s+/g, ' ').trim();
}

/**
 * JSON text with integer literals beyond 2^53 turned into strings, so `JSON.parse` keeps platform ids
 * exact (Shopify ids are int64; its test notifications use ids like 788032119674292922). Only bare
 * integers of 16+ digits outside strings are quoted; every id field accepts digit strings.
 */
export function quoteBigIntegers(text: string): string {
  let out = '';
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash
      else if (c === 34) inString = false;
      continue;
    }
    if (c === 34) {
      inString = true;
      continue;
    }
    const startsNumber =
      (c >= 48 && c <= 57) ||
      (c === 45 && i + 1 < text.length && text.charCodeAt(i + 1) >= 48 && text.charCodeAt(i + 1) <= 57);
    if (!startsNumber) continue;
    let j = c === 45 ? i + 1 : i;
    while (j < text.length && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j++;
    const next = j < text.length ? text[j] : '';
    const digits = j - (c === 45 ? i + 1 : i);
    if (
      digits >= 16 &&
      next !== '.' &&
      next !== 'e' &&
      next !== 'E' &&
      !Number.isSafeInteger(Number(text.slice(i, j)))
    ) {
      out += `${text.slice(last, i)}"${text.slice(i, j)}"`;
      last = j;
    }
    i = j - 1;
  }
  return last === 0 ? text : out + text.slice(last);
}

// ------------------------------------------------------------------------------------------------
// metafields

const JSON_TYPES = /^(json|list\.|rating|dimension|volume|weight|money|link|rich_text_field)/;

function metafieldValue(value: unknown, type: string | null | undefined): unknown {
  if (typeof value !== 'string' || !type) return value;
  if (type === 'number_integer') return /^-?\d{1,15}$/.test(value) ? Number(value) : value;
  if (type === 'number_decimal') return Number.isFinite(Number(value)) && value.trim() !== '' ? Number(value) : value;
  if (type === 'boolean') return value === 'true' ? true : value === 'false' ? false : value;
  if (JSON_TYPES.test(type)) {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return value;
}

/** Metafields as namespace → key → value; a Shopify list is grouped, JSON-typed values are parsed. */
export function normalizeMetafields(input: MetafieldsInput): Metafields {
  if (!input) return {};
  if (!Array.isArray(input)) return input as Metafields;
  const out: Metafields = {};
  for (const m of input) {
    const ns = (out[m.namespace] ??= {});
    ns[m.key] = metafieldValue(m.value, m.type);
  }
  return out;
}

/** metafield `default_sort_order` in any namespace (the app namespace first), as a sort order code */
export function defaultSortOrder(metafields: Metafields): string | null {
  const namespaces = Object.keys(metafields).sort((a, b) => rank(a) - rank(b));
  for (const ns of namespaces) {
    const v = metafields[ns]?.default_sort_order;
    if (typeof v === 'string' && v.trim()) return v.trim();
  }
  return null;
}

function rank(ns: string): number {
  if (ns.startsWith('$app') || ns.startsWith('app--')) return 0;
  if (ns === 'custom') return 1;
  return 2;
}

function truthy(v: unknown): boolean {
  return v === true || v === 1 || v === '1' || v === 'true';
}

// ------------------------------------------------------------------------------------------------
// products

export interface ProductRecords {
  product: CatalogProduct;
  /** per-location stock carried by the source (bulk import), as inventory records */
  inventory: CatalogInventoryLevel[];
}

function variantAvailable(v: z.output<typeof ShopifyVariantInput>): boolean {
  if (typeof v.available === 'boolean') return v.available;
  if (!v.inventory_management) return true;
  if (v.inventory_policy === 'continue') return true;
  if (v.inventory_levels?.length) return v.inventory_levels.some((l) => l.available > 0);
  return (v.inventory_quantity ?? 0) > 0;
}

export function normalizeProduct(storeId: string, raw: unknown, opts: NormalizeOptions): Normalized<ProductRecords> {
  const r = ShopifyProductInput.safeParse(raw);
  if (!r.success) return { ok: false, issues: issuesOf(r.error) };
  const p = r.data;
  const updatedAt = p.updated_at ?? opts.now;
  const variantsIn = [...(p.variants ?? [])]
    .map((v, i) => ({ v, i }))
    .sort((a, b) => (a.v.position ?? a.i + 1) - (b.v.position ?? b.i + 1) || a.i - b.i);
  const variants: CatalogVariant[] = variantsIn.map(({ v }, i) => ({
    id: v.id,
    title: v.title,
    sku: v.sku,
    barcode: v.barcode,
    price: v.price,
    compare_at_price: v.compare_at_price,
    option1: v.option1,
    option2: v.option2,
    option3: v.option3,
    position: v.position ?? i + 1,
    available: variantAvailable(v),
    inventory_quantity:
      v.inventory_quantity ??
      (v.inventory_levels?.length ? v.inventory_levels.reduce((s, l) => s + l.available, 0) : null),
    inventory_item_id: v.inventory_item_id,
    inventory_policy: v.inventory_policy,
    inventory_management: v.inventory_management,
    requires_components: v.requires_components,
    image_id: v.image_id,
  }));
  const inventory: CatalogInventoryLevel[] = [];
  for (const { v } of variantsIn) {
    for (const l of v.inventory_levels ?? []) {
      inventory.push({
        store_id: storeId,
        inventory_item_id: v.inventory_item_id,
        variant_id: v.id,
        location_id: l.location_id,
        available: l.available,
        updated_at: updatedAt,
        source: opts.source,
      });
    }
  }
  const images = [...(p.images ?? [])]
    .map((im, i) => ({ im, i }))
    .sort((a, b) => (a.im.position ?? a.i + 1) - (b.im.position ?? b.i + 1) || a.i - b.i)
    .map(({ im }, i) => ({
      id: im.id,
      src: im.src,
      alt: im.alt,
      width: im.width,
      height: im.height,
      position: im.position ?? i + 1,
      variant_ids: im.variant_ids ?? [],
    }));
  const options = (p.options ?? []).map((o, i) => ({
    name: o.name,
    position: o.position ?? i + 1,
    values: o.values ?? [],
  }));
  const metafields = normalizeMetafields(p.metafields);
  const product: CatalogProduct = {
    store_id: storeId,
    product_id: p.id,
    title: p.title,
    handle: p.handle,
    body_html: p.body_html,
    vendor: p.vendor,
    product_type: p.product_type,
    tags: p.tags,
    status: p.status,
    published_at: p.published_at,
    created_at: p.created_at,
    updated_at: updatedAt,
    options,
    variants,
    images,
    metafields,
    is_gift_card: p.is_gift_card,
    combined_listing_parent_product_id: p.combined_listing_parent_product_id,
    combined_listing_role: p.combined_listing_role,
    has_variants_that_require_components:
      p.has_variants_that_require_components || variants.some((v) => v.requires_components),
    category: p.category ? { id: p.category.id, name: p.category.name, full_name: p.category.full_name } : null,
    source: opts.source,
  };
  return { ok: true, value: { product, inventory } };
}

// ------------------------------------------------------------------------------------------------
// collections

export interface CollectionRecords {
  collection: CatalogCollection;
  /** the ordered membership, when the payload carried it */
  members: CatalogCollection | null;
}

export function normalizeCollection(
  storeId: string,
  raw: unknown,
  opts: NormalizeOptions,
): Normalized<CollectionRecords> {
  const r = ShopifyCollectionInput.safeParse(raw);
  if (!r.success) return { ok: false, issues: issuesOf(r.error) };
  const c = r.data;
  const updatedAt = c.updated_at ?? opts.now;
  const metafields = normalizeMetafields(c.metafields);
  const collection: CatalogCollection = {
    store_id: storeId,
    collection_id: c.id,
    record_type: 'collection',
    updated_at: updatedAt,
    collection: {
      handle: c.handle,
      title: c.title,
      body_html: c.body_html,
      collection_type: c.collection_type ?? (c.rules?.length ? 'smart' : 'custom'),
      sort_order: c.sort_order || 'manual',
      default_sort_order: defaultSortOrder(metafields),
      published: c.published ?? c.published_at !== null,
      published_at: c.published_at,
      image: c.image?.src
        ? {
            id: c.image.id ?? null,
            src: c.image.src,
            alt: c.image.alt ?? null,
            width: c.image.width ?? null,
            height: c.image.height ?? null,
            position: 1,
            variant_ids: [],
          }
        : null,
      metafields,
    },
    members: null,
    source: opts.source,
  };
  let productIds: string[] | null = null;
  if (c.product_ids) productIds = c.product_ids;
  else if (c.products) {
    const listed = c.products.map((m, i) => ({
      id: 'product_id' in m ? (m.product_id ?? m.id) : m.id,
      position: m.position ?? i + 1,
      i,
    }));
    const missing = listed.findIndex((m) => m.id === null);
    if (missing >= 0)
      return { ok: false, issues: [{ path: `products[${missing}].product_id`, message: 'expected a product id' }] };
    productIds = listed.sort((a, b) => a.position - b.position || a.i - b.i).map((m) => m.id as string);
  }
  let members: CatalogCollection | null = null;
  if (productIds) {
    const seen = new Set<string>();
    members = {
      store_id: storeId,
      collection_id: c.id,
      record_type: 'members',
      updated_at: updatedAt,
      collection: null,
      members: { product_ids: productIds.filter((id) => !seen.has(id) && seen.add(id)) },
      source: opts.source,
    };
  }
  return { ok: true, value: { collection, members } };
}

// ------------------------------------------------------------------------------------------------
// articles and pages

export function normalizeContent(
  storeId: string,
  contentType: 'article' | 'page',
  raw: unknown,
  opts: NormalizeOptions,
): Normalized<CatalogContent> {
  const r = ShopifyContentInput.safeParse(raw);
  if (!r.success) return { ok: false, issues: issuesOf(r.error) };
  const c = r.data;
  const metafields = normalizeMetafields(c.metafields);
  const imageUrl = c.image?.src ?? c.image?.url ?? null;
  const published = c.published ?? true;
  return {
    ok: true,
    value: {
      store_id: storeId,
      content_type: contentType,
      content_id: c.id,
      handle: c.handle,
      title: c.title,
      body_html: c.body_html,
      summary_text: summarize(c.summary_html || c.body_html),
      body_text: stripHtml(c.body_html),
      author: contentType === 'page' ? (c.author ?? null) : c.author,
      tags: contentType === 'page' ? [] : c.tags,
      image: imageUrl
        ? {
            url: imageUrl,
            width: c.image?.width ?? null,
            height: c.image?.height ?? null,
            alt_text: c.image?.alt ?? c.image?.altText ?? null,
          }
        : null,
      blog_id: contentType === 'article' ? c.blog_id : null,
      blog_handle: contentType === 'article' ? c.blog_handle : null,
      published_at: published ? c.published_at : null,
      created_at: c.created_at,
      updated_at: c.updated_at ?? opts.now,
      seo_hidden: truthy(metafields.seo?.hidden),
      metafields,
      source: opts.source,
    },
  };
}

// ------------------------------------------------------------------------------------------------
// inventory, prices, B2B catalogs

export function normalizeInventoryLevel(
  storeId: string,
  raw: unknown,
  opts: NormalizeOptions,
): Normalized<CatalogInventoryLevel> {
  const r = ShopifyInventoryLevelInput.safeParse(raw);
  if (!r.success) return { ok: false, issues: issuesOf(r.error) };
  const l = r.data;
  return {
    ok: true,
    value: {
      store_id: storeId,
      inventory_item_id: l.inventory_item_id,
      variant_id: l.variant_id,
      location_id: l.location_id,
      available: l.available,
      updated_at: l.updated_at ?? opts.now,
      source: opts.source,
    },
  };
}

export function normalizePrice(storeId: string, raw: unknown, opts: NormalizeOptions): Normalized<CatalogPricing> {
  const r = PriceInput.safeParse(raw);
  if (!r.success) return { ok: false, issues: issuesOf(r.error) };
  const p = r.data;
  return {
    ok: true,
    value: {
      store_id: storeId,
      record_type: 'price',
      updated_at: p.updated_at ?? opts.now,
      price: {
        price_list_id: p.price_list_id ?? marketPriceListId(p.market as string),
        variant_id: p.variant_id,
        product_id: p.product_id,
        currency: p.currency,
        price: p.price,
        compare_at_price: p.compare_at_price,
      },
      catalog: null,
      source: opts.source,
    },
  };
}

/** The price list of a market that has no platform price list of its own. */
export function marketPriceListId(marketCode: string): string {
  return `market-${marketCode.toLowerCase()}`;
}

export function normalizeB2bCatalog(storeId: string, raw: unknown, opts: NormalizeOptions): Normalized<CatalogPricing> {
  const r = B2bCatalogInput.safeParse(raw);
  if (!r.success) return { ok: false, issues: issuesOf(r.error) };
  const c = r.data;
  const uniq = (ids: string[] | null | undefined) => [...new Set(ids ?? [])];
  return {
    ok: true,
    value: {
      store_id: storeId,
      record_type: 'b2b_catalog',
      updated_at: c.updated_at ?? opts.now,
      price: null,
      catalog: {
        catalog_id: c.id,
        title: c.title,
        status: c.status,
        company_location_ids: uniq(c.company_location_ids),
        price_list_id: c.price_list_id ?? null,
        all_products: c.all_products,
        product_ids: uniq(c.product_ids),
        collection_ids: uniq(c.collection_ids),
      },
      source: opts.source,
    },
  };
}

// ------------------------------------------------------------------------------------------------
// metaobjects

/** `#rgb`, `#rrggbb` or `#rrggbbaa` (with or without `#`) → `#rrggbb[aa]` in lower case; anything else → undefined */
export function hexColor(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  const m = /^#?([0-9a-f]{3}|[0-9a-f]{6}|[0-9a-f]{8})$/i.exec(v.trim());
  if (!m) return undefined;
  const h = m[1].toLowerCase();
  return `#${h.length === 3 ? [...h].map((c) => c + c).join('') : h}`;
}

function httpUrl(v: unknown): string | undefined {
  return typeof v === 'string' && /^https?:\/\/\S+$/i.test(v.trim()) ? v.trim() : undefined;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);

/**
 * A file reference → its URL and alt text: the resolved `reference` GraphQL returns (MediaImage
 * `{image: {url, altText}}`, GenericFile `{url, alt}`, `{preview: {image: {url}}}`), else the value itself
 * when it is an http(s) URL or an object with `url`/`src`. A bare file GID resolves to nothing.
 */
function fileOf(value: unknown, reference: unknown): { url: string; alt: string | null } | undefined {
  for (const c of [reference, value]) {
    if (c === null || c === undefined) continue;
    const direct = httpUrl(c);
    if (direct) return { url: direct, alt: null };
    if (typeof c !== 'object') continue;
    const o = c as Record<string, unknown>;
    const image = (o.image ?? (o.preview as Record<string, unknown> | undefined)?.image) as
      | Record<string, unknown>
      | undefined;
    const url =
      httpUrl(image?.url) ?? httpUrl(image?.src) ?? httpUrl(image?.originalSrc) ?? httpUrl(o.url) ?? httpUrl(o.src);
    if (url) return { url, alt: str(image?.altText) ?? str(image?.alt) ?? str(o.altText) ?? str(o.alt) };
  }
  return undefined;
}

/**
 * The swatch of a metaobject from the standard color-pattern fields (Shopify `shopify--color-pattern`,
 * or any type with the same field keys): an `image` file wins (Shopify shows the image when both are
 * set), else `color` — one hex colour, or a list of them — gives the colours. Null when neither is usable.
 */
export function metaobjectSwatch(
  fields: Record<string, unknown>,
  references: Record<string, unknown> = {},
  label: string | null = null,
): MetaobjectSwatch | null {
  const image = fileOf(fields.image, references.image);
  if (image) return { type: 'image', colors: [], url: image.url, alt: image.alt ?? label };
  const raw = fields.color ?? fields.colors;
  const list = Array.isArray(raw)
    ? raw
    : typeof raw === 'string' && raw.trim().startsWith('[')
      ? parseList(raw)
      : [raw];
  const colors = [...new Set(list.map(hexColor).filter((c): c is string => c !== undefined))];
  return colors.length ? { type: 'color', colors, url: null, alt: null } : null;
}

function parseList(text: string): unknown[] {
  try {
    const v = JSON.parse(text);
    return Array.isArray(v) ? v : [];
  } catch {
    return [];
  }
}

export function normalizeMetaobject(
  storeId: string,
  raw: unknown,
  opts: NormalizeOptions,
): Normalized<CatalogMetaobject> {
  const r = ShopifyMetaobjectInput.safeParse(raw);
  if (!r.success) return { ok: false, issues: issuesOf(r.error) };
  const m = r.data;
  const fields: Record<string, unknown> = {};
  const references: Record<string, unknown> = {};
  if (Array.isArray(m.fields)) {
    for (const f of m.fields) {
      fields[f.key] = metafieldValue(f.value, f.type);
      if (f.reference !== undefined && f.reference !== null) references[f.key] = f.reference;
    }
  } else if (m.fields) Object.assign(fields, m.fields);
  const label = str(fields.label);
  return {
    ok: true,
    value: {
      store_id: storeId,
      metaobject_id: m.id,
      type: (m.metaobject_type ?? m.type) as string,
      handle: m.handle,
      display_name: m.display_name ?? m.displayName ?? label ?? m.handle,
      fields,
      swatch: metaobjectSwatch(fields, references, m.display_name ?? m.displayName ?? label),
      updated_at: m.updated_at ?? m.updatedAt ?? opts.now,
      source: opts.source,
    },
  };
}

// ------------------------------------------------------------------------------------------------
// orders

/** cart/note attributes that carry the storefront session id (first match wins) */
export const SESSION_ATTRIBUTES = ['_sd_session_id', 'sd_session_id', '_session_id', 'session_id'];

export type NormalizedOrder =
  | { ok: true; value: Order }
  | { ok: true; value: null; skipped: string }
  | { ok: false; issues: FieldIssue[] };

/** A Shopify order → the `commerce.orders.v1` value. Test orders are skipped (value null). */
export function normalizeOrder(
  storeId: string,
  raw: unknown,
  opts: NormalizeOptions & { cancelled?: boolean },
): NormalizedOrder {
  const r = ShopifyOrderInput.safeParse(raw);
  if (!r.success) return { ok: false, issues: issuesOf(r.error) };
  const o = r.data;
  if (o.test) return { ok: true, value: null, skipped: 'test order' };
  const attrs = new Map((o.note_attributes ?? []).map((a) => [a.name, a.value]));
  const sessionAttr = SESSION_ATTRIBUTES.map((n) => attrs.get(n)).find((v) => typeof v === 'string' && v.trim() !== '');
  const input = {
    store_id: storeId,
    order_id: o.id,
    customer_id: o.customer?.id ?? null,
    session_id: typeof sessionAttr === 'string' ? sessionAttr.trim().slice(0, 128) : null,
    created_at: o.processed_at ?? o.created_at,
    updated_at: o.updated_at ?? opts.now,
    currency: o.currency,
    total_price: o.total_price,
    // custom and deleted-product lines have no product id: they count in the total, not per product
    line_items: o.line_items
      .filter((li) => li.product_id !== null && !li.gift_card)
      .map((li) => ({
        product_id: li.product_id as string,
        variant_id: li.variant_id,
        quantity: li.quantity,
        price: li.price,
      })),
    cancelled: opts.cancelled === true || o.cancelled_at !== null,
    source: opts.source,
  };
  const parsed = OrderInputSchema.safeParse(input);
  if (!parsed.success) return { ok: false, issues: issuesOf(parsed.error) };
  const out = OrderSchema.safeParse(parsed.data);
  if (!out.success) return { ok: false, issues: issuesOf(out.error) };
  return { ok: true, value: out.data };
}
