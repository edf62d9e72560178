// The Avro value schema of every Kafka topic this contract set covers, generated from the zod schemas.
// The registry subject of a topic is `<physical topic name>-value` (TopicNameStrategy).
import type { Schema } from 'avsc';
import { CATALOG_AVRO } from '../catalog.ts';
import { STORE_CONFIG_AVRO } from '../config.ts';
import { EnrichedEventSchema, RejectedEventSchema } from '../events.ts';
import { SearchFeedbackRecordSchema } from '../feedback.ts';
import { OrderSchema } from '../orders.ts';
import { RequestEventSchema } from '../requests.ts';
import { SiteEventSchema } from '../site.ts';
import type { TopicKey } from '../topics.ts';
import { avroFromZod } from './generate.ts';

export { avroFromZod } from './generate.ts';
export { avroType, LOGICAL_TYPES } from './logical-types.ts';

const NS = 'discovery';

export const storefrontEventAvro: Schema = avroFromZod(EnrichedEventSchema, {
  name: 'StorefrontEvent',
  namespace: `${NS}.events`,
  doc: 'An engagement event accepted by POST /beacon, validated and enriched (storefront.events.v1)',
});

export const rejectedEventAvro: Schema = avroFromZod(RejectedEventSchema, {
  name: 'RejectedEvent',
  namespace: `${NS}.events`,
  doc: 'A beacon event dropped by validation, with the reason (storefront.events.rejected.v1)',
});

export const requestEventAvro: Schema = avroFromZod(RequestEventSchema, {
  name: 'RequestEvent',
  namespace: `${NS}.requests`,
  doc: 'One storefront API request, emitted by the read API (storefront.requests.v1)',
});

export const searchFeedbackAvro: Schema = avroFromZod(SearchFeedbackRecordSchema, {
  name: 'SearchFeedback',
  namespace: `${NS}.feedback`,
  doc: 'One search feedback record from POST /search/feedback (storefront.feedback.v1)',
});

export const orderAvro: Schema = avroFromZod(OrderSchema, {
  name: 'Order',
  namespace: `${NS}.orders`,
  doc: 'An order from the commerce platform (commerce.orders.v1)',
});

export const siteEventAvro: Schema = avroFromZod(SiteEventSchema, {
  name: 'SiteEvent',
  namespace: `${NS}.site`,
  doc: 'One public-site submission: a form or an arcade score (site.events.v1)',
});

/** Value schemas by topic key (see schemas/topics.ts). */
export const VALUE_SCHEMAS = {
  events: storefrontEventAvro,
  rejected: rejectedEventAvro,
  requests: requestEventAvro,
  feedback: searchFeedbackAvro,
  orders: orderAvro,
  site: siteEventAvro,
} as const satisfies Partial<Record<TopicKey, Schema>>;

/**
 * The reader schema of every topic a stream processor consumes (streams/runtime/decoder.ts): the platform
 * value schemas above plus the catalog records (schemas/catalog.ts, registered by the catalog writer) and
 * the store configuration envelope (schemas/config.ts). schemas/catalog.ts and schemas/config.ts import
 * only ./generate.ts from this folder, so there is no import cycle.
 */
export const READER_SCHEMAS = {
  ...VALUE_SCHEMAS,
  ...CATALOG_AVRO,
  storeConfig: STORE_CONFIG_AVRO,
} as const satisfies Partial<Record<TopicKey, Schema>>;

/**
 * Every topic's value schema, each generated from its zod schema: the platform topics, the six catalog
 * topics (schemas/catalog.ts) and the store configuration (schemas/config.ts). Committed as .avsc files
 * (./files.ts) and held BACKWARD-compatible with them by write-avsc.ts and test/schemas/avro.test.ts.
 */
export const TOPIC_VALUE_SCHEMAS = READER_SCHEMAS;
export type ValueSchemaKey = keyof typeof TOPIC_VALUE_SCHEMAS;

/** The registry subject of a topic's values (TopicNameStrategy). */
export function valueSubject(topic: string): string {
  return `${topic}-value`;
}
