// The catalog projection of products: a stream processor on its compacted catalog topic. Versioning,
// tombstones and the shared helpers: streams/catalog/shared.ts.
import { type CatalogKeyRef, type CatalogProduct, CatalogProductSchema } from '../../schemas/catalog.ts';
import type { Decoded, ProcessResult } from '../runtime/types.ts';
import { chTime } from '../runtime/util.ts';
import {
  type Change,
  type CatalogProcessor,
  parser,
  tombstoneParser,
  LATEST,
  meta,
  tombstoneTime,
  isoOf,
  nullableTime,
  json,
  decMin,
} from './shared.ts';

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
