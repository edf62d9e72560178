// The stack's schema registry (served by the app from the `_schemas` topic): platform subjects are
// registered at start-up, Confluent clients work against it, and a value encoded with the platform
// codec travels through the stack's Kafka and decodes back unchanged.
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { newUlid } from '../../services/common/ids.ts';
import { describe, expect, it } from 'vitest';
import { VALUE_SCHEMAS } from '../../schemas/avro/index.ts';
import {
  createKafka,
  createValueCodec,
  platformTopics,
  registerPlatformSchemas,
} from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { type EnrichedEvent, enrichEvent, parseEvent } from '../../schemas/events.ts';
import { stack } from '../helpers/stack.ts';

const CT = 'application/vnd.schemaregistry.v1+json';

async function get(path: string): Promise<{ status: number; body: any }> {
  const r = await fetch(`${stack().schemaRegistryUrl}${path}`);
  return { status: r.status, body: await r.json() };
}

describe('the stack schema registry', () => {
  it('is announced, ready, and holds every platform value subject with the generated schema', async () => {
    const ready = (await (await fetch(`${stack().httpUrl}/readyz`)).json()) as {
      checks: Record<string, { ok: boolean }>;
    };
    expect(ready.checks.schemaRegistry).toMatchObject({ ok: true });
    const subjects = (await get('/subjects')).body as string[];
    const topics = platformTopics({ KAFKA_TOPIC_PREFIX: '' });
    for (const [key, topic] of Object.entries(topics)) {
      expect(subjects).toContain(`${topic}-value`);
      const latest = await get(`/subjects/${encodeURIComponent(`${topic}-value`)}/versions/latest`);
      expect(latest.status).toBe(200);
      expect(JSON.parse(latest.body.schema)).toEqual(VALUE_SCHEMAS[key as keyof typeof VALUE_SCHEMAS]);
    }
    const metrics = await (await fetch(`${stack().httpUrl}/metrics`)).text();
    expect(metrics).toMatch(/schema_registry_schemas\{topic="_schemas"\} [1-9]/);
    expect(metrics).toMatch(
      /schema_registry_requests_total\{method="POST",route="\/subjects\/:subject\/versions",status="200"\} [1-9]/,
    );
  });

  it('registering the platform schemas again is idempotent (same ids)', async () => {
    const codec = createValueCodec({ registryUrl: stack().schemaRegistryUrl });
    const ids = await registerPlatformSchemas(codec, { KAFKA_TOPIC_PREFIX: '' });
    const again = await registerPlatformSchemas(createValueCodec({ registryUrl: stack().schemaRegistryUrl }), {
      KAFKA_TOPIC_PREFIX: '',
    });
    expect(again).toEqual(ids);
    const latest = await get(`/subjects/${encodeURIComponent('storefront.events.v1-value')}/versions/latest`);
    expect(latest.body.id).toBe(ids.events);
  });

  it('registers, looks up and refuses incompatible schemas over plain HTTP', async () => {
    const subject = `stack-test-${newUlid()}-value`;
    const v1 = { type: 'record', name: 'Probe', fields: [{ name: 'a', type: 'string' }] };
    const reg = await fetch(`${stack().schemaRegistryUrl}/subjects/${subject}/versions`, {
      method: 'POST',
      headers: { 'content-type': CT },
      body: JSON.stringify({ schema: JSON.stringify(v1) }),
    });
    expect(reg.status).toBe(200);
    expect(reg.headers.get('content-type')).toContain(CT);
    const { id } = (await reg.json()) as { id: number };
    const lookup = await fetch(`${stack().schemaRegistryUrl}/subjects/${subject}`, {
      method: 'POST',
      headers: { 'content-type': CT },
      body: JSON.stringify({ schema: JSON.stringify(v1) }),
    });
    expect(await lookup.json()).toMatchObject({ subject, id, version: 1 });
    const bad = await fetch(`${stack().schemaRegistryUrl}/subjects/${subject}/versions`, {
      method: 'POST',
      headers: { 'content-type': CT },
      body: JSON.stringify({ schema: JSON.stringify({ ...v1, fields: [...v1.fields, { name: 'b', type: 'int' }] }) }),
    });
    expect(bad.status).toBe(409);
    expect(await bad.json()).toMatchObject({ error_code: 409 });
  });

  it('carries an enriched event through Kafka: platform codec in, Confluent client and platform codec out', async () => {
    const topic = `test.sr.${newUlid()}.events`;
    const codec = createValueCodec({ registryUrl: stack().schemaRegistryUrl });
    await codec.register(topic, VALUE_SCHEMAS.events);
    const parsed = parseEvent({
      event_id: newUlid(),
      event_type: 'product_click',
      timestamp: '2026-03-04T05:06:07.089Z',
      session_id: 'sess-1',
      product_id: 4242,
      position: 3,
      attribution_token: newUlid(),
      contextual_data: { page: 'search', tags: ['a', 'b'] },
    });
    if (!parsed.ok) throw new Error(parsed.reason);
    const event: EnrichedEvent = enrichEvent(parsed.event, {
      store_id: 'store-sr-test',
      received_at: '2026-03-04T05:06:08.000Z',
      geo_country: 'DE',
      geo_region: 'BE',
      geo_city: 'berlin',
      device_type: 'mobile',
      browser: 'Mobile Safari',
      os: 'iOS',
      is_bot: false,
      inferred_channel: 'web',
    });

    const kafka = createKafka(stack().kafkaBrokers, 'sr-stack-test', createLogger('sr-stack-test', 'silent'));
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({
      topic,
      acks: -1,
      messages: [{ key: `${event.store_id}:${event.session_id}`, value: codec.encode(topic, event) }],
    });

    const consumer = kafka.consumer({ groupId: `sr-stack-test-${newUlid()}`, maxWaitTimeInMs: 200 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const received = await new Promise<Buffer>((resolve) => {
      void consumer.run({ eachMessage: async ({ message }) => resolve(message.value as Buffer) });
    });
    await consumer.disconnect();
    await producer.disconnect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();

    const ours = await createValueCodec({ registryUrl: stack().schemaRegistryUrl }).decode<EnrichedEvent>(
      received,
      topic,
    );
    expect({ ...ours.value }).toEqual(event);
    const confluent = (await new SchemaRegistry({ host: stack().schemaRegistryUrl }).decode(received)) as Record<
      string,
      unknown
    >;
    // without the platform's logical types a generic Avro reader sees epoch millis and JSON strings
    expect(confluent.event_id).toBe(event.event_id);
    expect(confluent.timestamp).toBe(Date.parse(event.timestamp));
    expect(JSON.parse(confluent.contextual_data as string)).toEqual({ page: 'search', tags: ['a', 'b'] });
    expect(confluent.product_id).toBe('4242');
  });
});
