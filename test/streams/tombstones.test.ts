// Tombstones (messages without a value) through the stream-processing runtime, against the real broker,
// registry and redis-server and a private chDB database: a processor with `parseTombstone` (the catalog
// projections) receives them as deletes, a processor without it dead-letters them without blocking the
// partition, a tombstone whose key the processor refuses is dead-lettered with the reason, and a
// tombstone is never dropped as a duplicate of its key's upsert.
import type { Redis } from 'ioredis';
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { catalogKey } from '../../schemas/catalog.ts';
import { catalogProductsProcessor } from '../../streams/catalog/index.ts';
import { type Config, loadConfig } from '../../services/common/config.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { createRedis } from '../../services/common/redis.ts';
import { selectProcessors } from '../../streams/registry.ts';
import { ProcessorRunner } from '../../streams/runtime/runtime.ts';
import type { Processor } from '../../streams/runtime/types.ts';
import { type Streams, startStreams } from '../../streams/service.ts';
import {
  catalogTopic,
  produceCatalog,
  productRecord,
  readDlq,
  registerCatalogSchemas,
  until,
} from '../catalog/streams.ts';
import { privateDb } from '../helpers/chdb.ts';
import { type Infra, startInfra, waitCaughtUp } from './helpers.ts';

describe('tombstones through the runtime', () => {
  let infra: Infra;
  let db: Db;
  let redis: Redis;
  let streams: Streams;
  let config: Config;
  const logger = createLogger('tombstones-test', 'warn');

  beforeAll(async () => {
    infra = await startInfra();
    await registerCatalogSchemas(infra);
    db = await privateDb(`tombstones_${newUlid().toLowerCase()}`);
    await migrate(db);
    config = loadConfig({
      KAFKA_BROKERS: infra.brokers.join(','),
      REDIS_URL: infra.redisUrl,
      SCHEMA_REGISTRY_URL: infra.registryUrl,
      KAFKA_TOPIC_PREFIX: infra.prefix,
      DATA_DIR: infra.dir,
      LOG_LEVEL: 'warn',
      STREAMS_SESSION_TIMEOUT_MS: '6000',
    });
    redis = createRedis(infra.redisUrl);
    // the streams service creates the catalog topic (compacted) and its DLQ itself
    streams = await startStreams({
      config,
      db,
      redis,
      kafka: createKafka(infra.brokers, 'tombstones-test', logger),
      logger,
      processors: selectProcessors('catalog_products,rejected'),
    });
  });
  afterAll(async () => {
    await streams?.stop();
    redis?.disconnect();
    await db?.close();
    await infra?.stop();
  });

  const current = async (store: string) =>
    (
      await db.query<{ id: string; title: string }>(
        'SELECT toString(product_id) AS id, title FROM catalog_products_current WHERE store_id = {s:String} ORDER BY product_id',
        { s: store },
      )
    ).map((r) => [r.id, r.title]);

  it('the streams service creates the catalog topic with its compaction policy and a DLQ', async () => {
    const admin = infra.kafka.admin();
    await admin.connect();
    try {
      const topic = catalogTopic(infra, 'products');
      const names = await admin.listTopics();
      expect(names).toEqual(expect.arrayContaining([topic, `${topic}.dlq`]));
      const described = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: 2, name: topic, configNames: ['cleanup.policy'] }],
      });
      expect(described.resources[0].configEntries.find((e) => e.configName === 'cleanup.policy')?.configValue).toBe(
        'compact',
      );
    } finally {
      await admin.disconnect();
    }
    // the live group keeps the name the catalog module's runners used (no reprocessing on upgrade)
    expect(streams.runners.get('catalog_products')?.groupId).toBe('streams.catalog_products');
  });

  it('hands a tombstone to parseTombstone (a delete of its key), and dead-letters tombstones it refuses', async () => {
    const store = `tomb_${newUlid()}`;
    const key = (id: string) => catalogKey({ topic: 'products', store_id: store, product_id: id });
    await produceCatalog(infra, 'products', [
      { key: key('1'), value: productRecord(store, { id: 1, title: 'One', updated_at: '2024-03-01T00:00:00Z' }) },
      { key: key('2'), value: productRecord(store, { id: 2, title: 'Two', updated_at: '2024-03-01T00:00:00Z' }) },
    ]);
    await until(async () => ((await current(store)).length === 2 ? true : undefined));

    const deletedAt = Date.parse('2024-04-01T00:00:00Z');
    await produceCatalog(infra, 'products', [
      { key: key('1'), value: null, timestamp: deletedAt },
      { key: `${store}:not-a-product-id`, value: null },
      // the partition keeps flowing behind the refused tombstones
      { key: key('3'), value: productRecord(store, { id: 3, title: 'Three', updated_at: '2024-03-01T00:00:00Z' }) },
    ]);
    await until(async () => ((await current(store)).some(([id]) => id === '3') ? true : undefined));
    expect(await current(store)).toEqual([
      ['2', 'Two'],
      ['3', 'Three'],
    ]);
    // the delete is a row of its own, versioned by the tombstone's record timestamp
    const rows = await db.query<{ is_deleted: number; updated_at: string; v: string }>(
      'SELECT is_deleted, toString(updated_at) AS updated_at, toString(bitShiftRight(_version, 64)) AS v FROM catalog_products WHERE store_id = {s:String} AND product_id = 1 ORDER BY _version',
      { s: store },
    );
    expect(rows).toEqual([
      { is_deleted: 0, updated_at: '2024-03-01 00:00:00.000', v: String(Date.parse('2024-03-01T00:00:00Z')) },
      { is_deleted: 1, updated_at: '2024-04-01 00:00:00.000', v: String(deletedAt) },
    ]);

    const topic = catalogTopic(infra, 'products');
    const dlq = await readDlq(infra, topic, 1, (m) => m.key?.startsWith(store) === true);
    expect(dlq.map((m) => [m.key, m.reason, m.processor, m.value])).toEqual([
      [
        `${store}:not-a-product-id`,
        `invalid: tombstone: unrecognised products key "${store}:not-a-product-id"`,
        'catalog_products',
        null,
      ],
    ]);
    // a compacted topic refuses records without a key (the broker answers INVALID_RECORD), so a keyless
    // tombstone can only come from a misconfigured topic: refused too
    expect(catalogProductsProcessor.parseTombstone(null)).toEqual({
      ok: false,
      reason: 'a tombstone without a record key',
    });
  });

  it('dead-letters a tombstone for a processor without parseTombstone, and keeps the partition flowing', async () => {
    const store = `tomb_rej_${newUlid()}`;
    const topic = infra.topic('rejected');
    await infra.producer.send({
      topic,
      acks: -1,
      messages: [
        { key: store, value: null },
        {
          key: store,
          value: infra.codec.encode(topic, {
            store_id: store,
            received_at: new Date().toISOString(),
            code: 'missing_field',
            reason: 'session_id is required',
            path: 'session_id',
            event_type: 'product_view',
            raw_json: '{}',
          }),
        },
      ],
    });
    await until(async () => {
      const r = await db.query<{ n: string }>(
        'SELECT count() AS n FROM rejected_events_raw WHERE store_id = {s:String}',
        { s: store },
      );
      return Number(r[0].n) === 1 ? true : undefined;
    });
    const dlq = await readDlq(infra, topic, 1, (m) => m.key === store);
    expect(dlq.map((m) => [m.reason, m.processor, m.value])).toEqual([
      ['empty: message has no value', 'rejected', null],
    ]);
  });

  it('never drops a tombstone as a duplicate of its key’s upsert (dedupKey is not asked for tombstones)', async () => {
    const store = `tomb_dedup_${newUlid()}`;
    type V = { id: string; deleted: boolean; title: string };
    const seen: { offset: bigint; value: V; tombstone: boolean }[] = [];
    // a processor that deduplicates by record key, as an upsert-only one would: a repeat of an upsert is
    // a duplicate, the delete of the same key is not
    const probe: Processor<V> = {
      name: `tombstone_probe_${newUlid().toLowerCase()}`,
      topic: 'products',
      tables: { written: [], views: [], compare: {} },
      parse(value) {
        const v = value as { store_id: string; product_id: string; title: string };
        return { ok: true, value: { id: `${v.store_id}:${v.product_id}`, deleted: false, title: v.title } };
      },
      parseTombstone(key) {
        return key
          ? { ok: true, value: { id: key.toString(), deleted: true, title: '' } }
          : { ok: false, reason: 'no key' };
      },
      dedupKey: (v) => v.id,
      async process(batch) {
        for (const d of batch)
          if (d.value.id.startsWith(`${store}:`))
            seen.push({ offset: d.position.offset, value: d.value, tombstone: d.tombstone === true });
        return { writes: [] };
      },
    };
    const key = catalogKey({ topic: 'products', store_id: store, product_id: '5' });
    const record = productRecord(store, { id: 5, title: 'Five', updated_at: '2024-03-01T00:00:00Z' });
    await produceCatalog(infra, 'products', [
      { key, value: record },
      { key, value: null, timestamp: Date.parse('2024-04-01T00:00:00Z') },
      { key, value: record }, // a redelivery of the upsert: a duplicate by id
    ]);
    const runner = new ProcessorRunner(probe, streams.deps, { ...streams.runOptions(), groupId: `test.${probe.name}` });
    await runner.start();
    try {
      await waitCaughtUp(
        infra.kafka,
        [{ group: `test.${probe.name}`, topic: catalogTopic(infra, 'products') }],
        30_000,
      );
    } finally {
      await runner.stop();
    }
    expect(seen.map((s) => [s.value.deleted, s.tombstone, s.value.title])).toEqual([
      [false, false, 'Five'],
      [true, true, ''],
    ]);
    expect(seen[1].offset).toBe(seen[0].offset + 1n);
  });
});
