// The image-features processors: when a product (or an article or page) changes on its compacted catalog
// topic, fetch its images and write their visual features (services/common/image-features.ts) to
// `image_features` (migration 0320), then name the written items on `agg:images` (schemas/images.ts) so
// the read API's image index re-reads them. Two strategies of the runtime, one per topic:
// `images_products` (catalog.products.v1) and `images_content` (catalog.content.v1); each has its own
// consumer group, independent of the catalog projections of the same topics.
//
// A chunk is never blocked for long by images: each fetch has a timeout and a size cap, a failing host is
// skipped for the rest of the chunk, a failed image is written with its status (and counted,
// `image_features_images_total{status}`) rather than retried forever; the next change of the record, or a
// replay, describes it again. Within a chunk only the last version of each item is described (the
// runtime writes every row; ReplacingMergeTree keeps the newest by `_version`).
//
// Each row names the model that described it (`model`: local-v1, or IMAGE_MODEL with IMAGE_FEATURES=http).
// After a model change the read API ignores rows of the other model; a replay of images_products and
// images_content (POST /internal/replay), or each record's next change, recomputes them with the new one.
import {
  type CatalogContent,
  CatalogContentSchema,
  type CatalogKeyRef,
  type CatalogProduct,
  CatalogProductSchema,
} from '../../schemas/catalog.ts';
import { encodeImagesMessages, IMAGES_CHANNEL, type ImageItemType, type ImagesChange } from '../../schemas/images.ts';
import { loadConfig } from '../../services/common/config.ts';
import { featuresToJson, imageFeatureProvider } from '../../services/common/image-features.ts';
import type { Change } from '../catalog/shared.ts';
import { LATEST, meta, parser, tombstoneParser, tombstoneTime } from '../catalog/shared.ts';
import type { Decoded, ProcessContext, Processor, ProcessResult } from '../runtime/types.ts';
import { chTime } from '../runtime/util.ts';
import { ImageDescriber } from './fetch.ts';

interface Item {
  store_id: string;
  item_type: ImageItemType;
  item_id: string;
  /** null: deleted */
  srcs: string[] | null;
  updatedMs: number;
}

const TABLE = 'image_features';
/**
 * one describer per process: its URL cache is shared by both processors and every partition. Its provider
 * is the configured one (IMAGE_FEATURES, IMAGE_MODEL_URL, IMAGE_MODEL: services/common/config.ts), read from
 * the environment the app's configuration was loaded from (the processors' thread inherits it), the same
 * the read API describes query images with.
 */
let shared: ImageDescriber | null = null;
const describer = () => (shared ??= new ImageDescriber(imageFeatureProvider(loadConfig(process.env))));

/** Tests swap the describer (a short timeout, a fresh cache). */
export function setImageDescriber(d: ImageDescriber | null): void {
  shared = d;
}

async function processItems(batch: Decoded<unknown>[], items: Item[], ctx: ProcessContext): Promise<ProcessResult> {
  // the last version of each item in the chunk is described; earlier ones are written as they are
  // superseded (same content, their own versions), so the rows stay one per message
  const urls = new Set<string>();
  for (const it of items) for (const s of it.srcs ?? []) urls.add(s);
  const d = describer();
  const described = await d.describeAll(urls);
  const computedAt = chTime(new Date().toISOString());
  const rows = items.map((it, i) => {
    const list = (it.srcs ?? []).map((s) => described.get(s) ?? { src: s, status: 'pending', features: null });
    const f = list.map((x) => (x.features ? featuresToJson(x.features) : null));
    return {
      store_id: it.store_id,
      item_type: it.item_type,
      item_id: it.item_id,
      model: d.model,
      image_srcs: list.map((x) => x.src),
      image_status: list.map((x) => x.status),
      image_hashes: f.map((x) => x?.hash ?? ''),
      image_vectors: f.map((x) => x?.vector ?? []),
      updated_at: chTime(new Date(it.updatedMs).toISOString()),
      computed_at: computedAt,
      is_deleted: it.srcs === null ? 1 : 0,
      ...meta(batch[i], it.updatedMs),
    };
  });
  const changes = new Map<string, ImagesChange>();
  for (const it of items) {
    const k = `${it.store_id}\u0000${it.item_type}`;
    let c = changes.get(k);
    if (!c) changes.set(k, (c = { store_id: it.store_id, item_type: it.item_type, item_ids: [] }));
    if (!c.item_ids.includes(it.item_id)) c.item_ids.push(it.item_id);
  }
  return {
    writes: [{ table: TABLE, rows }],
    afterWrite: async () => {
      if (ctx.replay || changes.size === 0) return;
      try {
        for (const m of encodeImagesMessages([...changes.values()])) await ctx.redis.publish(IMAGES_CHANNEL, m);
      } catch (err) {
        ctx.logger.warn({ err: (err as Error).message }, 'images: agg:images not published (the index reloads later)');
      }
    },
  };
}

/** replay compares the current items and their image URLs per day (features depend on what the URLs
 *  answer at fetch time, and computed_at always differs) */
const tables = {
  written: [TABLE],
  views: [],
  compare: {
    [TABLE]: {
      ...LATEST,
      measure: "concat(toString(count()), ' current, checksum ', hex(sum(cityHash64(item_type, item_id, image_srcs))))",
    },
  },
};

export const imagesProductsProcessor: Processor<Change<CatalogProduct>> = {
  name: 'images_products',
  topic: 'products',
  tables,
  parse: parser(CatalogProductSchema),
  parseTombstone: tombstoneParser('products'),
  process(batch: Decoded<Change<CatalogProduct>>[], ctx: ProcessContext): Promise<ProcessResult> {
    const items = batch.map((d): Item => {
      const c = d.value;
      if (c.op === 'upsert')
        return {
          store_id: c.record.store_id,
          item_type: 'product',
          item_id: c.record.product_id,
          srcs: c.record.images.map((im) => im.src),
          updatedMs: Date.parse(c.record.updated_at),
        };
      const ref = c.ref as Extract<CatalogKeyRef, { topic: 'products' }>;
      return {
        store_id: ref.store_id,
        item_type: 'product',
        item_id: ref.product_id,
        srcs: null,
        updatedMs: tombstoneTime(d),
      };
    });
    return processItems(batch, items, ctx);
  },
};

export const imagesContentProcessor: Processor<Change<CatalogContent>> = {
  name: 'images_content',
  topic: 'content',
  tables,
  parse: parser(CatalogContentSchema),
  parseTombstone: tombstoneParser('content'),
  process(batch: Decoded<Change<CatalogContent>>[], ctx: ProcessContext): Promise<ProcessResult> {
    const items = batch.map((d): Item => {
      const c = d.value;
      if (c.op === 'upsert')
        return {
          store_id: c.record.store_id,
          item_type: c.record.content_type,
          item_id: c.record.content_id,
          srcs: c.record.image ? [c.record.image.url] : [],
          updatedMs: Date.parse(c.record.updated_at),
        };
      const ref = c.ref as Extract<CatalogKeyRef, { topic: 'content' }>;
      return {
        store_id: ref.store_id,
        item_type: ref.content_type,
        item_id: ref.content_id,
        srcs: null,
        updatedMs: tombstoneTime(d),
      };
    });
    return processItems(batch, items, ctx);
  },
};
