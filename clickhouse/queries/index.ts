// Query helpers over the stream aggregates, for the read API and the site. Every query takes the store
// first and uses server-side parameters only. See docs/analytics.md for the tables behind them.
export { productIds } from './common.ts';
export { searchedThenPurchased, searchedThenViewed, type JourneyProduct } from './journeys.ts';
export { bestSellers, productPopularity, trendingProducts, type BestSeller, type TrendingProduct } from './products.ts';
export { relatedProducts, type RelatedOptions, type RelatedProduct, type RelatedStrategy } from './related.ts';
export { searchesServed, searchesServedDaily } from './searches.ts';
export {
  loadTrendingCells,
  trendingCellsOf,
  trendingQueries,
  trendingStores,
  type TrendingKey,
  type TrendingOptions,
  type TrendingQuery,
} from './trending.ts';
export {
  allMetaobjects,
  metaobjectGid,
  metaobjectsByIds,
  type MetaobjectSwatchView,
  type MetaobjectView,
} from './metaobjects.ts';
