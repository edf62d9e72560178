// The block strategies: each turns the request's anchor (a product, a collection, a cart, or the
// shopper's context) into ranked product ids. Everything here reads in-process state only: the catalog
// index (products, collections, ranking signals), the relations index (pair aggregates), the learned
// search evidence and the similar-products index.
//
// Anchors and the shopper's context: product and collection anchors name their product(s); a cart anchor
// is the cart's products; the context-only anchors (home, search, not_found, landing, other, none) use the
// shopper's recently viewed products, else the cart, so "customers also viewed" on a home page means
// "related to what you looked at".
import type { ConfigPayload, StrategyKey } from '../../../schemas/config.ts';
import { toNumericId } from '../../../schemas/fields.ts';
import type { RequestContext } from '../context.ts';
import type { IndexedProduct, StoreCatalog } from '../results/catalog.ts';
import { queryKey } from '../search/analyze.ts';
import type { StoreLearned } from '../search/learned.ts';
import type { StoreContent } from '../content/index.ts';
import type { ImageSimilarity, StoreSimilar } from '../similar/index.ts';
import type { StoreRelations } from './relations.ts';

export type BlockConfig = ConfigPayload<'block'>;

export interface Anchor {
  type: BlockConfig['anchor_type'];
  /** the anchor's products: the product, the collection's members, the cart */
  productIds: string[];
  /** product anchors: the product */
  product: IndexedProduct | null;
  /** variant-aware strategies on product anchors (variant_id of the anchor product) */
  variantId: string | null;
  /** collection anchors: the collection id */
  collectionId: string | null;
  /** article anchors: the article id */
  articleId: string | null;
}

export interface StrategyDeps {
  catalog: StoreCatalog;
  rc: RequestContext;
  relations: StoreRelations | null;
  learned: StoreLearned | null;
  similar: StoreSimilar;
  images: ImageSimilarity | null;
  /** the store's articles and pages (related content), null when unavailable */
  content: StoreContent | null;
  /** ms */
  now: number;
}

export interface StrategyResult {
  /** ranked product ids (anchors and exclusions already removed) */
  ids: string[];
  /** the store has no data of this strategy's kind yet (cold start) */
  noData: boolean;
  /** similar products: where the neighbours came from */
  source?: 'precomputed' | 'live';
}

const COLLECTION_ANCHORS_MAX = 300;

/** the products a context-only anchor stands for: recently viewed, else the cart */
function contextAnchors(rc: RequestContext): { ids: string[]; weights: Map<string, number> } {
  const ids: string[] = [];
  const weights = new Map<string, number>();
  const viewed = rc.productsViewed;
  viewed.forEach((v, i) => {
    if (!weights.has(v.productId)) {
      ids.push(v.productId);
      // most recent first; older views count less
      weights.set(v.productId, 1 / (1 + i * 0.25));
    }
  });
  if (ids.length === 0)
    for (const c of rc.productsInCart)
      if (c.productId && !weights.has(c.productId)) {
        ids.push(c.productId);
        weights.set(c.productId, 1);
      }
  return { ids, weights };
}

/** ids of a ranked list, without anchors and exclusions, de-duplicated */
function clean(ids: Iterable<string>, anchor: Anchor, exclude: ReadonlySet<string>): string[] {
  const skip = new Set(anchor.type === 'cart' || anchor.type === 'product' ? anchor.productIds : []);
  const out: string[] = [];
  const seen = new Set<string>();
  for (const id of ids) {
    if (skip.has(id) || exclude.has(id) || seen.has(id)) continue;
    seen.add(id);
    out.push(id);
  }
  return out;
}

/** products ranked by a signal (highest first, only those with any), memoized per signals map */
const bySignal = new WeakMap<object, Map<string, string[]>>();
function rankedBy(catalog: StoreCatalog, signal: 'revenue7d' | 'trending' | 'popularity'): string[] {
  let memo = bySignal.get(catalog.signals);
  if (!memo) bySignal.set(catalog.signals, (memo = new Map()));
  let list = memo.get(signal);
  if (!list) {
    const floor = signal === 'trending' ? 1 : 0;
    list = [...catalog.signals]
      .filter(([id, s]) => s[signal] > floor && catalog.products.has(id))
      .sort((a, b) => b[1][signal] - a[1][signal] || (a[0] < b[0] ? -1 : 1))
      .map(([id]) => id);
    memo.set(signal, list);
  }
  return list;
}

/** products newest first (published, else created), memoized per catalog version */
const newest = new WeakMap<StoreCatalog, { version: number; list: string[] }>();
function newestFirst(catalog: StoreCatalog): string[] {
  const m = newest.get(catalog);
  if (m && m.version === catalog.version) return m.list;
  const list = [...catalog.products.values()]
    .filter((p) => (p.publishedSec ?? p.createdSec) !== null)
    .sort((a, b) => (b.publishedSec ?? b.createdSec ?? 0) - (a.publishedSec ?? a.createdSec ?? 0) || a.order - b.order)
    .map((p) => p.p.id);
  newest.set(catalog, { version: catalog.version, list });
  return list;
}

function collectionMembers(catalog: StoreCatalog, collectionId: string): Set<string> {
  const c = catalog.collections.get(collectionId);
  return new Set(c ? catalog.membersOf(c).map((m) => m.item.p.id) : []);
}

/** the collections a product anchor belongs to, or the collection anchor */
function scopeCollections(d: StrategyDeps, anchor: Anchor): Set<string> | null {
  if (anchor.collectionId) return collectionMembers(d.catalog, anchor.collectionId);
  if (anchor.product) {
    const out = new Set<string>();
    for (const cid of d.catalog.collectionsOf(anchor.product.p.id))
      for (const id of collectionMembers(d.catalog, cid)) out.add(id);
    return out;
  }
  return null;
}

/** product references in a metafield value: GIDs or ids, a list, or a JSON-encoded list */
export function metafieldProductIds(value: unknown): string[] {
  const out: string[] = [];
  const add = (v: unknown) => {
    if (Array.isArray(v)) for (const x of v) add(x);
    else if (typeof v === 'string' && v.trim().startsWith('[')) {
      try {
        add(JSON.parse(v));
      } catch {
        // not a list: nothing
      }
    } else {
      const id = toNumericId(v, 'Product');
      if (id) out.push(id);
    }
  };
  add(value);
  return out;
}

export function runStrategy(
  key: StrategyKey,
  block: BlockConfig,
  anchor: Anchor,
  exclude: ReadonlySet<string>,
  d: StrategyDeps,
): StrategyResult {
  const { catalog, rc, relations } = d;
  const ctx =
    anchor.type === 'product' || anchor.type === 'cart' || anchor.type === 'collection' ? null : contextAnchors(rc);
  let anchors = ctx ? ctx.ids : anchor.productIds;
  if (anchor.collectionId && anchors.length > COLLECTION_ANCHORS_MAX) {
    // a large collection anchors on its most popular members (bounded work per request)
    const pop = (id: string) => catalog.signal(id).popularity;
    anchors = [...anchors].sort((a, b) => pop(b) - pop(a)).slice(0, COLLECTION_ANCHORS_MAX);
  }
  const weights = ctx?.weights;
  const pairs = (kind: Parameters<StoreRelations['neighbours']>[0]): StrategyResult => {
    if (!relations?.has(kind)) return { ids: [], noData: true };
    return {
      ids: clean(
        relations.neighbours(kind, anchors, exclude, weights).map((n) => n.productId),
        anchor,
        exclude,
      ),
      noData: false,
    };
  };
  switch (key) {
    case 'customers_also_viewed':
      return pairs('co_view');
    case 'customers_also_added_to_cart':
      return pairs('co_cart');
    case 'frequently_bought_together':
      return pairs('co_purchase');
    case 'customers_who_bought_also_bought': {
      // what was bought with the anchor, plus with what this shopper bought before
      const bought = rc.productsPurchased.flatMap((p) => (p.productId ? [p.productId] : []));
      anchors = [...new Set([...anchors, ...bought])];
      return pairs('co_purchase');
    }
    case 'viewed_then_bought':
      return pairs('viewed_then_bought');
    case 'browsed_then_bought':
      // a collection: what sessions bought after viewing its (most popular) members
      return pairs('viewed_then_bought');
    case 'searched_then_viewed':
    case 'searched_then_purchased': {
      const last = rc.priorSearches.at(-1)?.searchQuery;
      if (!last) return { ids: [], noData: false };
      if (!d.learned) return { ids: [], noData: true };
      const list = d.learned.byKey.get(queryKey(last)) ?? [];
      const measure = key === 'searched_then_viewed' ? 'views' : 'purchases';
      const ranked = list
        .filter((p) => p[measure] > 0)
        .sort((a, b) => b[measure] - a[measure] || b.engagement - a.engagement);
      return {
        ids: clean(
          ranked.map((p) => p.productId),
          anchor,
          exclude,
        ),
        noData: d.learned.byKey.size === 0,
      };
    }
    case 'similar_products': {
      if (anchors.length === 0) return { ids: [], noData: false };
      if (anchors.length === 1) {
        const r = d.similar.neighbours(anchors[0], anchor.variantId, d.images, d.now);
        return {
          ids: clean(
            r.list.map((n) => n.productId),
            anchor,
            exclude,
          ),
          noData: false,
          source: r.source,
        };
      }
      // several anchors: summed scores
      const acc = new Map<string, number>();
      for (const a of anchors.slice(0, 20))
        for (const n of d.similar.neighbours(a, null, d.images, d.now).list)
          acc.set(n.productId, (acc.get(n.productId) ?? 0) + n.score * (weights?.get(a) ?? 1));
      const ids = [...acc].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).map(([id]) => id);
      return { ids: clean(ids, anchor, exclude), noData: false };
    }
    case 'photographed_together': {
      // products shown in the same photograph (a shared image) as the anchor or its variant
      const p = anchor.product;
      if (!p) return { ids: [], noData: false };
      const variant = anchor.variantId ? p.variants.find((v) => v.id === anchor.variantId) : undefined;
      const srcs = new Set(
        variant?.image_id
          ? p.p.images.filter((im) => im.id === variant.image_id).map((im) => im.src)
          : p.p.images.map((im) => im.src),
      );
      const ids: string[] = [];
      for (const item of catalog.products.values())
        if (item !== p && item.p.images.some((im) => srcs.has(im.src))) ids.push(item.p.id);
      return { ids: clean(ids, anchor, exclude), noData: false };
    }
    case 'manual_curation':
      return {
        ids: clean(
          (block.strategy_params.product_ids ?? []).flatMap((ref) => {
            const id = toNumericId(ref, 'Product') ?? catalog.byHandle.get(ref);
            return id ? [id] : [];
          }),
          anchor,
          exclude,
        ),
        noData: false,
      };
    case 'metafield_references': {
      const p = anchor.product;
      const path = block.strategy_params.metafield;
      if (!p || !path) return { ids: [], noData: false };
      const [ns, k] = path.split('.');
      // variant-scoped values fall back to the product's (the catalog holds product metafields)
      return { ids: clean(metafieldProductIds(p.p.metafields[ns]?.[k]), anchor, exclude), noData: false };
    }
    case 'best_sellers':
    case 'trending_now':
    case 'trending_in_collection': {
      const signal = key === 'best_sellers' ? 'revenue7d' : 'trending';
      const within = key === 'trending_in_collection' || anchor.collectionId ? scopeCollections(d, anchor) : null;
      const list = rankedBy(catalog, signal);
      return {
        ids: clean(within ? list.filter((id) => within.has(id)) : list, anchor, exclude),
        noData: list.length === 0,
      };
    }
    case 'new_arrivals': {
      const within = anchor.collectionId ? collectionMembers(catalog, anchor.collectionId) : null;
      const list = newestFirst(catalog);
      return { ids: clean(within ? list.filter((id) => within.has(id)) : list, anchor, exclude), noData: false };
    }
    case 'recently_viewed':
      return { ids: clean(contextAnchors(rc).ids, anchor, exclude), noData: false };
    case 'free_shipping_picks': {
      const threshold = rc.freeShippingThreshold;
      if (threshold === null) return { ids: [], noData: false };
      const gap = threshold - rc.cartSubtotal;
      if (gap <= 0) return { ids: [], noData: false };
      const inCart = new Set(rc.productsInCart.flatMap((c) => (c.productId ? [c.productId] : [])));
      const picks: { id: string; over: number; pop: number }[] = [];
      for (const item of catalog.products.values()) {
        if (inCart.has(item.p.id)) continue;
        let price: number | null = null;
        for (const v of item.variants) {
          const n = Number(v.price);
          if (v.available && Number.isFinite(n) && n >= gap && (price === null || n < price)) price = n;
        }
        if (price !== null) picks.push({ id: item.p.id, over: price - gap, pop: catalog.signal(item.p.id).popularity });
      }
      // the smallest addition that reaches free shipping first; popular ones first among equals
      picks.sort((a, b) => a.over - b.over || b.pop - a.pop || (a.id < b.id ? -1 : 1));
      return {
        ids: clean(
          picks.map((x) => x.id),
          anchor,
          exclude,
        ),
        noData: false,
      };
    }
    case 'related_content':
      // content items, not products: answered by the engine (engine.ts) from relatedContent()
      return { ids: [], noData: false };
  }
}

/**
 * Related content: the store's articles and pages ranked by text relevance to the anchor — the product's
 * title, type and tags; the article's title and tags; the collection's title; on context anchors the last
 * prior search, else the titles of what the shopper viewed. The anchor article itself is never returned.
 */
export function relatedContent(anchor: Anchor, d: StrategyDeps): string[] {
  const content = d.content;
  if (!content) return [];
  let text = '';
  if (anchor.product)
    text = [anchor.product.p.title, anchor.product.p.product_type, ...anchor.product.p.tags].join(' ');
  else if (anchor.articleId) {
    const a = content.items.find((c) => c.view.content_id === anchor.articleId);
    text = a ? [a.view.title, ...a.view.tags].join(' ') : '';
  } else if (anchor.collectionId) text = d.catalog.collections.get(anchor.collectionId)?.view.title ?? '';
  else if (anchor.type === 'cart')
    text = anchor.productIds.map((id) => d.catalog.products.get(id)?.p.title ?? '').join(' ');
  else
    text =
      d.rc.priorSearches.at(-1)?.searchQuery ??
      d.rc.productsViewed.map((v) => d.catalog.products.get(v.productId)?.p.title ?? v.title ?? '').join(' ');
  return content
    .textScores(text, null)
    .filter((x) => x.item.view.content_id !== anchor.articleId)
    .sort((a, b) => b.score - a.score || b.item.publishedSec - a.item.publishedSec)
    .map((x) => x.item.view.content_id);
}

/** strategies whose results come from shopper behaviour (a store without any yet is in cold start) */
export const BEHAVIOURAL: ReadonlySet<StrategyKey> = new Set<StrategyKey>([
  'customers_also_viewed',
  'customers_also_added_to_cart',
  'frequently_bought_together',
  'customers_who_bought_also_bought',
  'viewed_then_bought',
  'browsed_then_bought',
  'best_sellers',
  'trending_now',
  'trending_in_collection',
]);

/** the strategies that use `variant_id` on product anchors */
export const VARIANT_AWARE: ReadonlySet<StrategyKey> = new Set<StrategyKey>([
  'similar_products',
  'metafield_references',
  'photographed_together',
]);

/**
 * Personalization: blend the strategy's order with the shopper's affinity (co-views with what they
 * viewed or carted), `strength` 0 (strategy order) to 1 (affinity order).
 */
export function personalize(ids: string[], strength: number, d: StrategyDeps): { ids: string[]; applied: boolean } {
  if (strength <= 0 || ids.length < 2 || !d.relations?.has('co_view')) return { ids, applied: false };
  const ctx = contextAnchors(d.rc);
  if (ctx.ids.length === 0) return { ids, applied: false };
  const affinity = new Map<string, number>();
  for (const n of d.relations.neighbours('co_view', ctx.ids, new Set(), ctx.weights))
    affinity.set(n.productId, n.score);
  let max = 0;
  for (const id of ids) max = Math.max(max, affinity.get(id) ?? 0);
  if (max === 0) return { ids, applied: false };
  const n = ids.length;
  const scored = ids.map((id, i) => ({
    id,
    s: (1 - strength) * (1 - i / n) + strength * ((affinity.get(id) ?? 0) / max),
    i,
  }));
  scored.sort((a, b) => b.s - a.s || a.i - b.i);
  return { ids: scored.map((x) => x.id), applied: true };
}
