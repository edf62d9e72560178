// Writes bulk-import lines (`{ type, ...platform object }`, schemas/catalog.ts IMPORT_TYPES) the way the
// catalog bulk import does (services/catalog/import.ts): `recordsForImport` normalizes each line with the
// catalog's own normalizers, and the catalog's CatalogWriter guards versions, encodes (Avro through the
// registry) and produces with the idempotent producer (acks=all). `write` resolves only after Kafka
// acknowledged every record, so the loader's progress marks never run ahead of the log. Records are
// keyed and compacted: writing the same demo store twice converges to the same state.
import type { Redis } from 'ioredis';
import type { Kafka } from '../../common/kafka/index.ts';
import { createValueCodec } from '../../common/kafka/codec.ts';
import { recordsForImport } from '../../catalog/importer.ts';
import { CatalogWriter, type OutRecord, type WriterTopic } from '../../catalog/writer.ts';
import type { Config } from '../../common/config.ts';
import type { Logger } from '../../common/logger.ts';

export type ImportLine = {
  type:
    | 'product'
    | 'collection'
    | 'article'
    | 'page'
    | 'inventory_level'
    | 'price'
    | 'b2b_catalog'
    | 'order'
    | 'metaobject';
} & Record<string, unknown>;

export interface CatalogSinkOptions {
  kafka: Kafka;
  redis: Redis;
  config: Config;
  logger: Logger;
}

export class ImportLineError extends Error {
  readonly issues: { path: string; message: string }[];
  constructor(type: string, issues: { path: string; message: string }[]) {
    super(`${type}: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
    this.name = 'ImportLineError';
    this.issues = issues;
  }
}

export class TopicCatalogSink {
  private readonly writer: CatalogWriter;
  private started?: Promise<void>;
  /** records acknowledged so far, by topic */
  readonly counts: Record<WriterTopic, number> = {
    products: 0,
    collections: 0,
    content: 0,
    inventory: 0,
    pricing: 0,
    metaobjects: 0,
    orders: 0,
  };

  constructor(opts: CatalogSinkOptions) {
    this.writer = new CatalogWriter({
      kafka: opts.kafka,
      redis: opts.redis,
      codec: createValueCodec({ registryUrl: opts.config.schemaRegistryUrl }),
      config: opts.config,
      logger: opts.logger,
    });
  }

  /** Normalize and produce a batch of import lines for one store; resolves once Kafka acknowledged all. */
  async write(storeId: string, lines: readonly ImportLine[], now = new Date().toISOString()): Promise<void> {
    this.started ??= this.writer.start();
    await this.started;
    const records: OutRecord[] = [];
    for (const line of lines) {
      const r = recordsForImport(storeId, line, now);
      if (!r.ok) throw new ImportLineError(line.type, r.issues);
      records.push(...r.records);
    }
    const result = await this.writer.write(records);
    const stale = new Set(result.stale);
    for (const r of records) if (!stale.has(r)) this.counts[r.topic]++;
  }

  async close(): Promise<void> {
    await this.started?.catch(() => undefined);
    await this.writer.close();
  }
}
