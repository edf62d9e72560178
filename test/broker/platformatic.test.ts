// @platformatic/kafka (negotiates the highest versions we advertise, flexible ones included), against the
// embedded broker and Apache Kafka 4.4 (test/kafka/targets.ts).
import { Admin, Consumer, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { brokerTargets, type RunningBroker } from '../kafka/targets.ts';

describe.each(brokerTargets())('$name', (target) => {
  let broker: RunningBroker;
  beforeAll(async () => {
    broker = await target.start();
  });
  afterAll(async () => {
    await broker?.stop();
  });

  test('@platformatic/kafka admin, idempotent producer and group consumer', async () => {
    const bootstrapBrokers = broker.brokers;
    const admin = new Admin({ clientId: 'plt-admin', bootstrapBrokers });
    await admin.createTopics({ topics: ['plt'], partitions: 3, replicas: 1 });
    expect(await admin.listTopics()).toContain('plt');
    const meta = await admin.metadata({ topics: ['plt'] });
    expect(meta.topics.get('plt')?.partitionsCount).toBe(3);
    await admin.close();

    const producer = new Producer({
      clientId: 'plt-producer',
      bootstrapBrokers,
      serializers: stringSerializers,
      idempotent: true,
      acks: -1,
    });
    const N = 2000;
    const messages = Array.from({ length: N }, (_, i) => ({
      topic: 'plt',
      key: `k${i}`,
      value: `value-${i}`,
      headers: new Map([['n', `${i}`]]),
    }));
    for (let i = 0; i < N; i += 500) await producer.send({ messages: messages.slice(i, i + 500) });
    await producer.close();

    const consumer = new Consumer({
      groupId: 'plt-group',
      clientId: 'plt-consumer',
      bootstrapBrokers,
      deserializers: stringDeserializers,
    });
    const stream = await consumer.consume({
      autocommit: true,
      topics: ['plt'],
      mode: 'earliest',
      sessionTimeout: 10_000,
      heartbeatInterval: 500,
    });
    const seen = new Map<string, string>();
    for await (const m of stream) {
      seen.set(m.key, m.value);
      expect(m.headers.get('n')).toBe(m.key.slice(1));
      if (seen.size >= N) break;
    }
    await stream.close();
    await consumer.close();
    expect(seen.size).toBe(N);
    for (let i = 0; i < N; i++) expect(seen.get(`k${i}`)).toBe(`value-${i}`);
  });
});
