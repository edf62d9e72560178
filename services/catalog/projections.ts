// The catalog projections: one stream processor per compacted catalog topic (the strategy shape of
// streams/runtime/types.ts: parse → process into rows per table), writing the versioned tables of
// migrations 0210-0228. They are registered in streams/registry.ts, so the streams service runs them
// (consumer groups `streams.<name>`) and the replay tool rebuilds their tables like any other's.
//
// Versioning. Every table is a ReplacingMergeTree(_version, is_deleted) keyed by store and id. `_version`
// is a UInt128: the record's updated_at in milliseconds in the high 64 bits and the Kafka offset in the
// low 64 bits, so the newest platform state wins whatever order records arrive in (a late, older update
// never replaces a newer one), and equal timestamps fall back to log order. A tombstone (null value)
// becomes a row with is_deleted = 1 whose version is the record's timestamp (the producer sets it past
// the newest version it wrote for the key, see writer.ts), so a delete wins over everything before it.
// Replaying a topic produces the same rows and the same versions, so a replay is harmless.
//
// Tombstones. The runtime hands a message without a value to the processor's `parseTombstone(key)`
// (streams/runtime/runtime.ts); here the record key names what is deleted (`parseCatalogKey`), and the
// broker timestamp of the message (`Decoded.brokerTime`) is the delete's version. A key this platform
// never writes goes to the DLQ with the reason.
import {
  type CatalogCollection,
  type CatalogContent,
  type CatalogInventoryLevel,
  type CatalogKeyRef,
  type CatalogPricing,
  type CatalogProduct,
  CatalogCollectionSchema,
  CatalogContentSchema,
  CatalogInventoryLevelSchema,
  CatalogPricingSchema,
  CatalogProductSchema,
  type CatalogTopicKey,
  parseCatalogKey,
} from '../../schemas/catalog.ts';
import type { CompareSpec, Decoded, ParseResult, Processor, ProcessResult } from '../../streams/runtime/types.ts';
import { chTime, zodParse } from '../../streams/runtime/util.ts';
import type { z } from 'zod';

// ------------------------------------------------------------------------------------------------
// shared

export type Change<R> = { op: 'upsert'; record: R } | { op: 'delete'; ref: CatalogKeyRef };

/** A catalog processor: a runtime strategy whose tombstones are deletes (`parseTombstone` is required). */
export interface CatalogProcessor<R> extends Processor<Change<R>> {
  catalogTopic: CatalogTopicKey;
  parseTombstone(key: Buffer | null): ParseResult<Change<R>>;
}

/** `_version` as a decimal string: updated_at ms (high 64 bits) then offset (low 64 bits). */
export function versionOf(ms: number, offset: bigint): string {
  return ((BigInt(Math.max(0, Math.trunc(ms))) << 64n) | (offset & 0xffffffffffffffffn)).toString();
}

function parser<R>(schema: z.ZodType<R>): (v: unknown) => ParseResult<Change<R>> {
  return (v) => {
    const r = zodParse(schema, v);
    return r.ok ? { ok: true, value: { op: 'upsert', record: r.value as R } } : r;
  };
}

/** A tombstone's record key → the delete it stands for; a key this platform never writes is refused. */
export function tombstoneParser<R>(topic: CatalogTopicKey): (key: Buffer | null) => ParseResult<Change<R>> {
  return (key) => {
    if (key === null || key.length === 0) return { ok: false, reason: 'a tombstone without a record key' };
    const text = key.toString('utf8');
    const ref = parseCatalogKey(topic, text);
    return ref
      ? { ok: true, value: { op: 'delete', ref } }
      : { ok: false, reason: `unrecognised ${topic} key ${JSON.stringify(text.slice(0, 200))}` };
  };
}

/**
 * How a replay compares live and shadow tables: the latest state (FINAL: deleted keys and superseded
 * versions left out, whatever the background merges did), per store and day of the current version's
 * updated_at — the number of current keys and a checksum over their whole rows. Compaction of the log
 * drops only superseded records (the writer makes the last record of a key its newest version) and
 * tombstones past delete.retention.ms (whose keys are gone from the latest state either way), so a
 * rebuild equals the live tables unless processing changed. (`tuple(*)`: cityHash64 of several
 * arguments is NULL when any is, and the tables have Nullable columns.)
 */
const LATEST: CompareSpec = {
  day: 'updated_at',
  measure: "concat(toString(count()), ' current, checksum ', hex(sum(cityHash64(tuple(*)))))",
  final: true,
};

const meta = (d: Decoded<unknown>, ms: number) => ({
  _version: versionOf(ms, d.position.offset),
  _partition: d.position.partition,
  _offset: d.position.offset.toString(),
});

const tombstoneTime = (d: Decoded<unknown>) => (Number.isFinite(d.brokerTime) && d.brokerTime > 0 ? d.brokerTime : 0);
const isoOf = (ms: number) => chTime(new Date(ms).toISOString());
const nullableTime = (iso: string | null) => (iso === null ? null : chTime(iso));
const json = (v: unknown) => (v === null || v === undefined ? '' : JSON.stringify(v));

function decMin(values: string[], pick: (a: number, b: number) => boolean): string {
  let best: string | undefined;
  for (const v of values) if (best === undefined || pick(Number(v), Number(best))) best = v;
  return best ?? '0';
}

// ------------------------------------------------------------------------------------------------
// products

export function productRow(p: CatalogProduct) {
  return {
    store_id: p.store_id,
    product_id: p.product_id,
    title: p.title,
    handle: p.handle,
    body_html: p.body_html,
    vendor: p.vendor,
    product_type: p.product_type,
    tags: p.tags,
    status: p.status,
    published_at: nullableTime(p.published_at),
    created_at: nullableTime(p.created_at),
    updated_at: chTime(p.updated_at),
    options: JSON.stringify(p.options),
    variants: p.variants.map((v) => ({
      id: v.id,
      title: v.title,
      sku: v.sku ?? '',
      barcode: v.barcode ?? '',
      price: v.price,
      compare_at_price: v.compare_at_price,
      option1: v.option1,
      option2: v.option2,
      option3: v.option3,
      position: v.position,
      available: v.available ? 1 : 0,
      inventory_quantity: v.inventory_quantity,
      inventory_item_id: v.inventory_item_id ?? '0',
      inventory_policy: v.inventory_policy,
      inventory_management: v.inventory_management,
      requires_components: v.requires_components ? 1 : 0,
      image_id: v.image_id,
    })),
    images: JSON.stringify(p.images),
    featured_image: p.images[0]?.src ?? '',
    metafields: JSON.stringify(p.metafields),
    is_gift_card: p.is_gift_card ? 1 : 0,
    combined_listing_parent_product_id: p.combined_listing_parent_product_id,
    combined_listing_role: p.combined_listing_role,
    has_variants_that_require_components: p.has_variants_that_require_components ? 1 : 0,
    category: json(p.category),
    price_min: decMin(
      p.variants.map((v) => v.price),
      (a, b) => a < b,
    ),
    price_max: decMin(
      p.variants.map((v) => v.price),
      (a, b) => a > b,
    ),
    source: p.source,
  };
}

const emptyProduct = (store: string, id: string, at: string) => ({
  store_id: store,
  product_id: id,
  title: '',
  handle: '',
  body_html: '',
  vendor: '',
  product_type: '',
  tags: [],
  status: 'archived',
  published_at: null,
  created_at: null,
  updated_at: at,
  options: '[]',
  variants: [],
  images: '[]',
  featured_image: '',
  metafields: '{}',
  is_gift_card: 0,
  combined_listing_parent_product_id: null,
  combined_listing_role: null,
  has_variants_that_require_components: 0,
  category: '',
  price_min: '0',
  price_max: '0',
  source: 'webhook',
});

export const catalogProductsProcessor: CatalogProcessor<CatalogProduct> = {
  name: 'catalog_products',
  topic: 'products',
  catalogTopic: 'products',
  tables: { written: ['catalog_products'], views: [], compare: { catalog_products: LATEST } },
  parseTombstone: tombstoneParser('products'),
  parse: parser(CatalogProductSchema),
  async process(batch: Decoded<Change<CatalogProduct>>[]): Promise<ProcessResult> {
    const rows = batch.map((d) => {
      const c = d.value;
      if (c.op === 'upsert')
        return { ...productRow(c.record), is_deleted: 0, ...meta(d, Date.parse(c.record.updated_at)) };
      const ref = c.ref as Extract<CatalogKeyRef, { topic: 'products' }>;
      const t = tombstoneTime(d);
      return { ...emptyProduct(ref.store_id, ref.product_id, isoOf(t)), is_deleted: 1, ...meta(d, t) };
    });
    return { writes: [{ table: 'catalog_products', rows }] };
  },
};

// ------------------------------------------------------------------------------------------------
// collections (metadata and membership)

export const catalogCollectionsProcessor: CatalogProcessor<CatalogCollection> = {
  name: 'catalog_collections',
  topic: 'collections',
  catalogTopic: 'collections',
  tables: {
    written: ['catalog_collections', 'catalog_collection_members'],
    views: [],
    compare: { catalog_collections: LATEST, catalog_collection_members: LATEST },
  },
  parseTombstone: tombstoneParser('collections'),
  parse: parser(CatalogCollectionSchema),
  async process(batch: Decoded<Change<CatalogCollection>>[]): Promise<ProcessResult> {
    const collections: object[] = [];
    const members: object[] = [];
    for (const d of batch) {
      const c = d.value;
      if (c.op === 'delete') {
        const ref = c.ref as Extract<CatalogKeyRef, { topic: 'collections' }>;
        const t = tombstoneTime(d);
        const base = {
          store_id: ref.store_id,
          collection_id: ref.collection_id,
          updated_at: isoOf(t),
          source: 'webhook',
          is_deleted: 1,
          ...meta(d, t),
        };
        if (ref.members) members.push({ ...base, product_ids: [] });
        else
          collections.push({
            ...base,
            handle: '',
            title: '',
            body_html: '',
            collection_type: 'custom',
            sort_order: '',
            default_sort_order: null,
            published: 0,
            published_at: null,
            image: '',
            metafields: '{}',
          });
        continue;
      }
      const r = c.record;
      const m = meta(d, Date.parse(r.updated_at));
      if (r.record_type === 'members' && r.members) {
        members.push({
          store_id: r.store_id,
          collection_id: r.collection_id,
          product_ids: r.members.product_ids,
          updated_at: chTime(r.updated_at),
          source: r.source,
          is_deleted: 0,
          ...m,
        });
      } else if (r.record_type === 'collection' && r.collection) {
        const k = r.collection;
        collections.push({
          store_id: r.store_id,
          collection_id: r.collection_id,
          handle: k.handle,
          title: k.title,
          body_html: k.body_html,
          collection_type: k.collection_type,
          sort_order: k.sort_order,
          default_sort_order: k.default_sort_order,
          published: k.published ? 1 : 0,
          published_at: nullableTime(k.published_at),
          image: json(k.image),
          metafields: JSON.stringify(k.metafields),
          updated_at: chTime(r.updated_at),
          source: r.source,
          is_deleted: 0,
          ...m,
        });
      }
    }
    return {
      writes: [
        { table: 'catalog_collections', rows: collections },
        { table: 'catalog_collection_members', rows: members },
      ],
    };
  },
};

// ------------------------------------------------------------------------------------------------
// articles and pages

export const catalogContentProcessor: CatalogProcessor<CatalogContent> = {
  name: 'catalog_content',
  topic: 'content',
  catalogTopic: 'content',
  tables: { written: ['catalog_content'], views: [], compare: { catalog_content: LATEST } },
  parseTombstone: tombstoneParser('content'),
  parse: parser(CatalogContentSchema),
  async process(batch: Decoded<Change<CatalogContent>>[]): Promise<ProcessResult> {
    const rows = batch.map((d) => {
      const c = d.value;
      if (c.op === 'delete') {
        const ref = c.ref as Extract<CatalogKeyRef, { topic: 'content' }>;
        const t = tombstoneTime(d);
        return {
          store_id: ref.store_id,
          content_type: ref.content_type,
          content_id: ref.content_id,
          handle: '',
          title: '',
          body_html: '',
          summary_text: '',
          body_text: '',
          author: null,
          tags: [],
          image: '',
          blog_id: null,
          blog_handle: null,
          published_at: null,
          created_at: null,
          updated_at: isoOf(t),
          seo_hidden: 0,
          metafields: '{}',
          source: 'webhook',
          is_deleted: 1,
          ...meta(d, t),
        };
      }
      const r = c.record;
      return {
        store_id: r.store_id,
        content_type: r.content_type,
        content_id: r.content_id,
        handle: r.handle,
        title: r.title,
        body_html: r.body_html,
        summary_text: r.summary_text,
        body_text: r.body_text,
        author: r.author,
        tags: r.tags,
        image: r.image
          ? JSON.stringify({
              url: r.image.url,
              width: r.image.width,
              height: r.image.height,
              altText: r.image.alt_text,
            })
          : '',
        blog_id: r.blog_id,
        blog_handle: r.blog_handle,
        published_at: nullableTime(r.published_at),
        created_at: nullableTime(r.created_at),
        updated_at: chTime(r.updated_at),
        seo_hidden: r.seo_hidden ? 1 : 0,
        metafields: JSON.stringify(r.metafields),
        source: r.source,
        is_deleted: 0,
        ...meta(d, Date.parse(r.updated_at)),
      };
    });
    return { writes: [{ table: 'catalog_content', rows }] };
  },
};

// ------------------------------------------------------------------------------------------------
// inventory levels

export const catalogInventoryProcessor: CatalogProcessor<CatalogInventoryLevel> = {
  name: 'catalog_inventory',
  topic: 'inventory',
  catalogTopic: 'inventory',
  tables: { written: ['catalog_inventory_levels'], views: [], compare: { catalog_inventory_levels: LATEST } },
  parseTombstone: tombstoneParser('inventory'),
  parse: parser(CatalogInventoryLevelSchema),
  async process(batch: Decoded<Change<CatalogInventoryLevel>>[]): Promise<ProcessResult> {
    const rows = batch.map((d) => {
      const c = d.value;
      if (c.op === 'delete') {
        const ref = c.ref as Extract<CatalogKeyRef, { topic: 'inventory' }>;
        const t = tombstoneTime(d);
        return {
          store_id: ref.store_id,
          inventory_item_id: ref.inventory_item_id ?? '0',
          variant_id: ref.variant_id ?? '0',
          location_id: ref.location_id,
          available: 0,
          updated_at: isoOf(t),
          source: 'webhook',
          is_deleted: 1,
          ...meta(d, t),
        };
      }
      const r = c.record;
      // the key (and so the sort key) uses the inventory item when known, else the variant
      return {
        store_id: r.store_id,
        inventory_item_id: r.inventory_item_id ?? '0',
        variant_id: r.inventory_item_id ? '0' : (r.variant_id ?? '0'),
        location_id: r.location_id,
        available: r.available,
        updated_at: chTime(r.updated_at),
        source: r.source,
        is_deleted: 0,
        ...meta(d, Date.parse(r.updated_at)),
      };
    });
    return { writes: [{ table: 'catalog_inventory_levels', rows }] };
  },
};

// ------------------------------------------------------------------------------------------------
// pricing: price-list entries and B2B catalogs

export const catalogPricingProcessor: CatalogProcessor<CatalogPricing> = {
  name: 'catalog_pricing',
  topic: 'pricing',
  catalogTopic: 'pricing',
  tables: {
    written: ['catalog_prices', 'catalog_b2b_catalogs'],
    views: [],
    compare: { catalog_prices: LATEST, catalog_b2b_catalogs: LATEST },
  },
  parseTombstone: tombstoneParser('pricing'),
  parse: parser(CatalogPricingSchema),
  async process(batch: Decoded<Change<CatalogPricing>>[]): Promise<ProcessResult> {
    const prices: object[] = [];
    const catalogs: object[] = [];
    for (const d of batch) {
      const c = d.value;
      if (c.op === 'delete') {
        const t = tombstoneTime(d);
        const common = { updated_at: isoOf(t), source: 'webhook', is_deleted: 1, ...meta(d, t) };
        if (c.ref.topic === 'price') {
          prices.push({
            store_id: c.ref.store_id,
            price_list_id: c.ref.price_list_id,
            variant_id: c.ref.variant_id,
            product_id: '0',
            currency: '',
            price: '0',
            compare_at_price: null,
            ...common,
          });
        } else if (c.ref.topic === 'b2b_catalog') {
          catalogs.push({
            store_id: c.ref.store_id,
            catalog_id: c.ref.catalog_id,
            title: '',
            status: 'archived',
            company_location_ids: [],
            price_list_id: null,
            all_products: 0,
            product_ids: [],
            collection_ids: [],
            ...common,
          });
        }
        continue;
      }
      const r = c.record;
      const m = meta(d, Date.parse(r.updated_at));
      if (r.record_type === 'price' && r.price) {
        prices.push({
          store_id: r.store_id,
          price_list_id: r.price.price_list_id,
          variant_id: r.price.variant_id,
          product_id: r.price.product_id ?? '0',
          currency: r.price.currency,
          price: r.price.price,
          compare_at_price: r.price.compare_at_price,
          updated_at: chTime(r.updated_at),
          source: r.source,
          is_deleted: 0,
          ...m,
        });
      } else if (r.record_type === 'b2b_catalog' && r.catalog) {
        const k = r.catalog;
        catalogs.push({
          store_id: r.store_id,
          catalog_id: k.catalog_id,
          title: k.title,
          status: k.status,
          company_location_ids: k.company_location_ids,
          price_list_id: k.price_list_id,
          all_products: k.all_products ? 1 : 0,
          product_ids: k.product_ids,
          collection_ids: k.collection_ids,
          updated_at: chTime(r.updated_at),
          source: r.source,
          is_deleted: 0,
          ...m,
        });
      }
    }
    return {
      writes: [
        { table: 'catalog_prices', rows: prices },
        { table: 'catalog_b2b_catalogs', rows: catalogs },
      ],
    };
  },
};

export const CATALOG_PROCESSORS = [
  catalogProductsProcessor,
  catalogCollectionsProcessor,
  catalogContentProcessor,
  catalogInventoryProcessor,
  catalogPricingProcessor,
] as const;
