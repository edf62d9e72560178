// Catalog writes larger than a broker's record batch: collections with tens of thousands of members
// (a large store's "all products"), written in one call, reach the projections. A record batch over the
// topic's max.message.bytes (1 MiB) is refused whole, so the writer sends such a write in several
// requests, in order.
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../services/common/config.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { TopicCatalogSink } from '../../services/demo/generator/catalog-sink.ts';
import { sql, stack } from '../helpers/stack.ts';
import { closeTestStoreWriter, createTestStore } from '../helpers/stores.ts';

const log = createLogger('catalog-large', 'warn');
const s = stack();
const config = loadConfig({
  ...process.env,
  ...s.env,
  KAFKA_BROKERS: s.kafkaBrokers.join(','),
  REDIS_URL: s.redisUrl,
  SCHEMA_REGISTRY_URL: s.schemaRegistryUrl,
  CLICKHOUSE_URL: '',
});
const redis = createRedis(config.redisUrl, { connectionName: 'catalog-large' });
const sink = new TopicCatalogSink({
  kafka: createKafka(config.kafkaBrokers, 'catalog-large', log),
  redis,
  config,
  logger: log,
});

afterAll(async () => {
  await sink.close();
  redis.disconnect();
  await closeTestStoreWriter();
});

describe('catalog writes larger than a record batch', () => {
  it('writes five 90 000-member collections in one call, and every member reaches the projection', async () => {
    const { storeId } = await createTestStore({ name: 'large records' });
    const members = (offset: number) => Array.from({ length: 90_000 }, (_, i) => 9_100_000_000 + offset + i);
    await sink.write(
      storeId,
      [0, 1, 2, 3, 4].map((k) => ({
        type: 'collection' as const,
        id: 7_300 + k,
        handle: `big-${k}`,
        title: `Big ${k}`,
        product_ids: members(k * 90_000),
        updated_at: '2026-11-01T00:00:00Z',
      })),
    );
    await expect
      .poll(
        async () =>
          (
            await sql<{ n: string }>(
              `SELECT toString(sum(length(product_ids))) AS n FROM catalog_collection_members FINAL WHERE store_id = '${storeId}' AND is_deleted = 0`,
            )
          )[0]?.n,
        { timeout: 60_000, interval: 500 },
      )
      .toBe('450000');
  });
});
