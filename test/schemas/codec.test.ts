// The value codec against a real registry on a real broker: Confluent framing, synchronous encoding
// after registration, cached writer look-ups, and interoperability with @kafkajs/confluent-schema-registry.
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VALUE_SCHEMAS } from '../../schemas/avro/index.ts';
import {
  CodecError,
  createValueCodec,
  platformTopics,
  registerPlatformSchemas,
} from '../../services/common/kafka/codec.ts';
import { type EnrichedEvent, enrichEvent, parseEvent } from '../../schemas/events.ts';
import http from 'node:http';
import {
  createRegistryClient,
  type RegistryClient,
  registryEndpoint,
} from '../../services/common/kafka/registry-client.ts';
import { type RegistryFixture, sr, startRegistryFixture } from '../schema-registry/fixture.ts';

let fx: RegistryFixture;
let url: string;
beforeAll(async () => {
  fx = await startRegistryFixture();
  url = fx.registry.url;
});
afterAll(async () => {
  await fx?.close();
});

function sampleEvent(): EnrichedEvent {
  const p = parseEvent({
    event_id: '01J0000000000000000000000A',
    event_type: 'search',
    timestamp: '2026-02-03T04:05:06.007Z',
    session_id: 'sess-42',
    customer_id: 'cust-7',
    query: 'linen shirt',
    contextual_data: { search_source: 'autocomplete', page: { path: '/search' } },
  });
  if (!p.ok) throw new Error(p.reason);
  return enrichEvent(p.event, {
    store_id: 'store-codec',
    received_at: '2026-02-03T04:05:06.500Z',
    geo_country: 'US',
    geo_region: 'CA',
    geo_city: 'san francisco',
    device_type: 'mobile',
    browser: 'Mobile Safari',
    os: 'iOS',
    is_bot: false,
    inferred_channel: 'web',
  });
}

/** the real client, counting how often each id is fetched */
function countingClient(): RegistryClient & { fetches: number[] } {
  const real = createRegistryClient({ url });
  const fetches: number[] = [];
  return {
    ...real,
    fetches,
    getSchemaById: (id) => {
      fetches.push(id);
      return real.getSchemaById(id);
    },
  };
}

describe('value codec', () => {
  it('registers the platform subjects (TopicNameStrategy, prefix applied) idempotently', async () => {
    const codec = createValueCodec({ registryUrl: url });
    const ids = await registerPlatformSchemas(codec, { KAFKA_TOPIC_PREFIX: 'codec-test.' });
    const topics = platformTopics({ KAFKA_TOPIC_PREFIX: 'codec-test.' });
    expect(topics.events).toBe('codec-test.storefront.events.v1');
    const subjects = (await sr(url, 'GET', '/subjects')).body as string[];
    for (const [key, topic] of Object.entries(topics)) {
      expect(subjects).toContain(`${topic}-value`);
      expect(codec.schemaId(topic)).toBe(ids[key as keyof typeof ids]);
    }
    expect(
      await registerPlatformSchemas(createValueCodec({ registryUrl: url }), { KAFKA_TOPIC_PREFIX: 'codec-test.' }),
    ).toEqual(ids);
  });

  it('encodes synchronously with the Confluent framing and decodes back unchanged', async () => {
    const codec = createValueCodec({ registryUrl: url });
    const id = await codec.register('codec.events', VALUE_SCHEMAS.events);
    const event = sampleEvent();
    const buf = codec.encode('codec.events', event);
    expect(buf[0]).toBe(0);
    expect(buf.readUInt32BE(1)).toBe(id);
    // each call returns its own buffer (the scratch space is reused internally)
    const other = codec.encode('codec.events', { ...event, query: 'something else entirely' });
    expect(buf.equals(codec.encode('codec.events', event))).toBe(true);
    expect(other.equals(buf)).toBe(false);

    const decoded = await codec.decode<EnrichedEvent>(buf, 'codec.events');
    expect(decoded.schemaId).toBe(id);
    expect({ ...decoded.value }).toEqual(event);
    expect({ ...codec.decodeCached<EnrichedEvent>(buf)!.value }).toEqual(event);

    // a large value grows the scratch buffer
    const big = { ...event, contextual_data: { blob: 'x'.repeat(100_000), search_source: 'typed' } };
    expect(
      ((await codec.decode<EnrichedEvent>(codec.encode('codec.events', big))).value.contextual_data as { blob: string })
        .blob,
    ).toHaveLength(100_000);
  });

  it('refuses to encode before registration or an invalid value, and to decode foreign bytes', async () => {
    const codec = createValueCodec({ registryUrl: url });
    expect(() => codec.encode('codec.unregistered', sampleEvent())).toThrow(CodecError);
    await codec.register('codec.events', VALUE_SCHEMAS.events);
    expect(() => codec.encode('codec.events', { ...sampleEvent(), session_id: undefined })).toThrow();
    expect(() => codec.encode('codec.events', { ...sampleEvent(), timestamp: 'soon' })).toThrow(/invalid timestamp/);
    await expect(codec.decode(Buffer.from([1, 0, 0, 0, 1, 2]))).rejects.toThrow(/magic byte/);
    await expect(codec.decode(Buffer.from([0, 0]))).rejects.toThrow(/too short/);
    await expect(codec.decode(Buffer.from([0, 0x7f, 0, 0, 0, 2]))).rejects.toThrow(/not found|40403/i);
    const good = codec.encode('codec.events', sampleEvent());
    await expect(codec.decode(good.subarray(0, 20), 'codec.events')).rejects.toThrow(CodecError);
  });

  it('fetches an unknown writer schema once, shared by concurrent decodes, then decodes from cache', async () => {
    const producer = createValueCodec({ registryUrl: url });
    const id = await producer.register('codec.events', VALUE_SCHEMAS.events);
    const buf = producer.encode('codec.events', sampleEvent());
    const registry = countingClient();
    const consumer = createValueCodec({ registryUrl: url, registry });
    expect(consumer.decodeCached(buf)).toBeUndefined();
    const results = await Promise.all(
      Array.from({ length: 20 }, () => consumer.decode<EnrichedEvent>(buf, 'codec.events')),
    );
    expect(results.every((r) => r.value.event_id === '01J0000000000000000000000A')).toBe(true);
    await consumer.decode(buf);
    expect(registry.fetches).toEqual([id]);
  });

  it('produces values @kafkajs/confluent-schema-registry decodes (generic Avro: epoch millis, JSON text)', async () => {
    const codec = createValueCodec({ registryUrl: url });
    await codec.register('codec.events', VALUE_SCHEMAS.events);
    const event = sampleEvent();
    const decoded = (await new SchemaRegistry({ host: url }).decode(codec.encode('codec.events', event))) as Record<
      string,
      unknown
    >;
    expect(decoded).toMatchObject({
      event_id: event.event_id,
      event_type: 'search',
      store_id: 'store-codec',
      query: 'linen shirt',
      timestamp: Date.parse(event.timestamp),
      received_at: Date.parse(event.received_at),
      geo_city: 'san francisco',
      line_items: [],
    });
    expect(JSON.parse(decoded.contextual_data as string)).toEqual(event.contextual_data);
  });

  it('sends credentials from the registry URL as Basic auth (Confluent Cloud style), never in the URL', async () => {
    expect(registryEndpoint('https://KEY:s%40cret@psrc.example.com/')).toEqual({
      base: 'https://psrc.example.com',
      authorization: `Basic ${Buffer.from('KEY:s@cret').toString('base64')}`,
    });
    expect(registryEndpoint('http://127.0.0.1:8081')).toEqual({
      base: 'http://127.0.0.1:8081',
      authorization: undefined,
    });
    const seen: (string | undefined)[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      res
        .writeHead(200, { 'content-type': 'application/vnd.schemaregistry.v1+json' })
        .end('{"compatibilityLevel":"BACKWARD"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const client = createRegistryClient({ url: `http://user:pa%3Ass@127.0.0.1:${port}` });
    expect(client.url).toBe(`http://127.0.0.1:${port}`);
    expect(await client.getCompatibility()).toBe('BACKWARD');
    await new Promise((r) => server.close(r));
    expect(seen).toEqual([`Basic ${Buffer.from('user:pa:ss').toString('base64')}`]);
  });
});
