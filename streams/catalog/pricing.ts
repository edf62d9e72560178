// The catalog projection of price-list entries and B2B catalogs: a stream processor on its compacted catalog topic. Versioning,
// tombstones and the shared helpers: streams/catalog/shared.ts.
import { type CatalogPricing, CatalogPricingSchema } from '../../schemas/catalog.ts';
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
} from './shared.ts';

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
