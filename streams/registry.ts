// Every processor by name (`--processor <name>`, STREAMS_PROCESSORS, replay). The consumer group of a
// processor is `streams.<name>` (runtime.ts `defaultGroupId`): renaming one would make it reprocess its
// topic from the beginning, so names never change.
import {
  catalogCollectionsProcessor,
  catalogContentProcessor,
  catalogInventoryProcessor,
  catalogMetaobjectsProcessor,
  catalogPricingProcessor,
  catalogProductsProcessor,
} from './catalog/index.ts';
import { eventsProcessor } from './events/processor.ts';
import { feedbackProcessor } from './feedback/processor.ts';
import { imagesContentProcessor, imagesProductsProcessor } from './images/processor.ts';
import { ordersProcessor } from './orders/processor.ts';
import { rejectedProcessor } from './rejected/processor.ts';
import { requestsProcessor } from './requests/processor.ts';
import { siteProcessor } from './site/processor.ts';
import { storeConfigProcessor } from './store-config/processor.ts';
import type { Processor } from './runtime/types.ts';

export const PROCESSORS: Record<string, Processor<any>> = {
  events: eventsProcessor,
  requests: requestsProcessor,
  orders: ordersProcessor,
  rejected: rejectedProcessor,
  // the catalog projections (streams/catalog/index.ts): compacted topics, tombstones are deletes
  catalog_products: catalogProductsProcessor,
  catalog_collections: catalogCollectionsProcessor,
  catalog_content: catalogContentProcessor,
  catalog_inventory: catalogInventoryProcessor,
  catalog_pricing: catalogPricingProcessor,
  catalog_metaobjects: catalogMetaobjectsProcessor,
  // the analysts' projection of the store configuration (compacted; tombstones are deletes)
  store_config: storeConfigProcessor,
  // search feedback (POST /search/feedback) → search_feedback
  feedback: feedbackProcessor,
  // image features of products and content (streams/images) → image_features, agg:images
  images_products: imagesProductsProcessor,
  images_content: imagesContentProcessor,
  // public-site submissions (forms, arcade scores) → site_events_raw
  site: siteProcessor,
};

/** The processor of a name; `catalog-products` is accepted for `catalog_products` (and so on). */
export function processorByName(name: string): Processor<any> | undefined {
  const n = name.trim().replaceAll('-', '_');
  return Object.hasOwn(PROCESSORS, n) ? PROCESSORS[n] : undefined;
}

/** 'all' or a comma-separated list → processors (each once); throws on an unknown name. */
export function selectProcessors(spec: string): Processor<any>[] {
  if (spec.trim() === '' || spec === 'all') return Object.values(PROCESSORS);
  const out = spec.split(',').map((n) => {
    const p = processorByName(n);
    if (!p) throw new Error(`unknown processor ${JSON.stringify(n)}; known: ${Object.keys(PROCESSORS).join(', ')}`);
    return p;
  });
  return [...new Set(out)];
}
