// The catalog projection of articles and pages: a stream processor on its compacted catalog topic. Versioning,
// tombstones and the shared helpers: streams/catalog/shared.ts.
import { type CatalogContent, type CatalogKeyRef, CatalogContentSchema } from '../../schemas/catalog.ts';
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
} from './shared.ts';

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
