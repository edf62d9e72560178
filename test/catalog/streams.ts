// The catalog topics on the standalone streams infrastructure (test/streams/helpers.ts: broker, registry,
// redis-server in this process): register the catalog value schemas, produce records and tombstones the
// way the catalog writer does (Avro with the Confluent framing; a tombstone is a null value whose
// record timestamp is the delete's version), and read a DLQ back.
import { newUlid } from '../../services/common/ids.ts';
import { CATALOG_AVRO, type CatalogProduct, type CatalogTopicKey } from '../../schemas/catalog.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { normalizeProduct } from '../../services/catalog/normalize.ts';
import type { Infra } from '../streams/helpers.ts';
import { shopifyProduct } from './fixtures.ts';

export const CATALOG_TOPICS: CatalogTopicKey[] = [
  'products',
  'collections',
  'content',
  'inventory',
  'pricing',
  'metaobjects',
];

export function catalogTopic(infra: Infra, key: CatalogTopicKey): string {
  return `${infra.prefix}${TOPICS[key].name}`;
}

/** Register the catalog value schemas under `<topic>-value` (what the catalog writer does at start). */
export async function registerCatalogSchemas(infra: Infra): Promise<void> {
  for (const key of CATALOG_TOPICS) await infra.codec.register(catalogTopic(infra, key), CATALOG_AVRO[key]);
}

export interface CatalogMessage {
  key: string | null;
  /** null = tombstone */
  value: unknown | null;
  /** record timestamp (ms); the writer sets it on tombstones */
  timestamp?: number;
}

/** Produce in order, one acknowledged batch per call (acks=all, idempotent producer). */
export async function produceCatalog(infra: Infra, key: CatalogTopicKey, msgs: CatalogMessage[]): Promise<void> {
  const topic = catalogTopic(infra, key);
  await infra.producer.send({
    topic,
    acks: -1,
    messages: msgs.map((m) => ({
      key: m.key,
      value: m.value === null ? null : infra.codec.encode(topic, m.value),
      ...(m.timestamp !== undefined ? { timestamp: String(m.timestamp) } : {}),
    })),
  });
}

/** A normalized product record (the fixture iPod with `over` applied to the platform payload). */
export function productRecord(store: string, over: Record<string, unknown> = {}): CatalogProduct {
  const r = normalizeProduct(store, shopifyProduct(over), { source: 'webhook', now: '2026-01-01T00:00:00.000Z' });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.value.product;
}

export interface DlqMessage {
  reason: string;
  processor: string;
  offset: string;
  key: string | null;
  value: Buffer | null;
}

/** Read `<topic>.dlq` from the beginning until `count` messages matched `filter` (or time runs out). */
export async function readDlq(
  infra: Infra,
  topic: string,
  count: number,
  filter: (m: DlqMessage) => boolean = () => true,
  timeoutMs = 20_000,
): Promise<DlqMessage[]> {
  const consumer = infra.kafka.consumer({ groupId: `dlq-reader-${newUlid()}` });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: `${topic}.dlq`, fromBeginning: true });
    const seen: DlqMessage[] = [];
    await consumer.run({
      eachMessage: async ({ message }) => {
        const h = (n: string) => String(message.headers?.[n] ?? '');
        const m = {
          reason: h('x-dlq-reason'),
          processor: h('x-dlq-processor'),
          offset: h('x-dlq-original-offset'),
          key: message.key?.toString() ?? null,
          value: message.value,
        };
        if (filter(m)) seen.push(m);
      },
    });
    const deadline = Date.now() + timeoutMs;
    while (seen.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    return seen;
  } finally {
    await consumer.disconnect();
  }
}

/** Poll `fn` until it returns a value other than undefined. */
export async function until<T>(fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}
