// The catalog projection of inventory levels: a stream processor on its compacted catalog topic. Versioning,
// tombstones and the shared helpers: streams/catalog/shared.ts.
import { type CatalogInventoryLevel, type CatalogKeyRef, CatalogInventoryLevelSchema } from '../../schemas/catalog.ts';
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
