// The catalog as events: the values of the compacted catalog topics (products, collections, content,
// inventory, pricing, metaobjects) and the platform payloads they are normalized from (webhooks, bulk import).
//
// Two layers:
// - *records* (`CatalogProductSchema`, …): the normalized Kafka values, one shape per topic, strict and
//   platform-neutral. Their Avro schemas are generated from these zod schemas (schemas/avro/generate.ts),
//   so this file is the one source of truth. Ids are digit strings (platform ids can exceed 2^53), money
//   is a decimal string in major units, times are ISO 8601 UTC with milliseconds.
// - *inputs* (`ShopifyProductInput`, …): what a commerce platform sends (Shopify REST/webhook JSON, or the
//   same objects in a bulk export), lenient about formats (gid or number ids, comma-separated tags, ""
//   for null). services/catalog/normalize.ts turns an input into a record.
//
// Record keys (UTF-8, see `catalogKey`): `store:product_id`, `store:collection_id` (metadata) and
// `store:collection_id:members` (ordered membership), `store:article:id` / `store:page:id`,
// `store:i<inventory_item_id>:<location_id>` (or `v<variant_id>` when only the variant is known),
// `store:price:<price_list_id>:<variant_id>`, `store:b2b_catalog:<catalog_id>`, `store:metaobject:<id>`. A null value (tombstone)
// deletes the key. Versioning (projections): `updated_at` milliseconds, then the Kafka offset; a
// tombstone's version is its record timestamp.
import { z } from 'zod';
import type { Schema } from 'avsc';
import { avroFromZod } from './avro/generate.ts';
import { StoreId } from './config.ts';
import { decimal, decimalString, intLike, isoUtc, numericId, timestamp } from './events.ts';
import { parseGid, STORE_ID_PATTERN, toNumericId, UINT64_MAX } from './fields.ts';

// ------------------------------------------------------------------------------------------------
// shared pieces

/** store ids as the store directory issues them (schemas/config.ts StoreId) */
export const CatalogStoreId = StoreId;
/** digit-string id as stored (output side of numericId) */
const Digits = z
  .string()
  .regex(/^[1-9]\d{0,19}$/, 'expected a positive numeric id')
  .refine((v) => v.length < 20 || BigInt(v) <= UINT64_MAX, 'expected an id below 2^64');
/** a free-form item id (price list, B2B catalog): no `:` (key separator), no whitespace or control characters */
export const ItemRef = z
  .string()
  .trim()
  .regex(/^[^:\s\p{Cc}]{1,200}$/u, 'expected 1-200 characters without ":" , whitespace or control characters');
/** a free-form item id as a platform sends it: a string, a number or a gid (`gid://shopify/PriceList/7` → `7`) */
const itemRefInput = z
  .union([z.string().trim(), z.number().int().nonnegative()], { error: 'expected an id (string or number)' })
  .transform((v) => {
    const s = String(v);
    return parseGid(s)?.id ?? s;
  })
  .pipe(ItemRef);

/** A string that may arrive as null, missing or a number; normalized to a trimmed string ('' when absent). */
const text = (max: number) =>
  z
    .union([z.string(), z.number()])
    .nullish()
    .transform((v) => (v === undefined || v === null ? '' : String(v).trim()))
    .pipe(z.string().max(max));

/** As `text` but absent/empty → null. */
const nullableText = (max: number) =>
  z
    .union([z.string(), z.number()])
    .nullish()
    .transform((v) => {
      const s = v === undefined || v === null ? '' : String(v).trim();
      return s === '' ? null : s;
    })
    .pipe(z.string().max(max).nullable());

/** an optional timestamp: '' and null → null */
const optionalTimestamp = z
  .union([z.literal(''), z.null(), timestamp])
  .optional()
  .transform((v) => (v === undefined || v === null || v === '' ? null : v));

/** an optional price: '' and null → null */
const optionalDecimal = z
  .union([z.literal(''), z.null(), decimal])
  .optional()
  .transform((v) => (v === undefined || v === null || v === '' ? null : v));

/** an optional numeric id where '' and 0 also mean absent */
const optionalId = z
  .union([z.literal(''), z.literal(0), z.null(), numericId])
  .optional()
  .transform((v) => (v === undefined || v === null || v === '' || v === 0 ? null : v));

const optionalInt = (min: number, max: number) =>
  z
    .union([z.literal(''), z.null(), intLike(min, max)])
    .optional()
    .transform((v) => (v === undefined || v === null || v === '' ? null : v));

const bool = z
  .union([z.boolean(), z.enum(['true', 'false'])])
  .nullish()
  .transform((v) => v === true || v === 'true');

/** tags as a comma-separated string (Shopify REST) or an array (GraphQL, exports) → trimmed, de-duplicated */
const tagsInput = z
  .union([z.string().max(100_000), z.array(z.string().max(255)).max(1000)])
  .nullish()
  .transform((v) => {
    const list = v === undefined || v === null ? [] : typeof v === 'string' ? v.split(',') : v;
    const out: string[] = [];
    for (const t of list) {
      const s = t.trim();
      if (s && !out.includes(s)) out.push(s);
    }
    return out;
  })
  .pipe(z.array(z.string().max(255)).max(1000));

/** metafields as stored: namespace → key → value (JSON values parsed, see normalize.ts) */
export const MetafieldsSchema = z.record(z.string(), z.record(z.string(), z.unknown()));
export type Metafields = z.infer<typeof MetafieldsSchema>;

const MetafieldInput = z.object({
  namespace: z.string().trim().min(1).max(255),
  key: z.string().trim().min(1).max(255),
  value: z.unknown(),
  type: z.string().max(100).nullish(),
});
/** metafields as a list of {namespace, key, value, type} (Shopify) or already as namespace → key → value */
export const metafieldsInput = z
  .union([z.array(MetafieldInput).max(1000), z.record(z.string(), z.record(z.string(), z.unknown()))])
  .nullish();
export type MetafieldsInput = z.input<typeof metafieldsInput>;

// ------------------------------------------------------------------------------------------------
// records: the Kafka values

export const ImageRecordSchema = z
  .object({
    id: Digits.nullable(),
    src: z.string(),
    alt: z.string().nullable(),
    width: z.int32().min(0).nullable(),
    height: z.int32().min(0).nullable(),
    position: z.int32().min(0),
    variant_ids: z.array(Digits),
  })
  .meta({ id: 'CatalogImage' });

export const VariantRecordSchema = z
  .object({
    id: Digits,
    title: z.string(),
    sku: z.string().nullable(),
    barcode: z.string().nullable(),
    price: decimalString.describe('major units, decimal string'),
    compare_at_price: decimalString.nullable(),
    option1: z.string().nullable(),
    option2: z.string().nullable(),
    option3: z.string().nullable(),
    position: z.int32().min(0),
    available: z.boolean().describe('sellable now: untracked, continue-selling or quantity > 0'),
    inventory_quantity: z.int32().nullable().describe('total across locations as the platform reports it'),
    inventory_item_id: Digits.nullable().describe('links inventory level records to the variant'),
    inventory_policy: z.string().describe('deny | continue'),
    inventory_management: z.string().nullable().describe('null = not tracked'),
    requires_components: z.boolean(),
    image_id: Digits.nullable(),
  })
  .meta({ id: 'CatalogVariant' });

export const OptionRecordSchema = z
  .object({ name: z.string(), position: z.int32().min(0), values: z.array(z.string()) })
  .meta({ id: 'CatalogOption' });

export const CategoryRecordSchema = z
  .object({ id: z.string(), name: z.string(), full_name: z.string() })
  .meta({ id: 'CatalogCategory' });

export const CatalogProductSchema = z.object({
  store_id: CatalogStoreId,
  product_id: Digits,
  title: z.string(),
  handle: z.string(),
  body_html: z.string(),
  vendor: z.string(),
  product_type: z.string(),
  tags: z.array(z.string()),
  status: z.enum(['active', 'draft', 'archived']),
  published_at: isoUtc.nullable().describe('null = not published to the online store'),
  created_at: isoUtc.nullable(),
  updated_at: isoUtc.describe('the platform update time: the version of this record'),
  options: z.array(OptionRecordSchema),
  variants: z.array(VariantRecordSchema),
  images: z.array(ImageRecordSchema),
  metafields: MetafieldsSchema.describe('namespace → key → value'),
  is_gift_card: z.boolean(),
  combined_listing_parent_product_id: Digits.nullable(),
  combined_listing_role: z.string().nullable().describe('parent | child | null'),
  has_variants_that_require_components: z.boolean(),
  category: CategoryRecordSchema.nullable(),
  source: z.enum(['webhook', 'import']),
});
export type CatalogProduct = z.infer<typeof CatalogProductSchema>;
export type CatalogVariant = z.infer<typeof VariantRecordSchema>;
export type CatalogImage = z.infer<typeof ImageRecordSchema>;

export const CollectionDataSchema = z
  .object({
    handle: z.string(),
    title: z.string(),
    body_html: z.string(),
    collection_type: z.enum(['custom', 'smart']),
    sort_order: z.string().describe('platform sort order (manual, best-selling, created-desc, …)'),
    default_sort_order: z.string().nullable().describe('our sort order code from the metafield default_sort_order'),
    published: z.boolean(),
    published_at: isoUtc.nullable(),
    image: ImageRecordSchema.nullable(),
    metafields: MetafieldsSchema,
  })
  .meta({ id: 'CatalogCollectionData' });

export const CollectionMembersSchema = z
  .object({ product_ids: z.array(Digits).describe('in merchandised order; position = index + 1') })
  .meta({ id: 'CatalogCollectionMembers' });

export const CatalogCollectionSchema = z.object({
  store_id: CatalogStoreId,
  collection_id: Digits,
  record_type: z
    .enum(['collection', 'members'])
    .describe('collection: `collection` is set (key store:id); members: `members` is set (key store:id:members)'),
  updated_at: isoUtc,
  collection: CollectionDataSchema.nullable(),
  members: CollectionMembersSchema.nullable(),
  source: z.enum(['webhook', 'import']),
});
export type CatalogCollection = z.infer<typeof CatalogCollectionSchema>;

export const ContentImageSchema = z
  .object({
    url: z.string(),
    width: z.int32().min(0).nullable(),
    height: z.int32().min(0).nullable(),
    alt_text: z.string().nullable(),
  })
  .meta({ id: 'CatalogContentImage' });

export const CatalogContentSchema = z.object({
  store_id: CatalogStoreId,
  content_type: z.enum(['article', 'page']),
  content_id: Digits,
  handle: z.string(),
  title: z.string(),
  body_html: z.string(),
  summary_text: z.string().describe('HTML stripped except images, at most ~500 characters'),
  body_text: z.string().describe('all text of the body, HTML stripped (search)'),
  author: z.string().nullable(),
  tags: z.array(z.string()),
  image: ContentImageSchema.nullable(),
  blog_id: Digits.nullable(),
  blog_handle: z.string().nullable(),
  published_at: isoUtc.nullable().describe('null = not published'),
  created_at: isoUtc.nullable(),
  updated_at: isoUtc,
  seo_hidden: z.boolean().describe('metafield seo.hidden = 1: excluded from content search'),
  metafields: MetafieldsSchema,
  source: z.enum(['webhook', 'import']),
});
export type CatalogContent = z.infer<typeof CatalogContentSchema>;

export const CatalogInventoryLevelSchema = z.object({
  store_id: CatalogStoreId,
  inventory_item_id: Digits.nullable(),
  variant_id: Digits.nullable(),
  location_id: Digits,
  available: z.int32().describe('quantity available at the location (may be negative when oversold)'),
  updated_at: isoUtc,
  source: z.enum(['webhook', 'import']),
});
export type CatalogInventoryLevel = z.infer<typeof CatalogInventoryLevelSchema>;

export const PriceEntrySchema = z
  .object({
    price_list_id: ItemRef.describe('a platform price list, or market-<code> for a market without one'),
    variant_id: Digits,
    product_id: Digits.nullable(),
    currency: z.string().regex(/^[A-Z]{3}$/),
    price: decimalString,
    compare_at_price: decimalString.nullable(),
  })
  .meta({ id: 'CatalogPriceEntry' });

export const B2bCatalogSchema = z
  .object({
    catalog_id: ItemRef,
    title: z.string(),
    status: z.enum(['active', 'draft', 'archived']),
    company_location_ids: z.array(Digits),
    price_list_id: ItemRef.nullable(),
    all_products: z.boolean().describe('true = every product is in the catalog (only prices differ)'),
    product_ids: z.array(Digits),
    collection_ids: z.array(Digits),
  })
  .meta({ id: 'CatalogB2bCatalog' });

export const CatalogPricingSchema = z.object({
  store_id: CatalogStoreId,
  record_type: z.enum(['price', 'b2b_catalog']),
  updated_at: isoUtc,
  price: PriceEntrySchema.nullable(),
  catalog: B2bCatalogSchema.nullable(),
  source: z.enum(['webhook', 'import']),
});
export type CatalogPricing = z.infer<typeof CatalogPricingSchema>;

/**
 * A metaobject's swatch, derived from the standard color-pattern fields (services/catalog/normalize.ts):
 * `image` (a file) → type image with its URL; else `color` (a hex colour or a list of them) → type color.
 * One flat record rather than a union (the Avro generator maps only `T | null` unions); the query helper
 * (clickhouse/queries/metaobjects.ts) returns it as `{type:'color', colors}` or `{type:'image', url, alt}`.
 */
export const MetaobjectSwatchSchema = z
  .object({
    type: z.enum(['color', 'image']),
    colors: z.array(z.string()).describe('type color: the colours as #rrggbb (several for a multi-colour swatch)'),
    url: z.string().nullable().describe('type image: the image URL'),
    alt: z.string().nullable().describe('type image: its alt text'),
  })
  .meta({ id: 'CatalogMetaobjectSwatch' });
export type MetaobjectSwatch = z.infer<typeof MetaobjectSwatchSchema>;

export const CatalogMetaobjectSchema = z.object({
  store_id: CatalogStoreId,
  metaobject_id: Digits,
  type: z.string().describe('the metaobject definition type, e.g. shopify--color-pattern'),
  handle: z.string(),
  display_name: z.string(),
  fields: z
    .record(z.string(), z.unknown())
    .describe('field key → value (JSON-typed values parsed as metafields are; references stay as given: GIDs)'),
  swatch: MetaobjectSwatchSchema.nullable().describe('from the color-pattern fields; null when it has none'),
  updated_at: isoUtc,
  source: z.enum(['webhook', 'import']),
});
export type CatalogMetaobject = z.infer<typeof CatalogMetaobjectSchema>;

// ------------------------------------------------------------------------------------------------
// keys

export type CatalogTopicKey = 'products' | 'collections' | 'content' | 'inventory' | 'pricing' | 'metaobjects';

/** the Kafka record key of a catalog record (one key = one row in the projection) */
export function catalogKey(
  ref:
    | { topic: 'products'; store_id: string; product_id: string }
    | { topic: 'collections'; store_id: string; collection_id: string; members?: boolean }
    | { topic: 'content'; store_id: string; content_type: 'article' | 'page'; content_id: string }
    | {
        topic: 'inventory';
        store_id: string;
        inventory_item_id: string | null;
        variant_id: string | null;
        location_id: string;
      }
    | { topic: 'price'; store_id: string; price_list_id: string; variant_id: string }
    | { topic: 'b2b_catalog'; store_id: string; catalog_id: string }
    | { topic: 'metaobjects'; store_id: string; metaobject_id: string },
): string {
  switch (ref.topic) {
    case 'products':
      return `${ref.store_id}:${ref.product_id}`;
    case 'collections':
      return `${ref.store_id}:${ref.collection_id}${ref.members ? ':members' : ''}`;
    case 'content':
      return `${ref.store_id}:${ref.content_type}:${ref.content_id}`;
    case 'inventory':
      return `${ref.store_id}:${ref.inventory_item_id ? `i${ref.inventory_item_id}` : `v${ref.variant_id}`}:${ref.location_id}`;
    case 'price':
      return `${ref.store_id}:price:${ref.price_list_id}:${ref.variant_id}`;
    case 'b2b_catalog':
      return `${ref.store_id}:b2b_catalog:${ref.catalog_id}`;
    case 'metaobjects':
      return `${ref.store_id}:metaobject:${ref.metaobject_id}`;
  }
}

/** What a tombstone's key names (the inverse of `catalogKey`); undefined for a key this file never writes. */
export type CatalogKeyRef =
  | { topic: 'products'; store_id: string; product_id: string }
  | { topic: 'collections'; store_id: string; collection_id: string; members: boolean }
  | { topic: 'content'; store_id: string; content_type: 'article' | 'page'; content_id: string }
  | {
      topic: 'inventory';
      store_id: string;
      inventory_item_id: string | null;
      variant_id: string | null;
      location_id: string;
    }
  | { topic: 'price'; store_id: string; price_list_id: string; variant_id: string }
  | { topic: 'b2b_catalog'; store_id: string; catalog_id: string }
  | { topic: 'metaobjects'; store_id: string; metaobject_id: string };

const STORE = `(${STORE_ID_PATTERN})`;
const ID = '([1-9]\\d{0,19})';
const REF = '([^:\\s]{1,200})';

export function parseCatalogKey(topic: CatalogTopicKey, key: string): CatalogKeyRef | undefined {
  let m: RegExpExecArray | null;
  switch (topic) {
    case 'products':
      m = new RegExp(`^${STORE}:${ID}$`).exec(key);
      return m ? { topic, store_id: m[1], product_id: m[2] } : undefined;
    case 'collections':
      m = new RegExp(`^${STORE}:${ID}(:members)?$`).exec(key);
      return m ? { topic, store_id: m[1], collection_id: m[2], members: m[3] !== undefined } : undefined;
    case 'content':
      m = new RegExp(`^${STORE}:(article|page):${ID}$`).exec(key);
      return m ? { topic, store_id: m[1], content_type: m[2] as 'article' | 'page', content_id: m[3] } : undefined;
    case 'inventory':
      m = new RegExp(`^${STORE}:([iv])${ID}:${ID}$`).exec(key);
      if (!m) return undefined;
      return {
        topic,
        store_id: m[1],
        inventory_item_id: m[2] === 'i' ? m[3] : null,
        variant_id: m[2] === 'v' ? m[3] : null,
        location_id: m[4],
      };
    case 'pricing':
      m = new RegExp(`^${STORE}:price:${REF}:${ID}$`).exec(key);
      if (m) return { topic: 'price', store_id: m[1], price_list_id: m[2], variant_id: m[3] };
      m = new RegExp(`^${STORE}:b2b_catalog:${REF}$`).exec(key);
      return m ? { topic: 'b2b_catalog', store_id: m[1], catalog_id: m[2] } : undefined;
    case 'metaobjects':
      m = new RegExp(`^${STORE}:metaobject:${ID}$`).exec(key);
      return m ? { topic, store_id: m[1], metaobject_id: m[2] } : undefined;
  }
}

// ------------------------------------------------------------------------------------------------
// inputs: platform payloads (Shopify REST/webhook JSON; the bulk import uses the same objects)

const ImageInput = z.object({
  id: optionalId,
  src: z.string().trim().min(1).max(2048),
  alt: nullableText(1000),
  width: optionalInt(0, 100_000),
  height: optionalInt(0, 100_000),
  position: optionalInt(0, 100_000),
  variant_ids: z.array(numericId).max(2048).nullish(),
});

const InventoryLevelEntryInput = z.object({
  location_id: numericId,
  available: intLike(-2_000_000_000, 2_000_000_000),
});

export const ShopifyVariantInput = z.object({
  id: numericId,
  title: text(1000),
  sku: nullableText(255),
  barcode: nullableText(255),
  price: decimal,
  compare_at_price: optionalDecimal,
  option1: nullableText(255),
  option2: nullableText(255),
  option3: nullableText(255),
  position: optionalInt(0, 100_000),
  available: z.boolean().nullish(),
  inventory_quantity: optionalInt(-2_000_000_000, 2_000_000_000),
  inventory_item_id: optionalId,
  inventory_policy: z
    .string()
    .trim()
    .toLowerCase()
    .nullish()
    .transform((v) => v || 'deny'),
  inventory_management: nullableText(100),
  requires_components: bool,
  image_id: optionalId,
  /** per-location inventory (bulk import); split out into catalog.inventory.v1 records */
  inventory_levels: z.array(InventoryLevelEntryInput).max(1000).nullish(),
});
export type ShopifyVariantInput = z.input<typeof ShopifyVariantInput>;

export const ShopifyProductInput = z.object({
  id: numericId,
  title: text(1000),
  handle: text(1000),
  body_html: text(1_000_000),
  vendor: text(1000),
  product_type: text(1000),
  tags: tagsInput,
  status: z
    .string()
    .trim()
    .toLowerCase()
    .nullish()
    .transform((v) => v || 'active')
    .pipe(z.enum(['active', 'draft', 'archived'])),
  published_at: optionalTimestamp,
  created_at: optionalTimestamp,
  updated_at: optionalTimestamp,
  options: z
    .array(
      z.object({
        name: z.string().trim().min(1).max(255),
        position: optionalInt(0, 1000),
        values: z
          .array(z.union([z.string(), z.number()]).transform(String))
          .max(2048)
          .nullish(),
      }),
    )
    .max(100)
    .nullish(),
  variants: z.array(ShopifyVariantInput).max(2048).nullish(),
  images: z.array(ImageInput).max(1000).nullish(),
  metafields: metafieldsInput,
  is_gift_card: bool,
  combined_listing_parent_product_id: optionalId,
  combined_listing_role: nullableText(32).transform((v) => v?.toLowerCase() ?? null),
  has_variants_that_require_components: bool,
  category: z
    .object({ id: z.union([z.string(), z.number()]).transform(String), name: text(500), full_name: text(2000) })
    .nullish(),
});
export type ShopifyProductInput = z.input<typeof ShopifyProductInput>;

const CollectInput = z.union([
  numericId.transform((id) => ({ id, position: null as number | null })),
  z.object({
    id: optionalId,
    product_id: optionalId,
    position: optionalInt(0, 10_000_000),
  }),
]);

export const ShopifyCollectionInput = z.object({
  id: numericId,
  handle: text(1000),
  title: text(1000),
  body_html: text(1_000_000),
  /** smart collections carry `rules`; custom ones do not */
  collection_type: z.enum(['custom', 'smart']).nullish(),
  rules: z.array(z.unknown()).nullish(),
  sort_order: text(64),
  published: z.boolean().nullish(),
  published_at: optionalTimestamp,
  updated_at: optionalTimestamp,
  image: ImageInput.partial({ src: true }).nullish(),
  metafields: metafieldsInput,
  /** ordered membership, when the payload carries it: product ids, or {product_id|id, position} */
  products: z.array(CollectInput).max(100_000).nullish(),
  product_ids: z.array(numericId).max(100_000).nullish(),
});
export type ShopifyCollectionInput = z.input<typeof ShopifyCollectionInput>;

export const ShopifyContentInput = z.object({
  id: numericId,
  handle: text(1000),
  title: text(1000),
  body_html: text(1_000_000),
  summary_html: text(1_000_000).nullish(),
  author: nullableText(500),
  tags: tagsInput,
  image: z
    .object({
      src: z.string().trim().max(2048).nullish(),
      url: z.string().trim().max(2048).nullish(),
      width: optionalInt(0, 100_000),
      height: optionalInt(0, 100_000),
      alt: nullableText(1000),
      altText: nullableText(1000),
    })
    .nullish(),
  blog_id: optionalId,
  blog_handle: nullableText(255),
  published: z.boolean().nullish(),
  published_at: optionalTimestamp,
  created_at: optionalTimestamp,
  updated_at: optionalTimestamp,
  metafields: metafieldsInput,
});
export type ShopifyContentInput = z.input<typeof ShopifyContentInput>;

export const ShopifyInventoryLevelInput = z
  .object({
    inventory_item_id: optionalId,
    variant_id: optionalId,
    location_id: numericId,
    available: z
      .union([z.null(), intLike(-2_000_000_000, 2_000_000_000)])
      .optional()
      .transform((v) => v ?? 0),
    updated_at: optionalTimestamp,
  })
  .refine((v) => v.inventory_item_id !== null || v.variant_id !== null, {
    message: 'needs inventory_item_id or variant_id',
    path: ['inventory_item_id'],
  });
export type ShopifyInventoryLevelInput = z.input<typeof ShopifyInventoryLevelInput>;

export const PriceInput = z
  .object({
    price_list_id: itemRefInput.nullish(),
    /** a market code (schemas/config.ts market); stored under price list `market-<code>` */
    market: z
      .string()
      .trim()
      .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/i, 'expected a market code')
      .transform((v) => v.toLowerCase())
      .nullish(),
    variant_id: numericId,
    product_id: optionalId,
    currency: z
      .string()
      .trim()
      .regex(/^[A-Za-z]{3}$/, 'expected an ISO 4217 currency code')
      .transform((v) => v.toUpperCase()),
    price: decimal,
    compare_at_price: optionalDecimal,
    updated_at: optionalTimestamp,
  })
  .refine((v) => (v.price_list_id ? 1 : 0) + (v.market ? 1 : 0) === 1, {
    message: 'needs exactly one of price_list_id and market',
    path: ['price_list_id'],
  });
export type PriceInput = z.input<typeof PriceInput>;

export const B2bCatalogInput = z.object({
  id: itemRefInput,
  title: text(500),
  status: z
    .string()
    .trim()
    .toLowerCase()
    .nullish()
    .transform((v) => v || 'active')
    .pipe(z.enum(['active', 'draft', 'archived'])),
  company_location_ids: z.array(numericId).max(100_000).nullish(),
  price_list_id: itemRefInput.nullish(),
  all_products: bool,
  product_ids: z.array(numericId).max(1_000_000).nullish(),
  collection_ids: z.array(numericId).max(100_000).nullish(),
  updated_at: optionalTimestamp,
});
export type B2bCatalogInput = z.input<typeof B2bCatalogInput>;

/** a metaobject id: a number, a digit string or `gid://shopify/Metaobject/<id>` */
const metaobjectId = z.unknown().transform((raw, ctx) => {
  const id = toNumericId(raw, 'Metaobject');
  if (id === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: 'expected a metaobject id (number, digit string or gid://shopify/Metaobject/<id>)',
    });
    return z.NEVER;
  }
  return id;
});

const MetaobjectFieldInput = z.object({
  key: z.string().trim().min(1).max(255),
  value: z.unknown(),
  type: z.string().max(100).nullish(),
  /** the referenced object as GraphQL returns it (`reference { … on MediaImage { image { url altText } } }`) */
  reference: z.unknown().optional(),
});
export type MetaobjectFieldInput = z.input<typeof MetaobjectFieldInput>;

/**
 * A Shopify metaobject (webhooks metaobjects/create|update, GraphQL, bulk import `metaobject` lines). In an
 * import line `type` names the line, so the metaobject's own type travels as `metaobject_type` there.
 */
export const ShopifyMetaobjectInput = z
  .object({
    id: metaobjectId,
    type: z.string().trim().min(1).max(255).nullish(),
    metaobject_type: z.string().trim().min(1).max(255).nullish(),
    handle: z.string().trim().min(1).max(255),
    displayName: nullableText(1000),
    display_name: nullableText(1000),
    /** a list of {key, value, type, reference} (GraphQL) or key → value (webhook payloads, exports) */
    fields: z.union([z.array(MetaobjectFieldInput).max(1000), z.record(z.string(), z.unknown())]).nullish(),
    updated_at: optionalTimestamp,
    updatedAt: optionalTimestamp,
  })
  .refine((v) => Boolean(v.metaobject_type ?? v.type), {
    message: 'needs the metaobject type (type, or metaobject_type in an import line)',
    path: ['type'],
  });
export type ShopifyMetaobjectInput = z.input<typeof ShopifyMetaobjectInput>;

/** A Shopify order (webhook orders/create|updated|cancelled); normalized to schemas/orders.ts `OrderInput`. */
export const ShopifyOrderInput = z.object({
  id: numericId,
  customer: z.object({ id: optionalId }).nullish(),
  note_attributes: z
    .array(z.object({ name: z.string(), value: z.unknown() }))
    .max(500)
    .nullish(),
  created_at: timestamp,
  updated_at: optionalTimestamp,
  processed_at: optionalTimestamp,
  cancelled_at: optionalTimestamp,
  currency: z.string().trim().min(3).max(3),
  total_price: decimal,
  test: z.boolean().nullish(),
  line_items: z
    .array(
      z.object({
        product_id: optionalId,
        variant_id: optionalId,
        quantity: intLike(0, 1_000_000),
        price: decimal,
        gift_card: z.boolean().nullish(),
      }),
    )
    .max(1000),
});
export type ShopifyOrderInput = z.input<typeof ShopifyOrderInput>;

/** Deletion payloads carry only the id (products/delete, collections/delete, articles/delete, …). */
export const DeleteInput = z.object({ id: numericId });

/** One line of a bulk import: `{ "type": "...", ...the platform object }`; `deleted: true` writes a tombstone. */
export const IMPORT_TYPES = [
  'product',
  'collection',
  'article',
  'page',
  'inventory_level',
  'price',
  'b2b_catalog',
  'order',
  'metaobject',
] as const;
export type ImportType = (typeof IMPORT_TYPES)[number];
export const ImportLineHeader = z.looseObject({
  type: z.enum(IMPORT_TYPES, { error: `expected type to be one of ${IMPORT_TYPES.join(', ')}` }),
  deleted: z.boolean().optional(),
});

// ------------------------------------------------------------------------------------------------
// Avro value schemas (registry subject `<physical topic>-value`)

const NS = 'discovery.catalog';

export const CATALOG_AVRO = {
  products: avroFromZod(CatalogProductSchema, {
    name: 'CatalogProduct',
    namespace: NS,
    doc: 'Latest state of a product (catalog.products.v1)',
  }),
  collections: avroFromZod(CatalogCollectionSchema, {
    name: 'CatalogCollectionRecord',
    namespace: NS,
    doc: 'A collection (key store:id) or its ordered membership (key store:id:members) (catalog.collections.v1)',
  }),
  content: avroFromZod(CatalogContentSchema, {
    name: 'CatalogContent',
    namespace: NS,
    doc: 'An article or page (catalog.content.v1)',
  }),
  inventory: avroFromZod(CatalogInventoryLevelSchema, {
    name: 'CatalogInventoryLevel',
    namespace: NS,
    doc: 'Available quantity of an inventory item (variant) at a location (catalog.inventory.v1)',
  }),
  pricing: avroFromZod(CatalogPricingSchema, {
    name: 'CatalogPricingRecord',
    namespace: NS,
    doc: 'A price-list entry (key store:price:list:variant) or a B2B catalog (key store:b2b_catalog:id) (catalog.pricing.v1)',
  }),
  metaobjects: avroFromZod(CatalogMetaobjectSchema, {
    name: 'CatalogMetaobject',
    namespace: NS,
    doc: 'A metaobject (swatches and other structured entries) (catalog.metaobjects.v1)',
  }),
} as const satisfies Record<CatalogTopicKey, Schema>;

/** The zod schema of each catalog topic's value (what a processor validates a decoded value with). */
export const CATALOG_RECORD_SCHEMAS = {
  products: CatalogProductSchema,
  collections: CatalogCollectionSchema,
  content: CatalogContentSchema,
  inventory: CatalogInventoryLevelSchema,
  pricing: CatalogPricingSchema,
  metaobjects: CatalogMetaobjectSchema,
} as const satisfies Record<CatalogTopicKey, z.ZodType>;
