// The committed .avsc copies of the generated value schemas (for analysts, other languages and review
// diffs). `node schemas/avro/write-avsc.ts` rewrites them; test/schemas/avro.test.ts keeps them in sync.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const AVSC_DIR = path.dirname(fileURLToPath(import.meta.url));

/** one file per topic value schema (every key of TOPIC_VALUE_SCHEMAS in ./index.ts) */
export const AVSC_FILES = {
  events: 'storefront-event.avsc',
  rejected: 'rejected-event.avsc',
  requests: 'request-event.avsc',
  feedback: 'search-feedback.avsc',
  orders: 'order.avsc',
  site: 'site-event.avsc',
  products: 'catalog-product.avsc',
  collections: 'catalog-collection.avsc',
  content: 'catalog-content.avsc',
  inventory: 'catalog-inventory-level.avsc',
  pricing: 'catalog-pricing.avsc',
  metaobjects: 'catalog-metaobject.avsc',
  storeConfig: 'store-config.avsc',
} as const;
