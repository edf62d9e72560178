// kafkajs admin: createTopics / fetchTopicMetadata / describeConfigs / alterConfigs /
// createPartitions / deleteTopics, including the error cases.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestBroker, type TestBroker } from './helpers/broker.ts';
// after the helpers: the Kafka layer's swaps are installed before kafkajs loads
import { ConfigResourceTypes } from 'kafkajs';

let broker: TestBroker;
beforeAll(async () => {
  broker = await startTestBroker({ autoCreateTopics: false });
});
afterAll(async () => {
  await broker?.stop();
});

test('create, describe, alter, grow and delete topics', async () => {
  const admin = broker.kafka('admin-test').admin({ retry: { retries: 1, initialRetryTime: 50 } });
  await admin.connect();
  try {
    expect(
      await admin.createTopics({
        topics: [
          {
            topic: 'a1',
            numPartitions: 3,
            configEntries: [
              { name: 'cleanup.policy', value: 'compact' },
              { name: 'retention.ms', value: '3600000' },
            ],
          },
          { topic: 'a2' },
        ],
      }),
    ).toBe(true);
    // already exists: kafkajs reports false for TOPIC_ALREADY_EXISTS
    expect(await admin.createTopics({ topics: [{ topic: 'a1' }] })).toBe(false);
    // validateOnly creates nothing
    await admin.createTopics({
      validateOnly: true,
      waitForLeaders: false,
      topics: [{ topic: 'a3', numPartitions: 2 }],
    });
    expect(await admin.listTopics()).not.toContain('a3');

    await expect(admin.createTopics({ topics: [{ topic: 'bad', replicationFactor: 3 }] })).rejects.toMatchObject({
      errors: [expect.objectContaining({ type: 'INVALID_REPLICATION_FACTOR' })],
    });
    await expect(
      admin.createTopics({ topics: [{ topic: 'bad', configEntries: [{ name: 'retention.ms', value: 'soon' }] }] }),
    ).rejects.toThrow();
    await expect(admin.createTopics({ topics: [{ topic: 'bad name!' }] })).rejects.toThrow();

    const meta = await admin.fetchTopicMetadata({ topics: ['a1', 'a2'] });
    const a1 = meta.topics.find((t) => t.name === 'a1')!;
    expect(a1.partitions.map((p) => p.partitionId).sort()).toEqual([0, 1, 2]);
    expect(a1.partitions.every((p) => p.leader === 1 && p.replicas.join() === '1' && p.isr.join() === '1')).toBe(true);
    expect(meta.topics.find((t) => t.name === 'a2')!.partitions).toHaveLength(1);
    await expect(admin.fetchTopicMetadata({ topics: ['missing'] })).rejects.toThrow();

    const cluster = await admin.describeCluster();
    expect(cluster.brokers).toEqual([{ nodeId: 1, host: '127.0.0.1', port: broker.port }]);
    expect(cluster.controller).toBe(1);
    expect(cluster.clusterId).toBe(broker.clusterId);

    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [
        { type: ConfigResourceTypes.TOPIC, name: 'a1' },
        { type: ConfigResourceTypes.TOPIC, name: 'a2', configNames: ['cleanup.policy'] },
        { type: ConfigResourceTypes.BROKER, name: '1' },
      ],
    });
    const byName = (i: number) => new Map(described.resources[i].configEntries.map((c) => [c.configName, c]));
    const t1 = byName(0);
    expect(t1.get('cleanup.policy')?.configValue).toBe('compact');
    expect(t1.get('cleanup.policy')?.isDefault).toBe(false);
    expect(t1.get('retention.ms')?.configValue).toBe('3600000');
    expect(t1.get('segment.bytes')?.configValue).toBe('1073741824');
    expect(t1.get('segment.bytes')?.isDefault).toBe(true);
    expect([...byName(1).keys()]).toEqual(['cleanup.policy']);
    expect(byName(1).get('cleanup.policy')?.configValue).toBe('delete');
    expect(byName(2).get('num.partitions')?.configValue).toBe('1');

    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        { type: ConfigResourceTypes.TOPIC, name: 'a2', configEntries: [{ name: 'retention.ms', value: '1000' }] },
      ],
    });
    const altered = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: 'a2', configNames: ['retention.ms'] }],
    });
    expect(altered.resources[0].configEntries[0].configValue).toBe('1000');

    await admin.createPartitions({ topicPartitions: [{ topic: 'a2', count: 4 }] });
    expect((await admin.fetchTopicMetadata({ topics: ['a2'] })).topics[0].partitions).toHaveLength(4);
    await expect(admin.createPartitions({ topicPartitions: [{ topic: 'a2', count: 2 }] })).rejects.toThrow();

    const producer = broker.kafka().producer();
    await producer.connect();
    await producer.send({
      topic: 'a2',
      messages: [{ value: 'x' }, { value: 'y' }, { value: 'z' }].map((m) => ({ ...m, partition: 0 })),
    });
    await producer.disconnect();
    await admin.deleteTopicRecords({ topic: 'a2', partitions: [{ partition: 0, offset: '2' }] });
    const offsets = await admin.fetchTopicOffsets('a2');
    expect(offsets.find((o) => o.partition === 0)).toMatchObject({ low: '2', high: '3' });

    await admin.deleteTopics({ topics: ['a1', 'a2'] });
    const left = await admin.listTopics();
    expect(left).not.toContain('a1');
    expect(left).not.toContain('a2');
    await expect(admin.deleteTopics({ topics: ['a1'], timeout: 1000 })).rejects.toThrow();
  } finally {
    await admin.disconnect();
  }
});

test('auto-creation is off: producing to a missing topic fails, metadata says unknown', async () => {
  const producer = broker.kafka().producer({ retry: { retries: 1, initialRetryTime: 50 } });
  await producer.connect();
  await expect(producer.send({ topic: 'nope', messages: [{ value: 'x' }] })).rejects.toThrow();
  await producer.disconnect();
});
