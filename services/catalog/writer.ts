// The one produce path of the catalog: webhooks and the bulk import hand normalized records to a
// CatalogWriter, which
//   1. drops records older than what was already written for their key (version guard, below),
//   2. encodes them (Avro, Confluent framing, schemas registered under `<topic>-value`),
//   3. produces them with the idempotent producer (acks=all) and resolves only once Kafka acknowledged.
//
// Version guard. The catalog topics are compacted: Kafka keeps the *last written* record per key, not the
// newest by platform time. If a late, older update were appended after a newer one, compaction would
// keep the older one and a replay would rebuild stale state. So the writer remembers, per key, the
// newest version (updated_at ms) it produced (in Redis: version-guard.ts) and skips older records.
// A tombstone gets the record timestamp max(now, newest + 1), so the projection's version of a delete is
// always past every update written before it (streams/catalog/ uses the tombstone's record timestamp).
// Records of one key are written one at a time in this process (a per-key queue), so check-and-produce
// cannot interleave; two processes writing the same key at the same moment are not serialized (the
// projection still keeps the newest; see docs/catalog.md).
import type { Redis } from 'ioredis';
import { orderAvro } from '../../schemas/avro/index.ts';
import {
  CATALOG_AVRO,
  type CatalogCollection,
  type CatalogContent,
  type CatalogInventoryLevel,
  type CatalogMetaobject,
  type CatalogPricing,
  type CatalogProduct,
  type CatalogTopicKey,
  catalogKey,
} from '../../schemas/catalog.ts';
import type { ValueCodec } from '../common/kafka/codec.ts';
import type { Order } from '../../schemas/orders.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { type Config, topicName } from '../common/config.ts';
import {
  chunksByBytes,
  createIdempotentProducer,
  ensureTopics,
  type Kafka,
  MAX_REQUEST_BYTES,
  type Message,
  type Producer,
  type ProducedRecord,
  topicConfigs,
} from '../common/kafka/index.ts';
import { VersionGuard } from './version-guard.ts';
import type { Logger } from '../common/logger.ts';
import { counter, histogram } from '../common/metrics.ts';

export type WriterTopic = CatalogTopicKey | 'orders';
export const WRITER_TOPICS: WriterTopic[] = [
  'products',
  'collections',
  'content',
  'inventory',
  'pricing',
  'metaobjects',
  'orders',
];

/** One record to produce; `value: null` is a tombstone. */
export interface OutRecord {
  topic: WriterTopic;
  storeId: string;
  key: string;
  value: object | null;
  /** platform version (updated_at ms) of a value; ignored for tombstones */
  versionMs: number;
}

export interface WriteResult {
  /** records acknowledged by Kafka */
  produced: number;
  /** records skipped because a newer version of their key was already written */
  stale: OutRecord[];
}

export class ProduceTimeoutError extends Error {
  constructor(ms: number) {
    super(`Kafka did not acknowledge within ${ms} ms`);
    this.name = 'ProduceTimeoutError';
  }
}

const recordsTotal = counter(
  'catalog_records_total',
  'Catalog records handed to the writer, by topic and outcome (produced, stale)',
  ['topic', 'outcome'],
);
const produceSeconds = histogram(
  'catalog_produce_seconds',
  'Time from handing records to the writer to Kafka acknowledging them',
);

export interface CatalogWriterOptions {
  kafka: Kafka;
  redis: Redis;
  codec: ValueCodec;
  config: Pick<Config, 'KAFKA_TOPIC_PREFIX' | 'CATALOG_PRODUCE_TIMEOUT_MS'>;
  logger: Logger;
  /** create missing topics (default true) */
  ensureTopics?: boolean;
}

export class CatalogWriter {
  private readonly opts: CatalogWriterOptions;
  private readonly topics: Record<WriterTopic, string>;
  private producer: Producer | undefined;
  private readonly tails = new Map<string, Promise<void>>();
  private readonly versions: VersionGuard;

  constructor(opts: CatalogWriterOptions) {
    this.opts = opts;
    this.versions = new VersionGuard(opts.redis);
    const name = (k: WriterTopic) => topicName(opts.config, TOPICS[k].name);
    this.topics = {
      products: name('products'),
      collections: name('collections'),
      content: name('content'),
      inventory: name('inventory'),
      pricing: name('pricing'),
      metaobjects: name('metaobjects'),
      orders: name('orders'),
    };
  }

  /** physical topic names */
  topicNames(): Record<WriterTopic, string> {
    return { ...this.topics };
  }

  /** create the topics (compacted catalog topics, the orders topic), register the value schemas, connect */
  async start(): Promise<void> {
    const log = this.opts.logger;
    if (this.opts.ensureTopics !== false) {
      // with the `.dlq` topics of the processors that read them
      await ensureTopics(this.opts.kafka, topicConfigs(this.opts.config, WRITER_TOPICS, WRITER_TOPICS), log);
    }
    for (const key of WRITER_TOPICS) {
      await this.opts.codec.register(this.topics[key], key === 'orders' ? orderAvro : CATALOG_AVRO[key]);
    }
    const producer = createIdempotentProducer(this.opts.kafka, {
      retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 2_000 },
    });
    await producer.connect();
    this.producer = producer;
  }

  async close(): Promise<void> {
    const p = this.producer;
    this.producer = undefined;
    await p?.disconnect().catch(() => {});
  }

  /** Guard, encode and produce `records` in order; resolves once Kafka acknowledged every one kept. */
  async write(records: OutRecord[]): Promise<WriteResult> {
    if (records.length === 0) return { produced: 0, stale: [] };
    const producer = this.producer;
    if (!producer) throw new Error('catalog writer not started');
    const t0 = performance.now();
    // encode first: a value the schema rejects is a bug in normalization, and must not consume a version
    const encoded = records.map((r) =>
      r.value === null ? null : this.opts.codec.encode(this.topics[r.topic], r.value),
    );
    const lockKeys = [...new Set(records.map((r) => `${r.topic}\u0000${r.key}`))];
    return this.serialized(lockKeys, async () => {
      const versions = await this.guard(records);
      const stale: OutRecord[] = [];
      const kept: ProducedRecord[] = [];
      records.forEach((r, i) => {
        const v = versions[i];
        if (v < 0) {
          stale.push(r);
          return;
        }
        kept.push({
          topic: this.topics[r.topic],
          key: r.key,
          value: encoded[i],
          ...(r.value === null ? { timestamp: String(v) } : {}),
        });
      });
      const produced = records.length - stale.length;
      const timeoutMs = this.opts.config.CATALOG_PRODUCE_TIMEOUT_MS;
      // in requests a broker accepts (a record batch over max.message.bytes is refused whole), in order
      for (const chunk of chunksByBytes(kept, MAX_REQUEST_BYTES)) {
        const byTopic = new Map<string, Message[]>();
        for (const m of chunk) {
          const list = byTopic.get(m.topic) ?? [];
          list.push({ key: m.key, value: m.value, ...(m.timestamp ? { timestamp: m.timestamp } : {}) } as Message);
          byTopic.set(m.topic, list);
        }
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            producer.sendBatch({
              acks: -1,
              timeout: timeoutMs,
              topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
            }),
            new Promise((_, reject) => {
              timer = setTimeout(() => reject(new ProduceTimeoutError(timeoutMs)), timeoutMs);
            }),
          ]);
        } finally {
          clearTimeout(timer);
        }
      }
      for (const r of records) recordsTotal.inc({ topic: r.topic, outcome: stale.includes(r) ? 'stale' : 'produced' });
      produceSeconds.observe((performance.now() - t0) / 1000);
      return { produced, stale };
    });
  }

  private guard(records: OutRecord[]): Promise<number[]> {
    return this.versions.check(
      records.map((r) => ({
        topic: r.topic,
        storeId: r.storeId,
        key: r.key,
        versionMs: r.versionMs,
        tombstone: r.value === null,
      })),
    );
  }

  /** Run `fn` once every earlier call holding one of `keys` finished (per-key FIFO). */
  private async serialized<T>(keys: string[], fn: () => Promise<T>): Promise<T> {
    const prev = keys.map((k) => this.tails.get(k)).filter((p): p is Promise<void> => p !== undefined);
    let release!: () => void;
    const mine = new Promise<void>((r) => {
      release = r;
    });
    for (const k of keys) this.tails.set(k, mine);
    await Promise.all(prev);
    try {
      return await fn();
    } finally {
      release();
      for (const k of keys) if (this.tails.get(k) === mine) this.tails.delete(k);
    }
  }
}

// ------------------------------------------------------------------------------------------------
// records → OutRecord

const ms = (iso: string) => Date.parse(iso);

export const out = {
  product(p: CatalogProduct): OutRecord {
    return {
      topic: 'products',
      storeId: p.store_id,
      key: catalogKey({ topic: 'products', store_id: p.store_id, product_id: p.product_id }),
      value: p,
      versionMs: ms(p.updated_at),
    };
  },
  productDeleted(storeId: string, productId: string): OutRecord {
    return {
      topic: 'products',
      storeId,
      key: catalogKey({ topic: 'products', store_id: storeId, product_id: productId }),
      value: null,
      versionMs: 0,
    };
  },
  collection(c: CatalogCollection): OutRecord {
    return {
      topic: 'collections',
      storeId: c.store_id,
      key: catalogKey({
        topic: 'collections',
        store_id: c.store_id,
        collection_id: c.collection_id,
        members: c.record_type === 'members',
      }),
      value: c,
      versionMs: ms(c.updated_at),
    };
  },
  /** a deleted collection: tombstones for its metadata and its membership */
  collectionDeleted(storeId: string, collectionId: string): OutRecord[] {
    return [false, true].map((members) => ({
      topic: 'collections' as const,
      storeId,
      key: catalogKey({ topic: 'collections', store_id: storeId, collection_id: collectionId, members }),
      value: null,
      versionMs: 0,
    }));
  },
  content(c: CatalogContent): OutRecord {
    return {
      topic: 'content',
      storeId: c.store_id,
      key: catalogKey({
        topic: 'content',
        store_id: c.store_id,
        content_type: c.content_type,
        content_id: c.content_id,
      }),
      value: c,
      versionMs: ms(c.updated_at),
    };
  },
  contentDeleted(storeId: string, contentType: 'article' | 'page', contentId: string): OutRecord {
    return {
      topic: 'content',
      storeId,
      key: catalogKey({ topic: 'content', store_id: storeId, content_type: contentType, content_id: contentId }),
      value: null,
      versionMs: 0,
    };
  },
  inventory(l: CatalogInventoryLevel): OutRecord {
    return {
      topic: 'inventory',
      storeId: l.store_id,
      key: catalogKey({
        topic: 'inventory',
        store_id: l.store_id,
        inventory_item_id: l.inventory_item_id,
        variant_id: l.variant_id,
        location_id: l.location_id,
      }),
      value: l,
      versionMs: ms(l.updated_at),
    };
  },
  inventoryDeleted(
    storeId: string,
    ref: { inventory_item_id: string | null; variant_id: string | null; location_id: string },
  ): OutRecord {
    return {
      topic: 'inventory',
      storeId,
      key: catalogKey({ topic: 'inventory', store_id: storeId, ...ref }),
      value: null,
      versionMs: 0,
    };
  },
  pricing(p: CatalogPricing): OutRecord {
    const key =
      p.record_type === 'price' && p.price
        ? catalogKey({
            topic: 'price',
            store_id: p.store_id,
            price_list_id: p.price.price_list_id,
            variant_id: p.price.variant_id,
          })
        : catalogKey({ topic: 'b2b_catalog', store_id: p.store_id, catalog_id: p.catalog?.catalog_id ?? '' });
    return { topic: 'pricing', storeId: p.store_id, key, value: p, versionMs: ms(p.updated_at) };
  },
  priceDeleted(storeId: string, priceListId: string, variantId: string): OutRecord {
    return {
      topic: 'pricing',
      storeId,
      key: catalogKey({ topic: 'price', store_id: storeId, price_list_id: priceListId, variant_id: variantId }),
      value: null,
      versionMs: 0,
    };
  },
  b2bCatalogDeleted(storeId: string, catalogId: string): OutRecord {
    return {
      topic: 'pricing',
      storeId,
      key: catalogKey({ topic: 'b2b_catalog', store_id: storeId, catalog_id: catalogId }),
      value: null,
      versionMs: 0,
    };
  },
  metaobject(m: CatalogMetaobject): OutRecord {
    return {
      topic: 'metaobjects',
      storeId: m.store_id,
      key: catalogKey({ topic: 'metaobjects', store_id: m.store_id, metaobject_id: m.metaobject_id }),
      value: m,
      versionMs: ms(m.updated_at),
    };
  },
  metaobjectDeleted(storeId: string, metaobjectId: string): OutRecord {
    return {
      topic: 'metaobjects',
      storeId,
      key: catalogKey({ topic: 'metaobjects', store_id: storeId, metaobject_id: metaobjectId }),
      value: null,
      versionMs: 0,
    };
  },
  order(o: Order): OutRecord {
    // the key the orders topic documents (store_id + order_id); orders are never tombstoned
    return {
      topic: 'orders',
      storeId: o.store_id,
      key: `${o.store_id}:${o.order_id}`,
      value: o,
      versionMs: ms(o.updated_at ?? o.created_at),
    };
  },
};
