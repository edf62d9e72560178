// The intake's fast path (services/beacon/fast-event.ts) against the reference path (zod parseEvent →
// enrichEvent → avsc through the codec), property-based over every event type: whenever the fast path
// answers, the reference path accepts the event and produces the same bytes, the same event_id and the
// same record key; events valid as storefronts send them always take the fast path. Field values mix
// canonical ones, ones the schemas normalize (case, padding, digit strings, GIDs, numbers for decimals,
// epoch ms, zone-less timestamps, utm_* aliases, lone surrogates) and invalid ones.
import fc from 'fast-check';
import sjson from 'secure-json-parse';
import { describe, expect, it } from 'vitest';
import { VALUE_SCHEMAS } from '../../schemas/avro/index.ts';
import { createValueCodec } from '../../services/common/kafka/codec.ts';
import { EVENT_SCHEMAS, EVENT_TYPES, enrichEvent, parseEvent, type ServerFields } from '../../schemas/events.ts';
import { ByteWriter, fastPathSupports, requestBlock, writeFastEvent } from '../../services/beacon/fast-event.ts';
import { memoryRegistry } from './helpers.ts';

const RUNS = Number(process.env.FAST_CHECK_RUNS ?? 1000);
const TOPIC = 'fast.events';
const RECEIVED = '2026-05-01T12:00:00.000Z';
const RECEIVED_MS = Date.parse(RECEIVED);
const SKEW = 300_000;

const codec = createValueCodec({ registryUrl: '', registry: memoryRegistry() });
const schemaId = await codec.register(TOPIC, JSON.stringify(VALUE_SCHEMAS.events));

// ------------------------------------------------------------------------------------------------
// field values

const ulidChars = '0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyz';
const ulidArb = fc.string({ unit: fc.constantFrom(...ulidChars), minLength: 26, maxLength: 26 });
const validUlid = fc.string({
  unit: fc.constantFrom(...'0123456789ABCDEFGHJKMNPQRSTVWXYZ'),
  minLength: 26,
  maxLength: 26,
});
const pad = (a: fc.Arbitrary<string>) =>
  fc.tuple(fc.constantFrom('', ' ', '\t', '\u00a0'), a, fc.constantFrom('', ' ', '\n')).map(([x, s, y]) => x + s + y);
const text = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
  fc.string({ unit: 'binary', maxLength: 8 }), // lone surrogates
  fc.constant(''),
  fc.constant('   '),
  fc.string({ minLength: 60, maxLength: 70 }),
  fc.string({ minLength: 125, maxLength: 131 }),
  fc.string({ minLength: 250, maxLength: 260 }),
);
const junk = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.constant([]),
  fc.constant({}),
  fc.constant([1]),
  fc.constant({ a: 1 }),
);
const anyText = fc.oneof(text, pad(text), junk);
const idLike = fc.oneof(
  fc.nat(),
  fc.integer({ min: -2, max: 2 }),
  fc.constant(2 ** 53),
  fc.double(),
  pad(fc.stringMatching(/^[a-z0-9-]{0,10}$/)),
  text,
  fc.constant(null),
);
const numericId = fc.oneof(
  fc.integer({ min: 1, max: 1e12 }),
  fc.integer({ min: -3, max: 3 }),
  fc.constant(2 ** 53 + 2),
  fc.double(),
  pad(fc.stringMatching(/^0{0,3}\d{1,22}$/)),
  fc.stringMatching(/^gid:\/\/[A-Za-z0-9_-]{1,12}\/[A-Za-z0-9]{1,8}\/\d{1,21}(\?[a-z=&]{0,6})?$/),
  fc.constant('gid://shopify/Product/000'),
  fc.constant('gid://shopify-b2b/Product/1'),
  text,
  junk,
);
const intLike = fc.oneof(
  fc.integer({ min: -2, max: 100_002 }),
  fc.constantFrom(-1, 0, 1, 2, 100_000, 100_001, '0', ' 7 ', '100001'),
  fc.double(),
  pad(fc.stringMatching(/^-?\d{1,11}$/)),
  fc.constant('1e3'),
  text,
  junk,
);
const decimal = fc.oneof(
  fc.double({ min: 0, max: 1e16 }),
  fc.double(),
  fc.constantFrom(0, 19.99, 1e-7, 0.1234567, 999999999999999),
  pad(fc.stringMatching(/^\d{1,16}(\.\d{1,7})?$/)),
  fc.constant('1.'),
  text,
  junk,
);
const currency = fc.oneof(pad(fc.stringMatching(/^[A-Za-z]{2,4}$/)), fc.constantFrom('EUR', 'usd', 'ÄÖÜ'), junk);
const timestamp = fc.oneof(
  fc.date({ min: new Date(0), max: new Date('2026-06-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc
    .date({ min: new Date(-1e12), max: new Date(253402300799999 + 5), noInvalidDate: true })
    .map((d) => d.toISOString()),
  fc
    .date({ min: new Date(0), max: new Date('2030-01-01T00:00:00Z'), noInvalidDate: true })
    .map((d) => d.toISOString().slice(0, 19)),
  fc.date({ min: new Date(0), max: new Date('2030-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toUTCString()),
  fc.constantFrom(
    '2026-02-30T00:00:00.000Z',
    '2026-01-01T24:00:00Z',
    '2026-05-01T11:59:00+02:00',
    '2026-05-01',
    ' 2026-05-01T11:00:00Z ',
    'yesterday',
  ),
  fc.double({ min: -10, max: 3e14 }),
  fc.integer({ min: 0, max: RECEIVED_MS + 2 * SKEW }),
  junk,
);
const eventId = fc.oneof(
  validUlid,
  pad(ulidArb),
  fc.uuid().map((u) => u.toUpperCase()),
  pad(fc.uuid()),
  ulidArb.map((s) => s.slice(1)),
  text,
  junk,
);
const contextObject = fc.dictionary(
  fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('1', '0', 'search_source', 'position')),
  fc.jsonValue({ maxDepth: 2 }),
  { maxKeys: 4 },
);
const contextual = fc.oneof(contextObject, junk);
const searchContext = fc.oneof(
  fc
    .record({ search_source: fc.oneof(fc.constantFrom('typed', 'autocomplete', 'Typed'), junk) }, { requiredKeys: [] })
    .chain((c) => contextObject.map((o) => ({ ...o, ...c }))),
  contextObject.map((o) => ({ search_source: 'typed', ...o })),
  junk,
);
const acContext = fc
  .record(
    {
      typed_query: fc.oneof(text, fc.string({ minLength: 254, maxLength: 257 }), junk),
      position: intLike,
      selection_source: anyText,
    },
    { requiredKeys: [] },
  )
  .chain((c) => fc.tuple(contextObject, fc.boolean()).map(([o, first]) => (first ? { ...c, ...o } : { ...o, ...c })));
const lineItem = fc.record(
  { product_id: numericId, variant_id: fc.oneof(numericId, fc.constant(null)), quantity: intLike, price: decimal },
  { requiredKeys: [] },
);
const lineItems = fc.oneof(
  fc.array(lineItem, { minLength: 0, maxLength: 4 }),
  fc.array(fc.constant({ product_id: 1, quantity: 1, price: '1' }), { minLength: 249, maxLength: 252 }),
  junk,
);
const optEnum = (...v: string[]) => fc.oneof(fc.constantFrom(...v), fc.constantFrom('WEB', 'other'), junk);

/** every field any event type has (and the server fields a client must not be able to set) */
const FIELDS: Record<string, fc.Arbitrary<unknown>> = {
  customer_id: idLike,
  device_id: anyText,
  attribution_token: anyText,
  shopping_channel: optEnum('web', 'app'),
  marketing_source: anyText,
  marketing_medium: anyText,
  marketing_campaign: anyText,
  marketing_term: anyText,
  marketing_content: anyText,
  utm_source: anyText,
  utm_medium: anyText,
  utm_campaign: anyText,
  utm_term: anyText,
  utm_content: anyText,
  contextual_data: contextual,
  product_id: numericId,
  variant_id: numericId,
  position: intLike,
  block_id: anyText,
  query: anyText,
  collection_handle: anyText,
  content_type: fc.oneof(fc.constantFrom('article', 'page', 'Article'), junk),
  content_id: numericId,
  content_handle: anyText,
  banner_id: fc.oneof(validUlid, pad(ulidArb), junk),
  rule_id: anyText,
  banner_type: anyText,
  banner_mode: optEnum('inject', 'overtake'),
  web_position: intLike,
  mobile_position: intLike,
  quantity: intLike,
  price: decimal,
  currency,
  order_id: idLike,
  total_price: decimal,
  line_items: lineItems,
  store_id: anyText,
  received_at: timestamp,
  is_bot: fc.boolean(),
  geo_country: anyText,
};

// ------------------------------------------------------------------------------------------------
// events as a storefront sends them: valid, canonical values

const sent = {
  product: () => ({
    product_id: fc.integer({ min: 1, max: 1e9 }),
    variant_id: fc.option(fc.integer({ min: 1, max: 1e9 }), { nil: undefined }),
  }),
  ranked: () => ({
    ...sent.product(),
    position: fc.integer({ min: 1, max: 500 }),
    block_id: fc.option(fc.stringMatching(/^[a-z0-9-]{1,20}$/), { nil: undefined }),
  }),
  content: () => ({
    content_type: fc.constantFrom('article', 'page'),
    content_id: fc.integer({ min: 1, max: 1e9 }),
    content_handle: fc.option(fc.string({ minLength: 1, maxLength: 30 }), { nil: undefined }),
  }),
  banner: () => ({
    banner_id: validUlid,
    rule_id: fc.option(fc.string({ minLength: 1, maxLength: 20 }), { nil: undefined }),
    web_position: fc.option(fc.integer({ min: 0, max: 50 }), { nil: undefined }),
  }),
};
const word = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }).filter((s) => s.trim() === s && s !== '');
const typeShapes: Record<string, Record<string, fc.Arbitrary<unknown>>> = {
  product_click: { ...sent.ranked(), query: fc.option(word, { nil: undefined }) },
  product_view: { ...sent.product() },
  product_impression: sent.ranked(),
  product_hover: sent.ranked(),
  product_touch: sent.ranked(),
  add_to_cart: {
    ...sent.product(),
    quantity: fc.integer({ min: 1, max: 10 }),
    price: fc.constantFrom('19.99', '5'),
    currency: fc.constantFrom('EUR', 'USD'),
  },
  purchase: {
    currency: fc.constantFrom('EUR', 'USD'),
    order_id: fc.stringMatching(/^[0-9]{1,12}$/),
    total_price: fc.constantFrom('19.99', '120.5'),
    line_items: fc.array(
      fc.record({
        product_id: fc.integer({ min: 1, max: 1e9 }),
        quantity: fc.integer({ min: 1, max: 5 }),
        price: fc.constantFrom('9.99', '1'),
      }),
      { minLength: 1, maxLength: 5 },
    ),
  },
  block_view: { block_id: fc.stringMatching(/^[a-z0-9-]{1,20}$/) },
  collection_view: { collection_handle: fc.stringMatching(/^[a-z0-9-]{1,40}$/) },
  content_view: sent.content(),
  content_click: { ...sent.content(), position: fc.integer({ min: 1, max: 50 }) },
  content_impression: sent.content(),
  banner_impression: sent.banner(),
  banner_click: sent.banner(),
  search: { query: word, contextual_data: fc.record({ search_source: fc.constantFrom('typed', 'autocomplete') }) },
  autocomplete: { query: fc.option(word, { nil: undefined }) },
  autocomplete_click: {
    query: fc.option(word, { nil: undefined }),
    contextual_data: fc.record({
      typed_query: fc.string({ maxLength: 20 }),
      position: fc.integer({ min: 1, max: 10 }),
      selection_source: fc.constantFrom('query', 'product', 'collection'),
    }),
  },
};
const validEvent = fc.constantFrom(...EVENT_TYPES).chain((type) =>
  fc.record(
    {
      event_type: fc.constant(type),
      event_id: fc.oneof(validUlid, fc.uuid()),
      timestamp: fc
        .date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date(RECEIVED_MS), noInvalidDate: true })
        .map((d) => d.toISOString()),
      session_id: fc.stringMatching(/^[A-Za-z0-9-]{1,36}$/),
      customer_id: fc.option(fc.stringMatching(/^[0-9]{1,12}$/), { nil: undefined }),
      attribution_token: fc.option(validUlid, { nil: undefined }),
      shopping_channel: fc.option(fc.constantFrom('web', 'app'), { nil: undefined }),
      utm_source: fc.option(fc.constantFrom('google', 'newsletter'), { nil: undefined }),
      ...typeShapes[type],
    },
    {
      requiredKeys: [
        ...(['event_type'] as any[]),
        'event_id',
        'timestamp',
        'session_id',
        ...Object.keys(typeShapes[type]).filter(
          (k) =>
            (k === 'query' && type === 'search') ||
            !['variant_id', 'block_id', 'query', 'content_handle', 'rule_id', 'web_position'].includes(k),
        ),
      ],
    },
  ),
);

const randomEvent = fc
  .record(
    {
      event_type: fc.oneof(fc.constantFrom(...EVENT_TYPES), fc.constantFrom('nope', 'constructor', 'toString'), junk),
      event_id: eventId,
      timestamp,
      session_id: anyText,
      ...FIELDS,
    },
    { requiredKeys: [] },
  )
  .chain((e) =>
    e.event_type === 'search'
      ? searchContext.map((c) => ({ ...e, contextual_data: c }))
      : e.event_type === 'autocomplete_click'
        ? acContext.map((c) => ({ ...e, contextual_data: c }))
        : fc.constant(e),
  );

/** valid events with one or two of their type's fields (or a line item's) replaced or removed */
const FIELD_ARBS: Record<string, fc.Arbitrary<unknown>> = {
  event_id: eventId,
  timestamp,
  session_id: anyText,
  ...FIELDS,
};
const typeKeys = (type: string): string[] => [
  ...Object.keys((EVENT_SCHEMAS as Record<string, { shape: Record<string, unknown> }>)[type].shape),
  'utm_source',
  'utm_medium',
  'utm_campaign',
  'utm_term',
  'utm_content',
];
const mutatedEvent = (validEvent as fc.Arbitrary<Record<string, unknown>>).chain((event) => {
  const keys = typeKeys(event.event_type as string);
  const replace = fc.subarray(keys, { minLength: 1, maxLength: 2 }).chain((ks) =>
    fc
      .tuple(
        ...ks.map((k) =>
          fc.oneof(
            FIELD_ARBS[k] ?? anyText,
            k === 'contextual_data' ? fc.oneof(searchContext, acContext) : fc.constant(undefined),
          ),
        ),
      )
      .map((vs) => {
        const out: Record<string, unknown> = { ...event };
        ks.forEach((k, i) => {
          if (vs[i] === undefined) delete out[k];
          else out[k] = vs[i];
        });
        return out;
      }),
  );
  const items = event.line_items as Record<string, unknown>[] | undefined;
  if (!items) return replace;
  const item = fc
    .tuple(fc.constantFrom('product_id', 'variant_id', 'quantity', 'price'), fc.nat(items.length - 1))
    .chain(([k, i]) =>
      fc.option((lineItem as fc.Arbitrary<Record<string, unknown>>).map((li) => li[k])).map((v) => ({ k, i, v })),
    )
    .map(({ k, i, v }) => ({
      ...event,
      line_items: items.map((it, j) => (j === i ? { ...it, [k]: v === null ? undefined : v } : it)),
    }));
  return fc.oneof(replace, item);
});
const anyEvent = fc.oneof(mutatedEvent, mutatedEvent, randomEvent);

const serverArb: fc.Arbitrary<ServerFields> = fc.record({
  store_id: fc.oneof(
    fc.stringMatching(/^[a-z0-9-]{1,20}$/),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }),
  ),
  received_at: fc.constant(RECEIVED),
  geo_country: fc.option(fc.constantFrom('GB', 'DE')),
  geo_region: fc.option(fc.constantFrom('ENG', 'BY')),
  geo_city: fc.option(fc.constantFrom('london', 'münchen', 'são paulo')),
  device_type: fc.constantFrom('mobile', 'tablet', 'desktop', 'bot'),
  browser: fc.option(fc.constantFrom('Mobile Safari', 'Chrome')),
  os: fc.option(fc.constantFrom('iOS', 'Android')),
  is_bot: fc.boolean(),
  inferred_channel: fc.constantFrom('web', 'app'),
});

// ------------------------------------------------------------------------------------------------

const TEXT_EDGES = [
  '',
  ' ',
  'a',
  ' a ',
  '\ud800',
  'é',
  '🙂',
  ...[63, 64, 65, 127, 128, 129, 254, 255, 256].map((n) => 'x'.repeat(n)),
  ` ${'y'.repeat(255)} `,
  ` ${'y'.repeat(128)} `,
];
const JUNK = [null, true, 0, 1, -1, 1.5, {}, [], ['a']];
const ID_EDGES = [
  1,
  0,
  -1,
  1.5,
  2 ** 53 - 1,
  2 ** 53,
  '1',
  '01',
  '000',
  ' 12 ',
  '1'.repeat(20),
  '1'.repeat(21),
  'gid://shopify/Product/12',
  'gid://shopify/Product/012',
  'gid://shopify/Product/0',
  'gid://x/y/',
  'gid://a1/b/3',
  'gid://shopify-b2b/Product/7',
  'gid://shopify/Product/7?v=1',
  'gid://shopify/Product/7?',
  'gid://shopify/Product/7 ?v',
  'gid://shop ify/Product/7',
  '12a',
];
const INT_EDGES = [
  -1,
  0,
  1,
  2,
  99_999,
  100_000,
  100_001,
  1.5,
  '1',
  ' 2 ',
  '-0',
  '0',
  '1e2',
  '12345678901',
  '1234567890',
  '',
  '0x10',
  '100001',
  '100000',
];
const DEC_EDGES = [
  0,
  19.99,
  1e-7,
  5e-7,
  0.1234565,
  1e15,
  1e15 - 1,
  999999999999999.9,
  -1,
  -0,
  '1',
  '1.1234567',
  '1.123456',
  '1234567890123456',
  '123456789012345',
  ' 2.5 ',
  '.5',
  '1.',
  '-1',
  'x',
];
const CUR_EDGES = ['EUR', 'eur', ' usd ', 'EU', 'EURO', 'ÄÖÜ', 'e1r'];
const ULID_EDGES = [
  '01JD0000000000000000000000',
  '01jd0000000000000000000000',
  ' 01JD0000000000000000000000 ',
  '01JD000000000000000000000',
  '01JD00000000000000000000000',
  '01JD000000000000000000000I',
  '123e4567-e89b-12d3-a456-426614174000',
  '123E4567-E89B-12D3-A456-426614174000',
  '123e4567e89b12d3a456426614174000',
];
const TS_EDGES = [
  '2026-05-01T11:00:00.000Z',
  '2026-05-01T11:00:00Z',
  '2026-05-01T11:00:00',
  '2026-05-01T11:00',
  '2026-05-01T11:00:00.123456789',
  '2026-05-01T13:00:00+02:00',
  '2026-05-01',
  'Fri, 01 May 2026 11:00:00 GMT',
  '2026-02-30T00:00:00Z',
  '2026-01-01T24:00:00Z',
  '1969-12-31T23:59:59.999Z',
  '1970-01-01T00:00:00.000Z',
  '9999-12-31T23:59:59.999Z',
  '+010000-01-01T00:00:00Z',
  ' 2026-05-01T11:00:00Z ',
  'x'.repeat(65),
  RECEIVED_MS,
  RECEIVED_MS + SKEW,
  RECEIVED_MS + SKEW + 1,
  0,
  -1,
  1.7,
  253402300799999,
  253402300800000,
];
function boundaryValues(key: string): unknown[] {
  if (key === 'event_id' || key === 'banner_id') return [...ULID_EDGES, ...JUNK];
  if (key === 'timestamp') return [...TS_EDGES, ...JUNK];
  if (['product_id', 'variant_id', 'content_id'].includes(key)) return [...ID_EDGES, ...JUNK];
  if (['customer_id', 'order_id'].includes(key)) return [...ID_EDGES, ...TEXT_EDGES, ...JUNK];
  if (['position', 'web_position', 'mobile_position', 'quantity'].includes(key)) return [...INT_EDGES, ...JUNK];
  if (['price', 'total_price'].includes(key)) return [...DEC_EDGES, ...JUNK];
  if (key === 'currency') return [...CUR_EDGES, ...JUNK];
  if (key === 'shopping_channel') return ['web', 'app', 'WEB', '', ...JUNK];
  if (key === 'banner_mode') return ['inject', 'overtake', 'Inject', '', ...JUNK];
  if (key === 'content_type') return ['article', 'page', 'Page', '', ...JUNK];
  if (key === 'event_type') return [...EVENT_TYPES, 'nope', 'constructor', ...JUNK];
  if (key === 'contextual_data') return [{}, { a: 1, '1': [2] }, { search_source: 'typed' }, ...JUNK];
  return [...TEXT_EDGES, ...JUNK];
}
const SERVERS: ServerFields[] = [
  {
    store_id: 'store-1',
    received_at: RECEIVED,
    geo_country: 'GB',
    geo_region: 'ENG',
    geo_city: 'london',
    device_type: 'mobile',
    browser: 'Mobile Safari',
    os: 'iOS',
    is_bot: false,
    inferred_channel: 'web',
  },
  {
    store_id: 'магазин',
    received_at: RECEIVED,
    geo_country: null,
    geo_region: null,
    geo_city: null,
    device_type: 'bot',
    browser: null,
    os: null,
    is_bot: true,
    inferred_channel: 'app',
  },
];

/** what the intake's reference path produces for one event, or why it takes another route */
function reference(raw: unknown, server: ServerFields) {
  const parsed = parseEvent(raw);
  if (!parsed.ok) return { kind: 'rejected' as const };
  const latest = RECEIVED_MS + SKEW;
  if (Date.parse(parsed.event.timestamp) > latest) return { kind: 'clamped' as const };
  const value = codec.encode(TOPIC, enrichEvent(parsed.event, server));
  return {
    kind: 'ok' as const,
    value,
    eventId: parsed.event.event_id,
    key: Buffer.from(`${server.store_id}:${parsed.event.session_id}`),
  };
}

/** the event as prepare sees it: through JSON text and the same secure parse */
function asReceived(event: unknown): Record<string, unknown> {
  const text = JSON.stringify({ events: [event] });
  return (
    sjson.parse(text, null, { protoAction: 'remove', constructorAction: 'remove' }) as {
      events: Record<string, unknown>[];
    }
  ).events[0];
}

function fast(raw: Record<string, unknown>, server: ServerFields) {
  const w = new ByteWriter(64);
  w.pos = 3; // not at the buffer's start, as inside a batch
  const r = writeFastEvent(raw, requestBlock(schemaId, server), RECEIVED_MS + SKEW, w);
  if (!r) {
    expect(w.pos).toBe(3);
    return undefined;
  }
  return {
    value: Buffer.from(w.buf.subarray(3, w.pos)),
    eventId: r.eventId,
    key: Buffer.from(`${server.store_id}:${r.sessionId}`),
  };
}

describe('beacon fast path ≡ zod + enrichEvent + avsc', () => {
  it('knows the events schema it writes', () => {
    expect(fastPathSupports(JSON.stringify(VALUE_SCHEMAS.events))).toBe(true);
    const changed = structuredClone(VALUE_SCHEMAS.events) as { fields: { name: string; type: unknown }[] };
    changed.fields.splice(3, 0, { name: 'extra', type: 'string' });
    expect(fastPathSupports(changed)).toBe(false);
    const retyped = structuredClone(VALUE_SCHEMAS.events) as { fields: { name: string; type: unknown }[] };
    retyped.fields[18].type = ['null', 'long'];
    expect(fastPathSupports(retyped)).toBe(false);
  });

  it('answers only what the reference path accepts, with the same bytes, event_id and key (any input)', () => {
    const seen = { fast: 0, ok: 0, rejected: 0 };
    fc.assert(
      fc.property(anyEvent, serverArb, (event, server) => {
        const raw = asReceived(event);
        const ref = reference(raw, server);
        const got = fast(raw, server);
        seen[ref.kind === 'ok' ? 'ok' : 'rejected']++;
        if (!got) return;
        seen.fast++;
        expect(ref.kind).toBe('ok');
        if (ref.kind !== 'ok') return;
        expect(got.value.toString('hex')).toBe(ref.value.toString('hex'));
        expect(got.eventId).toBe(ref.eventId);
        expect(got.key.equals(ref.key)).toBe(true);
      }),
      { numRuns: RUNS },
    );
    // the generators reach both sides and the fast path takes most valid events
    expect(seen.ok).toBeGreaterThan(RUNS / 20);
    expect(seen.rejected).toBeGreaterThan(RUNS / 4);
    expect(seen.fast).toBeGreaterThan(seen.ok / 2);
  });

  it('takes every event of every type as storefronts send them, with the reference bytes', () => {
    fc.assert(
      fc.property(validEvent, serverArb, (event, server) => {
        const raw = asReceived(event);
        const ref = reference(raw, server);
        expect(ref.kind).toBe('ok');
        const got = fast(raw, server);
        expect(got).toBeDefined();
        if (ref.kind !== 'ok' || !got) return;
        expect(got.value.toString('hex')).toBe(ref.value.toString('hex'));
        expect(got.key.equals(ref.key)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('agrees on the boundary values of every field of every type, one field at a time', () => {
    let hits = 0;
    let cases = 0;
    for (const type of EVENT_TYPES) {
      const bases = fc.sample(
        validEvent.filter((e) => e.event_type === type),
        { numRuns: 2, seed: 42 },
      ) as Record<string, unknown>[];
      const event =
        bases[0] ??
        (fc.sample(
          validEvent.filter((e) => e.event_type === type),
          1,
        )[0] as Record<string, unknown>);
      const variants: Record<string, unknown>[] = [];
      for (const key of typeKeys(type)) {
        variants.push(Object.fromEntries(Object.entries(event).filter(([k]) => k !== key)));
        for (const v of boundaryValues(key)) variants.push({ ...event, [key]: v });
      }
      if (Array.isArray(event.line_items)) {
        for (const key of ['product_id', 'variant_id', 'quantity', 'price']) {
          for (const v of [undefined, ...boundaryValues(key)])
            variants.push({
              ...event,
              line_items: [event.line_items[0], { ...(event.line_items[0] as object), [key]: v }],
            });
        }
        for (const n of [0, 1, 250, 251])
          variants.push({
            ...event,
            line_items: Array.from({ length: n }, () => event.line_items && (event.line_items as unknown[])[0]),
          });
      }
      if (type === 'search')
        for (const v of ['typed', 'autocomplete', 'Typed', '', null, 1])
          variants.push({ ...event, contextual_data: { x: 1, search_source: v } });
      if (type === 'autocomplete_click') {
        for (const key of ['typed_query', 'position', 'selection_source']) {
          for (const v of [
            undefined,
            ...boundaryValues(key === 'typed_query' ? 'query' : key === 'position' ? 'position' : 'block_id'),
          ]) {
            variants.push({ ...event, contextual_data: { ...(event.contextual_data as object), [key]: v } });
          }
        }
      }
      for (const variant of variants) {
        for (const server of SERVERS) {
          cases++;
          const raw = asReceived(variant);
          const ref = reference(raw, server);
          const got = fast(raw, server);
          if (!got) continue;
          hits++;
          expect(ref.kind, JSON.stringify(variant)).toBe('ok');
          if (ref.kind !== 'ok') continue;
          expect(got.value.toString('hex'), JSON.stringify(variant)).toBe(ref.value.toString('hex'));
          expect(got.key.equals(ref.key)).toBe(true);
        }
      }
    }
    expect(cases).toBeGreaterThan(5_000);
    expect(hits).toBeGreaterThan(cases / 4);
  });

  it('leaves clamped timestamps to the reference path', () => {
    const server = {
      store_id: 's',
      received_at: RECEIVED,
      geo_country: null,
      geo_region: null,
      geo_city: null,
      device_type: 'desktop',
      browser: null,
      os: null,
      is_bot: false,
      inferred_channel: 'web',
    } as const;
    const raw = asReceived({
      event_id: '01JD0000000000000000000000',
      event_type: 'autocomplete',
      timestamp: RECEIVED_MS + SKEW + 1,
      session_id: 'x',
    });
    expect(reference(raw, server).kind).toBe('clamped');
    expect(fast(raw, server)).toBeUndefined();
    const edge = asReceived({
      event_id: '01JD0000000000000000000000',
      event_type: 'autocomplete',
      timestamp: RECEIVED_MS + SKEW,
      session_id: 'x',
    });
    expect(fast(edge, server)?.value.equals((reference(edge, server) as { value: Buffer }).value)).toBe(true);
  });
});
