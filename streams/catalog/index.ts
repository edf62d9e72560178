// The catalog projections: one stream processor per compacted catalog topic, writing the versioned
// tables of migrations 0210-0230 (versioning and tombstones: shared.ts). Registered in streams/registry.ts.
import { catalogCollectionsProcessor as collections } from './collections.ts';
import { catalogContentProcessor as content } from './content.ts';
import { catalogInventoryProcessor as inventory } from './inventory.ts';
import { catalogMetaobjectsProcessor as metaobjects } from './metaobjects.ts';
import { notifying } from './notify.ts';
import { catalogPricingProcessor as pricing } from './pricing.ts';
import { catalogProductsProcessor as products } from './products.ts';

// each publishes the record keys it wrote on agg:catalog after the write (notify.ts)
export const catalogProductsProcessor = notifying(products);
export const catalogCollectionsProcessor = notifying(collections);
export const catalogContentProcessor = notifying(content);
export const catalogInventoryProcessor = notifying(inventory);
export const catalogPricingProcessor = notifying(pricing);
export const catalogMetaobjectsProcessor = notifying(metaobjects);

export { type CatalogProcessor, type Change, tombstoneParser, versionOf } from './shared.ts';
export { productRow } from './products.ts';

export const CATALOG_PROCESSORS = [
  catalogProductsProcessor,
  catalogCollectionsProcessor,
  catalogContentProcessor,
  catalogInventoryProcessor,
  catalogPricingProcessor,
  catalogMetaobjectsProcessor,
] as const;
