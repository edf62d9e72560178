// Value codec benchmark: Avro encode / decode throughput for a typical enriched beacon event (what the
// beacon writes to storefront.events.v1), next to JSON.stringify / JSON.parse of the same value as the
// in-run baseline, plus parseEvent + enrichEvent (the validation in front of the encoder).
// The schema is registered with a real registry (embedded broker + schema registry in this process).
//
// Run: node bench/codec.ts   (BENCH_SECONDS=3 per measurement to change)
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { VALUE_SCHEMAS } from '../schemas/avro/index.ts';
import { createValueCodec } from '../services/common/kafka/codec.ts';
import { type EnrichedEvent, enrichEvent, parseEvent, type ServerFields } from '../schemas/events.ts';
import { startBroker } from '../services/kafka-broker/index.ts';
import { startSchemaRegistry } from '../services/schema-registry/index.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);

const rawClick = {
  event_id: '01JD3Q8Z5W6X7Y8Z9A0B1C2D3E',
  event_type: 'product_click',
  timestamp: '2026-11-22T10:11:12.131Z',
  session_id: 'a6f1c0de-5c2b-4e0b-9d4e-2f7c9b1e0a11',
  customer_id: null,
  attribution_token: '01JD3Q8Y1H2J3K4M5N6P7Q8R9S',
  product_id: 8123456789012,
  variant_id: 45123456789012,
  position: 7,
  marketing_source: 'google',
  marketing_medium: 'cpc',
  marketing_campaign: 'fall-sale',
  contextual_data: { page_type: 'search', list: 'results', viewport: { w: 390, h: 844 } },
};
const server: ServerFields = {
  store_id: 'store_01JD3Q7',
  received_at: '2026-11-22T10:11:12.400Z',
  geo_country: 'US',
  geo_region: 'CA',
  geo_city: 'san francisco',
  device_type: 'mobile',
  browser: 'Mobile Safari',
  os: 'iOS',
  is_bot: false,
  inferred_channel: 'web',
};

function measure(name: string, fn: () => unknown): number {
  // warm up, then count calls in batches until the time is up
  for (let i = 0; i < 20_000; i++) fn();
  let n = 0;
  const t0 = performance.now();
  const end = t0 + SECONDS * 1000;
  while (performance.now() < end) {
    for (let i = 0; i < 1_000; i++) fn();
    n += 1_000;
  }
  const perSec = n / ((performance.now() - t0) / 1000);
  console.log(
    `${name.padEnd(44)} ${Math.round(perSec).toLocaleString('en-US').padStart(12)} /s   ${(1e6 / perSec).toFixed(2)} µs/op`,
  );
  return perSec;
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-codec-'));
const quiet = pino({ level: 'warn' });
const broker = await startBroker({ port: 0, dataDir, logger: quiet });
const registry = await startSchemaRegistry({
  brokers: [`127.0.0.1:${broker.port}`],
  topic: '_schemas',
  port: 0,
  logger: quiet,
});
try {
  const codec = createValueCodec({ registryUrl: registry.url });
  const topic = 'storefront.events.v1';
  await codec.register(topic, VALUE_SCHEMAS.events);
  const parsed = parseEvent(rawClick);
  if (!parsed.ok) throw new Error(parsed.reason);
  const event: EnrichedEvent = enrichEvent(parsed.event, server);
  const avroBytes = codec.encode(topic, event);
  const jsonText = JSON.stringify(event);
  await codec.decode(avroBytes, topic);

  console.log(
    `value codec — typical enriched product_click: Avro ${avroBytes.length} bytes (framed), JSON ${Buffer.byteLength(jsonText)} bytes`,
  );
  const enc = measure('Avro encode (codec.encode)', () => codec.encode(topic, event));
  const jsonEnc = measure('baseline: JSON.stringify → Buffer', () => Buffer.from(JSON.stringify(event)));
  const dec = measure('Avro decode (codec.decodeCached, reader=writer)', () => codec.decodeCached(avroBytes, topic));
  const jsonDec = measure('baseline: JSON.parse', () => JSON.parse(jsonText));
  const val = measure('parseEvent + enrichEvent (zod validation)', () => {
    const p = parseEvent(rawClick);
    if (p.ok) enrichEvent(p.event, server);
  });
  console.log(
    `encode ${(enc / jsonEnc).toFixed(2)}× JSON.stringify; decode ${(dec / jsonDec).toFixed(2)}× JSON.parse; ` +
      `validate+encode pipeline ≈ ${Math.round(1 / (1 / enc + 1 / val)).toLocaleString('en-US')} events/s on one core (target ≥ 100,000)`,
  );
} finally {
  await registry.close();
  await broker.close();
  rmSync(dataDir, { recursive: true, force: true });
}
