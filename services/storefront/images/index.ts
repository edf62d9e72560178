// The read API's in-process image index: per store, the visual features of every product, article and page
// image (written by streams/images into `image_features`), loaded on first use and kept fresh from the
// `agg:images` channel (schemas/images.ts): a message names the items whose rows a chunk wrote and the
// index re-reads exactly those. Pub/sub has no replay: every (re)subscription reloads the loaded stores.
// Image search and content search's image signal read only this index on the request path.
//
// The index holds features of one model, the deployment's (IMAGE_FEATURES / IMAGE_MODEL): a row written by
// another model (before a model change, until a replay recomputes it) is kept as an item without features
// and counted in `otherModelItems`, so features of two models are never compared.
import type { Redis } from 'ioredis';
import type { Db } from '../../../clickhouse/client.ts';
import { type ImageFeatureRow, imageFeaturePage, imageFeaturesByIds } from '../../../clickhouse/queries/images.ts';
import { IMAGES_CHANNEL, type ImageItemType, type ImagesChange, parseImagesMessage } from '../../../schemas/images.ts';
import {
  FeatureMatrix,
  type ImageFeatureProvider,
  type ImageFeatures,
  LOCAL_MODEL,
} from '../../common/image-features.ts';
import type { Logger } from '../../common/logger.ts';

/** images compared in full per search (after a coarse pass over all): enough for 250 candidates after
 *  scope and filters, a few images per product */
const SHORTLIST = 1_500;

export interface ItemImages {
  srcs: string[];
  /** per image: its features, null when the processor could not describe it */
  features: (ImageFeatures | null)[];
}

/** One store's image features by item type and id. */
export class StoreImages {
  readonly storeId: string;
  /** the model whose features this index holds */
  readonly model: string;
  /** items whose current row was described by another model (ignored until recomputed) */
  readonly otherModelItems: Record<ImageItemType, Set<string>> = {
    product: new Set(),
    article: new Set(),
    page: new Set(),
  };
  readonly items: Record<ImageItemType, Map<string, ItemImages>> = {
    product: new Map(),
    article: new Map(),
    page: new Map(),
  };
  version = 0;

  constructor(storeId: string, model: string = LOCAL_MODEL) {
    this.storeId = storeId;
    this.model = model;
  }

  put(type: ImageItemType, row: ImageFeatureRow): void {
    if (type === 'product') this.matrix = null;
    const own = row.model === this.model;
    if (own) this.otherModelItems[type].delete(row.item_id);
    else this.otherModelItems[type].add(row.item_id);
    this.items[type].set(row.item_id, {
      srcs: row.image_srcs,
      features: row.image_vectors.map((v, i) =>
        own && row.image_status[i] === 'ok' && v.length
          ? { model: row.model, vector: Float32Array.from(v), hash: row.image_hashes[i] ?? '' }
          : null,
      ),
    });
  }

  /** the product images of one model in a flat matrix, rebuilt after changes (on the next search) */
  private matrix: { model: string; m: FeatureMatrix; owners: string[] } | null = null;

  /**
   * The best similarity to the query image of each product among the closest (the best of its images;
   * features of the query's model only; a coarse pass over every image shortlists SHORTLIST images for
   * the full comparison); products without features or outside the shortlist are absent.
   */
  productSimilarities(query: ImageFeatures, provider: ImageFeatureProvider): Map<string, number> {
    if (this.matrix?.model !== query.model) {
      const rows: ImageFeatures[] = [];
      const owners: string[] = [];
      for (const [id, item] of this.items.product)
        for (const f of item.features)
          if (f && f.model === query.model) {
            rows.push(f);
            owners.push(id);
          }
      const m = new FeatureMatrix(query.model, rows);
      // the images' vectors become views of the matrix (same values): a store's features held once, not
      // in a typed array per image and again in the matrix (≈ 0.8 KB per image of local-v1)
      rows.forEach((f, i) => {
        f.vector = m.rowView(i) ?? f.vector;
      });
      this.matrix = { model: query.model, m, owners };
    }
    const { m, owners } = this.matrix;
    const sims = m.similarities(query, provider, SHORTLIST);
    const out = new Map<string, number>();
    for (let i = 0; i < sims.length; i++) {
      if (sims[i] < 0) continue;
      const prev = out.get(owners[i]);
      if (prev === undefined || sims[i] > prev) out.set(owners[i], sims[i]);
    }
    return out;
  }

  remove(type: ImageItemType, id: string): void {
    if (type === 'product') this.matrix = null;
    this.items[type].delete(id);
    this.otherModelItems[type].delete(id);
  }

  /** the described images of an item (empty when none) */
  featuresOf(type: ImageItemType, id: string): ImageFeatures[] {
    return (this.items[type].get(id)?.features ?? []).filter((f): f is ImageFeatures => f !== null);
  }
}

export interface ImageIndexOptions {
  db: Db;
  /** a dedicated subscriber connection (pub/sub mode); none: no live updates (tests, tools) */
  subscriber?: Redis;
  logger: Logger;
  /** the model of the deployment's provider (default local-v1): rows of another model are ignored */
  model?: string;
}

const PAGE = 2_000;
const TYPES: ImageItemType[] = ['product', 'article', 'page'];

/** Per-store image features, loaded on demand and kept fresh from `agg:images`. */
export class ImageIndex {
  private readonly stores = new Map<string, Promise<StoreImages>>();
  private readonly loaded = new Map<string, StoreImages>();
  private readonly loading = new Map<string, ImagesChange[]>();
  private readonly opts: ImageIndexOptions;
  private chain: Promise<void> = Promise.resolve();
  /** changes applied since start (metrics, tests) */
  changesApplied = 0;

  constructor(opts: ImageIndexOptions) {
    this.opts = opts;
  }

  async start(): Promise<void> {
    const sub = this.opts.subscriber;
    if (!sub) return;
    sub.on('message', (channel: string, text: string) => {
      if (channel !== IMAGES_CHANNEL) return;
      try {
        for (const c of parseImagesMessage(text)) this.enqueue(c);
      } catch (err) {
        this.opts.logger.warn({ err: (err as Error).message }, 'image index: malformed agg:images message');
      }
    });
    let first = true;
    sub.on('ready', () => {
      if (first) return;
      for (const storeId of this.loaded.keys()) this.reload(storeId);
    });
    await sub.subscribe(IMAGES_CHANNEL);
    first = false;
  }

  /** The store's image features, loading them on first use. */
  get(storeId: string): Promise<StoreImages> {
    let p = this.stores.get(storeId);
    if (!p) {
      p = this.load(storeId);
      this.stores.set(storeId, p);
      p.catch(() => this.stores.delete(storeId));
    }
    return p;
  }

  private reload(storeId: string): void {
    const p = this.load(storeId);
    p.then(
      () => this.stores.set(storeId, p),
      (err: Error) => this.opts.logger.warn({ err: err.message, store: storeId }, 'image index: reload failed'),
    );
  }

  private async load(storeId: string): Promise<StoreImages> {
    const during: ImagesChange[] = [];
    this.loading.set(storeId, during);
    const s = new StoreImages(storeId, this.opts.model ?? LOCAL_MODEL);
    try {
      for (const type of TYPES) {
        let after = '0';
        for (;;) {
          const rows = await imageFeaturePage(this.opts.db, storeId, type, { after, limit: PAGE });
          for (const r of rows) s.put(type, r);
          if (rows.length < PAGE) break;
          after = rows[rows.length - 1].item_id;
        }
      }
    } finally {
      if (this.loading.get(storeId) === during) this.loading.delete(storeId);
    }
    s.version = (this.loaded.get(storeId)?.version ?? 0) + 1;
    this.loaded.set(storeId, s);
    for (const c of during) this.enqueue(c);
    return s;
  }

  private enqueue(c: ImagesChange): void {
    const during = this.loading.get(c.store_id);
    if (during) {
      during.push(c);
      return;
    }
    const s = this.loaded.get(c.store_id);
    if (!s) return; // loaded later, with this change in it
    this.chain = this.chain.then(async () => {
      try {
        const rows = await imageFeaturesByIds(this.opts.db, c.store_id, c.item_type, c.item_ids);
        const found = new Set(rows.map((r) => r.item_id));
        for (const id of c.item_ids) if (!found.has(id)) s.remove(c.item_type, id);
        for (const r of rows) s.put(c.item_type, r);
        s.version++;
        this.changesApplied++;
      } catch (err) {
        this.opts.logger.warn({ err: (err as Error).message, store: c.store_id }, 'image index: change not applied');
        this.reload(c.store_id);
      }
    });
  }

  /** wait for the changes received so far (tests) */
  settled(): Promise<void> {
    return this.chain;
  }
}
