// Image search on the results engine: the products whose images look most like the query image (the best
// of each product's images, by the feature provider's similarity) are the candidates, in similarity
// order; then the standard pipeline — scope (channel, market, B2B), variant breakouts, filter_group,
// facets, sort order (`relevance` = similarity), page, records (attributes) — as search uses it.
import type { ResultEnvelope } from '../../../schemas/storefront.ts';
import type { ImageSearchBody } from '../../../schemas/images.ts';
import { computeFacets, expandFacets } from '../results/facets.ts';
import { breakoutsFor, makeTiles, requestScope, type ResultsInput, resultPage, tileFilter } from '../results/engine.ts';
import { resolveSortOrder, sortTiles } from '../results/sort.ts';

/** the most similar products considered (filters, facets and pages apply within them) */
export const IMAGE_CANDIDATES = 250;

export interface ImageSearchOutcome {
  envelope: Omit<ResultEnvelope, 'attributionToken'>;
  productIds: string[];
  sortOrderCode: string;
  images: (string | null)[];
}

export function executeImageSearch(
  input: ResultsInput,
  body: Omit<ImageSearchBody, 'image_id' | 'image_data'>,
  similarities: ReadonlyMap<string, number>,
  meta: Record<string, unknown>,
): ImageSearchOutcome {
  const { catalog, view } = input;
  const scope = requestScope(input, body);
  const ranked: { id: string; s: number }[] = [];
  for (const [id, s] of similarities) {
    const item = catalog.products.get(id);
    if (!item || !scope.visible(item)) continue;
    if (body.forceHideOutOfStock && !item.variants.some((v) => v.available)) continue;
    ranked.push({ id, s });
  }
  ranked.sort((a, b) => b.s - a.s || Number(a.id) - Number(b.id));
  const top = ranked.slice(0, IMAGE_CANDIDATES);
  const facetCodes = expandFacets(body.facets, catalog, scope);
  const breakouts = breakoutsFor(input, 'search', null);
  let tiles = makeTiles(
    top.map((c, i) => ({ item: catalog.products.get(c.id)!, position: i + 1 })),
    breakouts,
  );
  const filter = tileFilter(body.filter_group, scope);
  if (filter) tiles = tiles.filter(filter);
  const facets = computeFacets(tiles, facetCodes, scope, {
    counts: body.retrieveFacetCount === true,
    ranges: body.includeFacetRanges === true,
    display: body.enrichFacetMetaobjects === true,
  });
  const sortCode = body.sort_order_code ?? 'relevance';
  const order = resolveSortOrder(sortCode, input.dir.items(view.storeId, 'sort_order'), 'search');
  tiles = sortTiles(tiles, order, scope);
  const page = body.pagination?.page ?? 1;
  const limit = body.pagination?.limit ?? 24;
  const pageTiles = tiles.slice((page - 1) * limit, page * limit);
  const p = resultPage(input, body, {
    tiles,
    pageTiles,
    scope,
    facets,
    breakouts,
    sortOrderCode: sortCode,
    page,
    limit,
  });
  const score = new Map(top.map((c) => [c.id, c.s]));
  return {
    envelope: {
      ...p.fields,
      _meta: {
        ...p.meta,
        ...meta,
        similarities: pageTiles.map((t) => Math.round((score.get(t.item.p.id) ?? 0) * 1e4) / 1e4),
      },
      _workflow: [],
    },
    productIds: p.productIds,
    sortOrderCode: sortCode,
    images: p.images,
  };
}
