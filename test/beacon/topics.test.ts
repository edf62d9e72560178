// Topic configuration: every topic of the registry (schemas/topics.ts), created on a fresh broker by the one
// ensureTopics (services/common/kafka) — as the app's composer runs it at start, and through each
// standalone creation path — has the registry's partition count, cleanup.policy and retention.ms, as the
// broker reports them through kafkajs' admin (fetchTopicMetadata, describeConfigs).
import { ConfigResourceTypes, type Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dlqTopic, TOPICS, type TopicKey } from '../../schemas/topics.ts';
import { appTopics } from '../../services/app/topics.ts';
import { createKafka, DLQ_RETENTION_MS, ensureTopics, topicConfigs } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { startSchemaRegistry } from '../../services/schema-registry/index.ts';
import { ConfigWriter } from '../../services/store-config/writer.ts';
import { PROCESSORS } from '../../streams/registry.ts';
import { startTestBroker, type TestBroker } from './helpers.ts';

const KEYS = Object.keys(TOPICS) as TopicKey[];
const logger = createLogger('topics-test', 'silent');

interface Described {
  partitions: number[];
  config: Map<string, string>;
}

async function describeTopics(kafka: Kafka, names: string[]): Promise<Map<string, Described>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const meta = await admin.fetchTopicMetadata({ topics: names });
    const configs = await admin.describeConfigs({
      includeSynonyms: false,
      resources: names.map((name) => ({
        type: ConfigResourceTypes.TOPIC,
        name,
        configNames: ['cleanup.policy', 'retention.ms'],
      })),
    });
    const out = new Map<string, Described>();
    for (const name of names) {
      const t = meta.topics.find((m) => m.name === name);
      const c = configs.resources.find((r) => r.resourceName === name);
      out.set(name, {
        partitions: (t?.partitions ?? []).map((p) => p.partitionId).sort((a, b) => a - b),
        config: new Map((c?.configEntries ?? []).map((e) => [e.configName, e.configValue])),
      });
    }
    return out;
  } finally {
    await admin.disconnect();
  }
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

function expectRegistryConfig(got: Described | undefined, key: TopicKey) {
  const spec = TOPICS[key];
  expect(got, key).toBeDefined();
  expect(got?.partitions, `${key} partitions`).toEqual(range(spec.partitions));
  expect(got?.config.get('cleanup.policy'), `${key} cleanup.policy`).toBe(spec.cleanupPolicy);
  expect(got?.config.get('retention.ms'), `${key} retention.ms`).toBe(String(spec.retentionMs));
}

describe('topic registry on a broker', () => {
  let broker: TestBroker;
  let kafka: Kafka;
  beforeAll(async () => {
    broker = await startTestBroker();
    kafka = createKafka(broker.brokers, `topics-test-${process.pid}`, logger);
  });
  afterAll(async () => {
    await broker?.stop();
  });

  it('documents the keys and policies the platform relies on', () => {
    // one session's events stay in order in one partition: the key carries the session
    expect(TOPICS.events.key).toMatch(/store_id \+ session_id/);
    expect(TOPICS.events).toMatchObject({ name: 'storefront.events.v1', partitions: 6, cleanupPolicy: 'delete' });
    // latest-state topics are compacted and kept forever
    expect(TOPICS.storeConfig).toMatchObject({ name: 'stores.config.v1', cleanupPolicy: 'compact', retentionMs: -1 });
    const catalog = KEYS.filter((k) => TOPICS[k].name.startsWith('catalog.'));
    expect(catalog.sort()).toEqual(['collections', 'content', 'inventory', 'metaobjects', 'pricing', 'products']);
    for (const k of catalog) expect(TOPICS[k], k).toMatchObject({ cleanupPolicy: 'compact', retentionMs: -1 });
    expect(TOPICS.schemas).toMatchObject({ name: '_schemas', cleanupPolicy: 'compact', partitions: 1 });
    // every physical name is distinct
    expect(new Set(KEYS.map((k) => TOPICS[k].name)).size).toBe(KEYS.length);
  });

  it('ensureTopics creates every registry topic with its partitions, cleanup.policy and retention.ms, and leaves existing ones alone', async () => {
    const config = { KAFKA_TOPIC_PREFIX: 'all.' };
    const name = (k: TopicKey) => `all.${TOPICS[k].name}`;
    await ensureTopics(kafka, topicConfigs(config), logger);
    // a second call (another process starting) is a no-op, not an error
    await ensureTopics(kafka, topicConfigs(config), logger);
    const got = await describeTopics(kafka, KEYS.map(name));
    for (const key of KEYS) expectRegistryConfig(got.get(name(key)), key);
    expect(got.get(name('events'))?.partitions).toHaveLength(6);
    expect(got.get(name('storeConfig'))?.config.get('cleanup.policy')).toBe('compact');
    for (const k of ['products', 'collections', 'content', 'inventory', 'pricing', 'metaobjects'] as const) {
      expect(got.get(name(k))?.config.get('cleanup.policy'), k).toBe('compact');
    }
  });

  it("the composer's topics: every registry topic, and a dead-letter topic for each topic a processor reads", async () => {
    const config = { KAFKA_TOPIC_PREFIX: 'app.' };
    const name = (k: TopicKey) => `app.${TOPICS[k].name}`;
    const wanted = appTopics(config);
    const inputs = [...new Set(Object.values(PROCESSORS).map((p) => p.topic as TopicKey))];
    expect(wanted.map((t) => t.name).sort()).toEqual(
      [...KEYS.map(name), ...inputs.map((k) => dlqTopic(name(k)))].sort(),
    );
    await ensureTopics(kafka, wanted, logger);
    const got = await describeTopics(kafka, KEYS.map(name));
    for (const key of KEYS) expectRegistryConfig(got.get(name(key)), key);
    const dlqs = await describeTopics(
      kafka,
      inputs.map((k) => dlqTopic(name(k))),
    );
    for (const [topic, d] of dlqs) {
      expect(d.partitions, topic).toEqual([0]);
      expect(d.config.get('cleanup.policy'), topic).toBe('delete');
      expect(d.config.get('retention.ms'), topic).toBe(String(DLQ_RETENTION_MS));
    }
  });

  it('the standalone creation paths (store-config writer, schema registry) give the registry configuration', async () => {
    const name = (k: TopicKey) => `own.${TOPICS[k].name}`;
    // the schema registry's own state topic (services/schema-registry/main.ts)
    const registry = await startSchemaRegistry({ kafka, topic: name('schemas'), port: 0, logger });
    // store configuration: the admin CLI's writer creates its topic on its first write
    const writer = new ConfigWriter({
      brokers: broker.brokers,
      registryUrl: registry.url,
      topicPrefix: 'own.',
      logger,
    });
    try {
      await writer.createStore({ name: 'topics test' });
    } finally {
      await writer.close();
      await registry.close();
    }

    const got = await describeTopics(kafka, [name('storeConfig'), name('schemas')]);
    expectRegistryConfig(got.get(name('storeConfig')), 'storeConfig');
    expectRegistryConfig(got.get(name('schemas')), 'schemas');
  });
});
