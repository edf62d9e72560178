// The topic registry: every Kafka topic the platform uses, its key, partition count and cleanup policy.
// Names are logical; the physical name is prefixed with KAFKA_TOPIC_PREFIX (see services/common/config.ts).

export interface TopicSpec {
  name: string;
  /** what the record key is; records with the same key keep their order in one partition */
  key: string;
  partitions: number;
  cleanupPolicy: 'delete' | 'compact';
  /** -1 = forever */
  retentionMs: number;
  description: string;
}

const DAY = 24 * 60 * 60 * 1000;

export const TOPICS = {
  events: {
    name: 'storefront.events.v1',
    key: 'store_id + session_id (one session stays in order in one partition)',
    partitions: 6,
    cleanupPolicy: 'delete',
    retentionMs: 30 * DAY,
    description: 'Engagement events accepted by POST /beacon, validated and enriched',
  },
  requests: {
    name: 'storefront.requests.v1',
    key: 'store_id + session id (or device id, or request id)',
    partitions: 6,
    cleanupPolicy: 'delete',
    retentionMs: 30 * DAY,
    description: 'One request event per storefront API request, emitted by the read API',
  },
  feedback: {
    name: 'storefront.feedback.v1',
    key: 'store_id + search_id',
    partitions: 1,
    cleanupPolicy: 'delete',
    retentionMs: 90 * DAY,
    description: 'Search feedback records from POST /search/feedback (with the search context when cached)',
  },
  rejected: {
    name: 'storefront.events.rejected.v1',
    key: 'store_id',
    partitions: 1,
    cleanupPolicy: 'delete',
    retentionMs: 14 * DAY,
    description: 'Beacon events dropped by validation, with the reason',
  },
  orders: {
    name: 'commerce.orders.v1',
    key: 'store_id + order_id',
    partitions: 3,
    cleanupPolicy: 'delete',
    retentionMs: -1,
    description: 'Orders from platform webhooks: the source of co-purchase and revenue',
  },
  products: {
    name: 'catalog.products.v1',
    key: 'store_id + product_id',
    partitions: 3,
    cleanupPolicy: 'compact',
    retentionMs: -1,
    description: 'Latest state of each product (tombstone = deleted)',
  },
  collections: {
    name: 'catalog.collections.v1',
    key: 'store_id + collection_id',
    partitions: 3,
    cleanupPolicy: 'compact',
    retentionMs: -1,
    description: 'Latest state of each collection with ordered membership (tombstone = deleted)',
  },
  content: {
    name: 'catalog.content.v1',
    key: 'store_id + content_type + content_id',
    partitions: 1,
    cleanupPolicy: 'compact',
    retentionMs: -1,
    description: 'Latest state of each article and page (tombstone = deleted)',
  },
  inventory: {
    name: 'catalog.inventory.v1',
    key: 'store_id + variant_id + location_id',
    partitions: 3,
    cleanupPolicy: 'compact',
    retentionMs: -1,
    description: 'Inventory availability per variant and location',
  },
  pricing: {
    name: 'catalog.pricing.v1',
    key: 'store_id + price list + variant_id, or store_id + B2B catalog id',
    partitions: 3,
    cleanupPolicy: 'compact',
    retentionMs: -1,
    description: 'Price-list entries (market and B2B prices) and B2B catalogs (tombstone = deleted)',
  },
  metaobjects: {
    name: 'catalog.metaobjects.v1',
    key: 'store_id + metaobject_id',
    partitions: 1,
    cleanupPolicy: 'compact',
    retentionMs: -1,
    description: 'Latest state of each metaobject: colour/pattern swatches and other entries (tombstone = deleted)',
  },
  storeConfig: {
    name: 'stores.config.v1',
    key: 'store_id + config kind + item id',
    partitions: 1,
    cleanupPolicy: 'compact',
    retentionMs: -1,
    description: 'Store configuration as events: stores, tokens, markets, sort orders, blocks, rules, …',
  },
  site: {
    name: 'site.events.v1',
    key: "kind (one form's submissions stay in order)",
    partitions: 1,
    cleanupPolicy: 'delete',
    retentionMs: -1,
    description: 'Public-site submissions: newsletter signups, article unlocks, integration forms, arcade scores',
  },
  schemas: {
    name: '_schemas',
    key: 'registry record key (subject + version, config, …)',
    partitions: 1,
    cleanupPolicy: 'compact',
    retentionMs: -1,
    description: "The schema registry's own state",
  },
} as const satisfies Record<string, TopicSpec>;

export type TopicKey = keyof typeof TOPICS;

/** `<topic>.dlq`: messages a processor could not decode or validate, with the reason in headers. */
export function dlqTopic(topic: string): string {
  return `${topic}.dlq`;
}
