// The catalog projection of metaobjects (colour/pattern swatches and other entries product metafields
// reference): a stream processor on its compacted catalog topic. Versioning, tombstones and the shared
// helpers: streams/catalog/shared.ts.
import { type CatalogKeyRef, type CatalogMetaobject, CatalogMetaobjectSchema } from '../../schemas/catalog.ts';
import type { Decoded, ProcessResult } from '../runtime/types.ts';
import { chTime } from '../runtime/util.ts';
import {
  type CatalogProcessor,
  type Change,
  isoOf,
  json,
  LATEST,
  meta,
  parser,
  tombstoneParser,
  tombstoneTime,
} from './shared.ts';

export const catalogMetaobjectsProcessor: CatalogProcessor<CatalogMetaobject> = {
  name: 'catalog_metaobjects',
  topic: 'metaobjects',
  catalogTopic: 'metaobjects',
  tables: { written: ['catalog_metaobjects'], views: [], compare: { catalog_metaobjects: LATEST } },
  parseTombstone: tombstoneParser('metaobjects'),
  parse: parser(CatalogMetaobjectSchema),
  async process(batch: Decoded<Change<CatalogMetaobject>>[]): Promise<ProcessResult> {
    const rows = batch.map((d) => {
      const c = d.value;
      if (c.op === 'delete') {
        const ref = c.ref as Extract<CatalogKeyRef, { topic: 'metaobjects' }>;
        const t = tombstoneTime(d);
        return {
          store_id: ref.store_id,
          metaobject_id: ref.metaobject_id,
          type: '',
          handle: '',
          display_name: '',
          fields: '{}',
          swatch: '',
          updated_at: isoOf(t),
          source: 'webhook',
          is_deleted: 1,
          ...meta(d, t),
        };
      }
      const r = c.record;
      return {
        store_id: r.store_id,
        metaobject_id: r.metaobject_id,
        type: r.type,
        handle: r.handle,
        display_name: r.display_name,
        fields: JSON.stringify(r.fields),
        swatch: json(r.swatch),
        updated_at: chTime(r.updated_at),
        source: r.source,
        is_deleted: 0,
        ...meta(d, Date.parse(r.updated_at)),
      };
    });
    return { writes: [{ table: 'catalog_metaobjects', rows }] };
  },
};
