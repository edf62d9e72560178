// The Avro value schemas are generated from the zod contracts; these properties prove that every
// zod-valid value survives Avro encoding unchanged, and that the committed .avsc files (what
// analysts and other languages read) match the generator and only ever evolve compatibly.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import avro from 'avsc';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { avroType, TOPIC_VALUE_SCHEMAS, VALUE_SCHEMAS } from '../../schemas/avro/index.ts';
import { AVSC_DIR, AVSC_FILES } from '../../schemas/avro/files.ts';
import {
  EVENT_TYPES,
  EnrichedEventSchema,
  type EventType,
  enrichEvent,
  parseEvent,
  RejectedEventSchema,
  type ServerFields,
} from '../../schemas/events.ts';
import { OrderInputSchema, OrderSchema } from '../../schemas/orders.ts';
import { REQUEST_KINDS, RequestEventSchema, requestEvent } from '../../schemas/requests.ts';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 300);

// ------------------------------------------------------------------------------- arbitraries
const MAX_MS = 253402300799999;
const text = (max = 20) => fc.string({ unit: 'grapheme', minLength: 1, maxLength: max }).filter((s) => s.trim() !== '');
const unicodeText = (max = 20) =>
  fc.string({ unit: 'binary', minLength: 1, maxLength: max }).filter((s) => s.trim() !== '');
const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const ms = fc.integer({ min: 0, max: MAX_MS });
const timestampInput = fc.oneof(
  ms,
  ms.map((t) => new Date(t).toISOString()),
  fc.integer({ min: 0, max: 4102444800000 }).map((t) => new Date(t).toISOString().replace('Z', '+00:00')),
);
const ulidChars = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ulid = fc
  .tuple(fc.constantFrom(...'01234567'), fc.array(fc.constantFrom(...ulidChars), { minLength: 25, maxLength: 25 }))
  .map(([h, t]) => h + t.join(''));
const eventId = fc.oneof(
  ulid,
  ulid.map((u) => u.toLowerCase()),
  fc.uuid(),
);
const numericIdInput = fc.oneof(
  fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  fc.bigInt({ min: 1n, max: 10n ** 20n - 1n }).map(String),
  fc.integer({ min: 1, max: 2 ** 31 }).map((n) => `gid://shopify/Product/${n}`),
);
const position = fc.oneof(fc.integer({ min: 1, max: 100_000 }), fc.integer({ min: 1, max: 999 }).map(String));
const price = fc.oneof(
  fc.double({ min: 0, max: 1e12, noNaN: true, noDefaultInfinity: true }),
  fc
    .tuple(fc.integer({ min: 0, max: 1e9 }), fc.integer({ min: 0, max: 99 }))
    .map(([a, b]) => `${a}.${String(b).padStart(2, '0')}`),
);
const currencyCode = fc.constantFrom('EUR', 'usd', 'GBP', 'jpy');
const json = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
const contextual = fc.dictionary(text(8), json, { maxKeys: 4, noNullPrototype: true });

const commonFields = fc.record(
  {
    event_id: eventId,
    timestamp: timestampInput,
    session_id: unicodeText(40),
    customer_id: maybe(fc.oneof(text(30), fc.integer({ min: 1, max: 2 ** 40 }), fc.constant(null))),
    device_id: maybe(text(30)),
    attribution_token: maybe(ulid),
    shopping_channel: maybe(fc.constantFrom('web', 'app')),
    marketing_source: maybe(text()),
    utm_medium: maybe(text()),
    marketing_campaign: maybe(fc.oneof(text(), fc.constant(null))),
    contextual_data: maybe(contextual),
  },
  { requiredKeys: ['event_id', 'timestamp', 'session_id'] },
);

const lineItem = fc.record({
  product_id: numericIdInput,
  variant_id: maybe(numericIdInput),
  quantity: position,
  price,
});
const typeFields: Record<EventType, fc.Arbitrary<Record<string, unknown>>> = {
  product_click: fc.record({
    product_id: numericIdInput,
    position,
    variant_id: maybe(numericIdInput),
    query: maybe(text()),
  }),
  product_view: fc.record({ product_id: numericIdInput, variant_id: maybe(numericIdInput), block_id: maybe(ulid) }),
  product_impression: fc.record({ product_id: numericIdInput, position, block_id: maybe(ulid) }),
  product_hover: fc.record({ product_id: numericIdInput, position }),
  product_touch: fc.record({ product_id: numericIdInput, position }),
  add_to_cart: fc.record({
    product_id: numericIdInput,
    variant_id: maybe(numericIdInput),
    quantity: maybe(position),
    price: maybe(price),
    currency: maybe(currencyCode),
  }),
  purchase: fc.record({
    currency: currencyCode,
    order_id: maybe(fc.oneof(text(), fc.integer({ min: 1, max: 2 ** 40 }))),
    total_price: maybe(price),
    line_items: fc.array(lineItem, { minLength: 1, maxLength: 4 }),
  }),
  block_view: fc.record({ block_id: maybe(ulid), product_id: maybe(numericIdInput) }),
  collection_view: fc.record({ collection_handle: text(40) }),
  content_view: fc.record({
    content_type: fc.constantFrom('article', 'page'),
    content_id: numericIdInput,
    content_handle: maybe(text()),
  }),
  content_click: fc.record({
    content_type: fc.constantFrom('article', 'page'),
    content_id: numericIdInput,
    position: maybe(position),
  }),
  content_impression: fc.record({ content_type: fc.constantFrom('article', 'page'), content_id: numericIdInput }),
  banner_impression: fc.record({
    banner_id: ulid,
    rule_id: maybe(ulid),
    banner_type: maybe(fc.constantFrom('link', 'promo-tile')),
    banner_mode: maybe(fc.constantFrom('inject', 'overtake')),
    web_position: maybe(fc.integer({ min: 0, max: 50 })),
    mobile_position: maybe(fc.integer({ min: 0, max: 50 })),
  }),
  banner_click: fc.record({ banner_id: ulid, collection_handle: maybe(text()) }),
  search: fc.record({
    query: unicodeText(60),
    contextual_data: fc
      .tuple(contextual, fc.constantFrom('typed', 'autocomplete'))
      .map(([c, s]) => ({ ...c, search_source: s })),
  }),
  autocomplete: fc.record({ query: maybe(text()) }),
  autocomplete_click: fc.record({
    query: maybe(text()),
    product_id: maybe(numericIdInput),
    contextual_data: fc
      .tuple(
        contextual,
        fc.string({ maxLength: 30 }),
        position,
        fc.constantFrom('query_suggestion', 'product', 'collection'),
      )
      .map(([c, typed_query, pos, selection_source]) => ({ ...c, typed_query, position: pos, selection_source })),
  }),
};

const rawEvent = fc
  .constantFrom(...EVENT_TYPES)
  .chain((type) => fc.tuple(fc.constant(type), commonFields, typeFields[type]))
  .map(([type, c, t]) => ({ ...c, ...t, event_type: type }));

const serverFields: fc.Arbitrary<ServerFields> = fc.record({
  store_id: text(30),
  received_at: ms.map((t) => new Date(t).toISOString()),
  geo_country: fc.option(fc.constantFrom('US', 'DE', 'FR'), { nil: null }),
  geo_region: fc.option(text(5), { nil: null }),
  geo_city: fc.option(text(), { nil: null }),
  device_type: fc.constantFrom('mobile', 'tablet', 'desktop', 'bot'),
  browser: fc.option(text(), { nil: null }),
  os: fc.option(text(), { nil: null }),
  is_bot: fc.boolean(),
  inferred_channel: fc.constantFrom('web', 'app'),
});

/** avsc decodes records into class instances; compare plain data */
const plain = (v: unknown) => JSON.parse(JSON.stringify(v));

// ------------------------------------------------------------------------------- properties
describe('Avro round trip of zod-valid values', () => {
  it('every valid beacon event, validated and enriched, round-trips through the events schema unchanged', () => {
    const type = avroType(VALUE_SCHEMAS.events);
    fc.assert(
      fc.property(rawEvent, serverFields, (raw, server) => {
        const parsed = parseEvent(raw);
        if (!parsed.ok)
          throw new Error(`generator produced an invalid event: ${parsed.reason} in ${JSON.stringify(raw)}`);
        const enriched = enrichEvent(parsed.event, server);
        expect(EnrichedEventSchema.strict().safeParse(enriched).success).toBe(true);
        const decoded = type.fromBuffer(type.toBuffer(enriched));
        expect(plain(decoded)).toEqual(plain(enriched));
        expect(decoded.timestamp).toBe(enriched.timestamp);
        expect(decoded.contextual_data).toEqual(enriched.contextual_data);
      }),
      { numRuns: RUNS },
    );
  });

  it('request events round-trip unchanged', () => {
    const type = avroType(VALUE_SCHEMAS.requests);
    const nul = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });
    const req = fc
      .record({
        request_id: ulid,
        store_id: text(),
        kind: fc.constantFrom(...REQUEST_KINDS),
        occurred_at: ms.map((t) => new Date(t).toISOString()),
        device_type: fc.constantFrom('mobile', 'tablet', 'desktop', 'bot'),
        status_code: fc.integer({ min: 100, max: 599 }),
        latency_ms: fc.double({ min: 0, max: 1e6, noNaN: true, noDefaultInfinity: true }),
        session_id: nul(text()),
        query: nul(unicodeText(80)),
        result_product_ids: fc.array(fc.bigInt({ min: 1n, max: 10n ** 15n }).map(String), { maxLength: 30 }),
        total_results: nul(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER - 1 })),
        page: nul(fc.integer({ min: 1, max: 100 })),
        shopping_channel: nul(fc.constantFrom('web', 'app')),
        cache_hit: nul(fc.boolean()),
        context_json: json.map((v) => JSON.stringify(v)),
        details_json: nul(json.map((v) => JSON.stringify(v))),
      })
      .map((f) => requestEvent(f));
    fc.assert(
      fc.property(req, (r) => {
        expect(RequestEventSchema.strict().safeParse(r).success).toBe(true);
        expect(plain(type.fromBuffer(type.toBuffer(r)))).toEqual(plain(r));
      }),
      { numRuns: RUNS },
    );
  });

  it('orders (normalized from producer input) round-trip unchanged', () => {
    const type = avroType(VALUE_SCHEMAS.orders);
    const input = fc.record(
      {
        store_id: text(),
        order_id: fc.oneof(text(), fc.integer({ min: 1, max: 2 ** 40 })),
        customer_id: maybe(fc.oneof(text(), fc.constant(null))),
        session_id: maybe(text()),
        created_at: timestampInput,
        updated_at: maybe(timestampInput),
        currency: currencyCode,
        total_price: price,
        line_items: fc.array(lineItem, { maxLength: 5 }),
        cancelled: maybe(fc.boolean()),
        source: maybe(fc.constantFrom('webhook', 'import', 'beacon')),
      },
      { requiredKeys: ['store_id', 'order_id', 'created_at', 'currency', 'total_price', 'line_items'] },
    );
    fc.assert(
      fc.property(input, (raw) => {
        const order = OrderInputSchema.parse(raw);
        expect(OrderSchema.strict().safeParse(order).success).toBe(true);
        expect(plain(type.fromBuffer(type.toBuffer(order)))).toEqual(plain(order));
      }),
      { numRuns: RUNS },
    );
  });

  it('rejected events round-trip unchanged', () => {
    const type = avroType(VALUE_SCHEMAS.rejected);
    fc.assert(
      fc.property(
        fc.record({
          store_id: text(),
          received_at: ms.map((t) => new Date(t).toISOString()),
          code: fc.constantFrom('not_an_object', 'unknown_event_type', 'missing_field', 'invalid_field'),
          reason: text(80),
          path: fc.string(),
          event_type: fc.option(text(), { nil: null }),
          raw_json: json.map((v) => JSON.stringify(v)),
        }),
        (r) => {
          expect(RejectedEventSchema.strict().safeParse(r).success).toBe(true);
          expect(plain(type.fromBuffer(type.toBuffer(r)))).toEqual(r);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('generated Avro schemas', () => {
  it('make every optional field a ["null", T] union with default null (BACKWARD-evolvable)', () => {
    for (const schema of Object.values(TOPIC_VALUE_SCHEMAS)) {
      for (const f of (schema as { fields: { name: string; type: unknown; default?: unknown }[] }).fields) {
        if (Array.isArray(f.type)) {
          expect({ field: f.name, first: f.type[0], default: f.default }).toEqual({
            field: f.name,
            first: 'null',
            default: null,
          });
        }
      }
    }
    const ev = VALUE_SCHEMAS.events as { fields: { name: string; type: unknown }[] };
    expect(ev.fields.find((f) => f.name === 'timestamp')?.type).toEqual({
      type: 'long',
      logicalType: 'timestamp-millis',
    });
    expect(ev.fields.find((f) => f.name === 'contextual_data')?.type).toEqual({ type: 'string', logicalType: 'json' });
    expect(ev.fields.find((f) => f.name === 'price')?.type).toEqual(['null', 'string']);
    expect(ev.fields.map((f) => f.name)).toEqual(Object.keys(EnrichedEventSchema.shape));
  });

  it('are what the committed .avsc files say, and evolve only BACKWARD-compatibly from them', () => {
    // one committed file per topic value schema
    expect(Object.keys(AVSC_FILES).sort()).toEqual(Object.keys(TOPIC_VALUE_SCHEMAS).sort());
    expect(Object.keys(AVSC_FILES)).toHaveLength(13);
    for (const [key, file] of Object.entries(AVSC_FILES)) {
      const generated = TOPIC_VALUE_SCHEMAS[key as keyof typeof TOPIC_VALUE_SCHEMAS];
      const committed = JSON.parse(readFileSync(path.join(AVSC_DIR, file), 'utf8'));
      // new readers (generated) must read data written with the committed schema
      expect(() => avro.Type.forSchema(generated).createResolver(avro.Type.forSchema(committed)), file).not.toThrow();
      expect(generated, `${file} is stale: run node schemas/avro/write-avsc.ts`).toEqual(committed);
    }
  });

  it('stores.config: the generated envelope reads what the hand-written schema it replaced wrote, byte for byte', () => {
    const handWritten = {
      type: 'record',
      name: 'StoreConfigEvent',
      namespace: 'discovery.stores.config.v1',
      fields: [
        { name: 'store_id', type: 'string' },
        { name: 'kind', type: 'string' },
        { name: 'item_id', type: 'string' },
        { name: 'version', type: 'string' },
        { name: 'written_at', type: { type: 'long', logicalType: 'timestamp-millis' } },
        { name: 'payload_json', type: 'string' },
      ],
    } as const;
    const generated = TOPIC_VALUE_SCHEMAS.storeConfig;
    // same canonical form (docs aside): the same bytes, the same registry fingerprint
    expect(avro.Type.forSchema(generated).fingerprint().toString('hex')).toBe(
      avro.Type.forSchema(handWritten as never)
        .fingerprint()
        .toString('hex'),
    );
    const writer = avroType(handWritten as never);
    const reader = avroType(generated);
    const resolver = reader.createResolver(writer);
    fc.assert(
      fc.property(
        fc.record({
          store_id: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/),
          kind: text(),
          item_id: unicodeText(40),
          version: ulid,
          written_at: ms.map((t) => new Date(t).toISOString()),
          payload_json: json.map((v) => JSON.stringify(v)),
        }),
        (envelope) => {
          const bytes = writer.toBuffer(envelope);
          expect(plain(reader.fromBuffer(bytes, resolver))).toEqual(envelope);
          expect(reader.toBuffer(envelope).equals(bytes)).toBe(true);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('decode to epoch millis and JSON text for readers without the platform logical types', () => {
    const ours = avroType(VALUE_SCHEMAS.rejected);
    const generic = avro.Type.forSchema(VALUE_SCHEMAS.rejected);
    const value = {
      store_id: 's',
      received_at: '2026-01-02T03:04:05.678Z',
      code: 'missing_field',
      reason: 'r',
      path: 'p',
      event_type: null,
      raw_json: '{}',
    };
    expect(generic.fromBuffer(ours.toBuffer(value)).received_at).toBe(Date.parse(value.received_at));
    expect(() => ours.toBuffer({ ...value, received_at: 'not a date' })).toThrow(/invalid timestamp/);
  });
});
