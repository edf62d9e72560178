// Similar products (POST /search/product/{searchProductId}) on the results engine: the product's
// content neighbours (similar/index.ts: precomputed, else computed live, same parameters either way)
// blended with what shoppers compared it with (co-views, live from the relations index), then the
// request's scope, filters, sort order, facets and page. ISO 8601 timestamps, as on search.
import type { SimilarBody } from '../../../schemas/blocks.ts';
import type { ResultEnvelope } from '../../../schemas/storefront.ts';
import type { StoreRelations } from '../blocks/relations.ts';
import { StorefrontError } from '../errors.ts';
import type { IndexedProduct } from '../results/catalog.ts';
import { breakoutsFor, makeTiles, requestScope, type ResultsInput, resultPage, tileFilter } from '../results/engine.ts';
import { computeFacets, expandFacets } from '../results/facets.ts';
import { resolveSortOrder, sortTiles } from '../results/sort.ts';
import { type ImageSimilarity, similarOf } from './index.ts';

/** share of the co-view signal in the blended order */
const BEHAVIOUR_WEIGHT = 0.3;

export interface SimilarResult {
  envelope: Omit<ResultEnvelope, 'attributionToken'>;
  productIds: string[];
  sortOrderCode: string;
  images: (string | null)[];
}

/** content neighbours blended with co-views: ids best first */
export function similarIds(
  input: ResultsInput,
  productId: string,
  relations: StoreRelations | null,
  images: ImageSimilarity | null,
): { ids: string[]; source: 'precomputed' | 'live'; behaviour: boolean; image: boolean } {
  const { list, source } = similarOf(input.catalog).neighbours(productId, null, images, input.now);
  const scores = new Map<string, number>();
  const top = list[0]?.score ?? 1;
  for (const n of list) scores.set(n.productId, (1 - BEHAVIOUR_WEIGHT) * (n.score / top));
  const views = relations?.has('co_view') ? relations.neighbours('co_view', [productId]).slice(0, 100) : [];
  const vtop = views[0]?.score ?? 1;
  for (const n of views) scores.set(n.productId, (scores.get(n.productId) ?? 0) + BEHAVIOUR_WEIGHT * (n.score / vtop));
  const ids = [...scores]
    .filter(([id]) => id !== productId)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([id]) => id);
  return { ids, source, behaviour: views.length > 0, image: images?.has(productId) ?? false };
}

export function similarProducts(
  input: ResultsInput,
  productId: string,
  body: SimilarBody,
  deps: { relations: StoreRelations | null; images: ImageSimilarity | null },
): SimilarResult {
  const { catalog } = input;
  const scope = requestScope(input, body);
  const anchor = catalog.products.get(productId);
  if (!anchor || !scope.visible(anchor))
    throw new StorefrontError(404, 'not_found', `No product ${productId}.`, [
      { path: 'searchProductId', message: 'unknown product' },
    ]);
  const { ids, source, behaviour, image } = similarIds(input, productId, deps.relations, deps.images);
  const products: { item: IndexedProduct; position: number }[] = [];
  for (const id of ids) {
    const item = catalog.products.get(id);
    if (!item || !scope.visible(item)) continue;
    if (body.forceHideOutOfStock && !item.variants.some((v) => v.available)) continue;
    products.push({ item, position: products.length + 1 });
  }
  const breakouts = breakoutsFor(input, 'search', null);
  let tiles = makeTiles(products, breakouts);
  const filter = tileFilter(body.filter_group, scope);
  if (filter) tiles = tiles.filter(filter);
  const facets = computeFacets(tiles, expandFacets(body.facets, catalog, scope), scope, {
    counts: body.retrieveFacetCount === true,
    ranges: body.includeFacetRanges === true,
    display: body.enrichFacetMetaobjects === true,
  });
  const sortOrderCode = body.sort_order_code ?? 'relevance';
  if (sortOrderCode !== 'relevance')
    tiles = sortTiles(
      tiles,
      resolveSortOrder(sortOrderCode, input.dir.items(input.view.storeId, 'sort_order'), 'search'),
      scope,
    );
  const page = body.pagination?.page ?? 1;
  const limit = body.pagination?.limit ?? 24;
  const p = resultPage(input, body, {
    tiles,
    pageTiles: tiles.slice((page - 1) * limit, page * limit),
    scope,
    facets,
    breakouts,
    sortOrderCode,
    page,
    limit,
  });
  return {
    envelope: {
      ...p.fields,
      _meta: { ...p.meta, similar: { productId: Number(productId), source, behaviour, image } },
      _workflow: [],
    },
    productIds: p.productIds,
    sortOrderCode,
    images: p.images,
  };
}
