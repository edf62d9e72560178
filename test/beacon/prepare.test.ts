// prepareBatch inline and in the worker pool give the same answer (values byte for byte).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VALUE_SCHEMAS } from '../../schemas/avro/index.ts';
import { createValueCodec } from '../../services/common/kafka/codec.ts';
import type { ServerFields } from '../../schemas/events.ts';
import { createLogger } from '../../services/common/logger.ts';
import { type PrepareSettings, prepareBatch } from '../../services/beacon/prepare.ts';
import { createPreparePool, type PreparePool } from '../../services/beacon/prepare-pool.ts';
import { eventId, memoryRegistry } from './helpers.ts';

const settings: PrepareSettings = { topics: { events: 'p.events', rejected: 'p.rejected' }, maxClockSkewMs: 60_000 };
const server: ServerFields = {
  store_id: 'store-prep',
  received_at: '2026-05-01T12:00:00.000Z',
  geo_country: 'CA',
  geo_region: 'QC',
  geo_city: 'montreal',
  device_type: 'mobile',
  browser: 'Mobile Safari',
  os: 'iOS',
  is_bot: false,
  inferred_channel: 'app',
};
const receivedMs = Date.parse(server.received_at);

describe('prepareBatch inline and in workers', () => {
  const codec = createValueCodec({ registryUrl: '', registry: memoryRegistry() });
  let pool: PreparePool;
  beforeAll(async () => {
    const schemas = [];
    for (const [topic, schema] of [
      [settings.topics.events, VALUE_SCHEMAS.events],
      [settings.topics.rejected, VALUE_SCHEMAS.rejected],
    ] as const) {
      const text = JSON.stringify(schema);
      schemas.push({ topic, schema: text, id: await codec.register(topic, text) });
    }
    pool = await createPreparePool({
      size: 2,
      init: { schemas, settings },
      logger: createLogger('prepare-test', 'silent'),
    });
  });
  afterAll(async () => {
    await pool?.close();
  });

  it('validates, enriches, clamps and encodes identically', async () => {
    const dup = eventId();
    const text = JSON.stringify({
      events: [
        {
          event_id: dup,
          event_type: 'product_click',
          timestamp: '2026-05-01T11:59:00Z',
          session_id: 's1',
          product_id: 5,
          position: 2,
        },
        {
          event_id: dup,
          event_type: 'product_click',
          timestamp: '2026-05-01T11:59:00Z',
          session_id: 's1',
          product_id: 5,
          position: 2,
        },
        {
          event_id: eventId(),
          event_type: 'search',
          timestamp: '2026-05-01T13:00:00Z',
          session_id: 's2',
          query: 'boots',
          contextual_data: { search_source: 'typed' },
        },
        { event_id: eventId(), event_type: 'product_click', timestamp: '2026-05-01T11:59:00Z', session_id: 's1' },
      ],
    });
    const inline = prepareBatch({ text, server, receivedMs }, settings, codec);
    const worker = await pool.prepare({ text, server, receivedMs });
    expect(worker).toEqual(inline);
    if (!worker.ok) throw new Error('expected ok');
    expect(worker.events.map((e) => e.key.toString())).toEqual(['store-prep:s1', 'store-prep:s2']);
    expect(worker.batchDuplicates).toBe(1);
    expect(worker.clamped).toBe(1);
    expect(worker.rejections).toEqual([
      { index: 3, code: 'missing_field', path: 'product_id', reason: expect.any(String) },
    ]);
    const search = (
      await codec.decode<{ timestamp: string; timestamp_clamped: boolean; shopping_channel: string }>(
        worker.events[1].value,
        settings.topics.events,
      )
    ).value;
    expect(search).toMatchObject({ timestamp: server.received_at, timestamp_clamped: true, shopping_channel: 'app' });
  });

  it('answers batch-shape errors identically', async () => {
    for (const text of ['', 'nope', '[]', '{"events":[]}', '{"events":{}}']) {
      const inline = prepareBatch({ text, server, receivedMs }, settings, codec);
      expect(inline.ok).toBe(false);
      expect(await pool.prepare({ text, server, receivedMs })).toEqual(inline);
    }
  });
});
