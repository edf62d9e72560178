// The catalog projection of collections (metadata and membership): a stream processor on its compacted catalog topic. Versioning,
// tombstones and the shared helpers: streams/catalog/shared.ts.
import { type CatalogCollection, type CatalogKeyRef, CatalogCollectionSchema } from '../../schemas/catalog.ts';
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
} from './shared.ts';

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
