// Topic configuration: every topic of the registry (schemas/topics.ts), created on a fresh broker by the
// functions the services call, has the registry's partition count, cleanup.policy and retention.ms —
// as the broker reports them through kafkajs' admin (fetchTopicMetadata, describeConfigs).
import { ConfigResourceTypes, type Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dlqTopic, TOPICS, type TopicKey } from '../../schemas/topics.ts';
import { ensureTopics } from '../../services/beacon/topics.ts';
import { createKafka } from '../../services/common/kafka.ts';
import { createLogger } from '../../services/common/logger.ts';
import { startSchemaRegistry } from '../../services/schema-registry/index.ts';
import { ensureConfigTopic } from '../../services/store-config/topic.ts';
import { ensureStreamTopics } from '../../streams/runtime/topics.ts';
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
    expect(catalog.sort()).toEqual(['collections', 'content', 'inventory', 'pricing', 'products']);
    for (const k of catalog) expect(TOPICS[k], k).toMatchObject({ cleanupPolicy: 'compact', retentionMs: -1 });
    expect(TOPICS.schemas).toMatchObject({ name: '_schemas', cleanupPolicy: 'compact', partitions: 1 });
    // every physical name is distinct
    expect(new Set(KEYS.map((k) => TOPICS[k].name)).size).toBe(KEYS.length);
  });

  it('ensureTopics creates every registry topic with its partitions, cleanup.policy and retention.ms, and leaves existing ones alone', async () => {
    const name = (k: TopicKey) => `all.${TOPICS[k].name}`;
    const wanted = KEYS.map((key) => ({ key, name: name(key) }));
    await ensureTopics(kafka, wanted, logger);
    // a second call (another process starting) is a no-op, not an error
    await ensureTopics(kafka, wanted, logger);
    const got = await describeTopics(
      kafka,
      wanted.map((w) => w.name),
    );
    for (const key of KEYS) expectRegistryConfig(got.get(name(key)), key);
    expect(got.get(name('events'))?.partitions).toHaveLength(6);
    expect(got.get(name('storeConfig'))?.config.get('cleanup.policy')).toBe('compact');
    for (const k of ['products', 'collections', 'content', 'inventory', 'pricing'] as const) {
      expect(got.get(name(k))?.config.get('cleanup.policy'), k).toBe('compact');
    }
  });

  it("each service's own creation path gives the registry configuration", async () => {
    const name = (k: TopicKey) => `own.${TOPICS[k].name}`;
    // intake (services/beacon/module.ts) and read API (services/storefront/module.ts)
    await ensureTopics(
      kafka,
      (['events', 'rejected', 'requests'] as const).map((key) => ({ key, name: name(key) })),
      logger,
    );
    // catalog writer and processors (streams/runtime/topics.ts), with their dead-letter topics
    const streamKeys = ['orders', 'products', 'collections', 'content', 'inventory', 'pricing'] as const;
    await ensureStreamTopics(
      kafka,
      streamKeys.map((key) => ({ key, name: name(key) })),
      logger,
    );
    // store configuration (services/store-config/topic.ts)
    await ensureConfigTopic(kafka, name('storeConfig'), logger);
    // the schema registry's own state topic (services/schema-registry/log.ts)
    const registry = await startSchemaRegistry({ kafka, topic: name('schemas'), port: 0, logger });
    await registry.close();

    const got = await describeTopics(kafka, KEYS.map(name));
    for (const key of KEYS) expectRegistryConfig(got.get(name(key)), key);
    const dlqs = await describeTopics(
      kafka,
      streamKeys.map((k) => dlqTopic(name(k))),
    );
    for (const [topic, d] of dlqs) {
      expect(d.partitions, topic).toEqual([0]);
      expect(d.config.get('cleanup.policy'), topic).toBe('delete');
    }
  });
});
