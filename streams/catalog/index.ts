// The catalog projections: one stream processor per compacted catalog topic, writing the versioned
// tables of migrations 0210-0230 (versioning and tombstones: shared.ts). Registered in streams/registry.ts.
import { catalogCollectionsProcessor } from './collections.ts';
import { catalogContentProcessor } from './content.ts';
import { catalogInventoryProcessor } from './inventory.ts';
import { catalogMetaobjectsProcessor } from './metaobjects.ts';
import { catalogPricingProcessor } from './pricing.ts';
import { catalogProductsProcessor } from './products.ts';

export { type CatalogProcessor, type Change, tombstoneParser, versionOf } from './shared.ts';
export { productRow } from './products.ts';
export {
  catalogCollectionsProcessor,
  catalogContentProcessor,
  catalogInventoryProcessor,
  catalogMetaobjectsProcessor,
  catalogPricingProcessor,
  catalogProductsProcessor,
};

export const CATALOG_PROCESSORS = [
  catalogProductsProcessor,
  catalogCollectionsProcessor,
  catalogContentProcessor,
  catalogInventoryProcessor,
  catalogPricingProcessor,
  catalogMetaobjectsProcessor,
] as const;
