// Engagement event contracts: every type accepted with its required fields and rejected without each of
// them (with the field path), normalization of ids/timestamps/money, and server fields never trusted.
import { describe, expect, it } from 'vitest';
import {
  EVENT_TYPES,
  EngagementEventSchema,
  EnrichedEventSchema,
  type EventType,
  enrichEvent,
  parseEvent,
  rejectedEvent,
  RejectedEventSchema,
  SERVER_FIELDS,
  type ServerFields,
} from '../../schemas/events.ts';

const common = {
  event_id: '01HZX3V1J5K8QW2E4R6T8Y0V2J',
  timestamp: '2026-05-06T07:08:09.010Z',
  session_id: 'sess-abc',
};

/** per type: the extra fields a minimal valid event needs, and the paths that are required */
const CASES: Record<EventType, { fields: Record<string, unknown>; required: string[] }> = {
  product_click: { fields: { product_id: 101, position: 1 }, required: ['product_id', 'position'] },
  product_view: { fields: { product_id: 101 }, required: ['product_id'] },
  product_impression: { fields: { product_id: 101, position: 4 }, required: ['product_id', 'position'] },
  product_hover: { fields: { product_id: 101, position: 2 }, required: ['product_id', 'position'] },
  product_touch: { fields: { product_id: 101, position: 3 }, required: ['product_id', 'position'] },
  add_to_cart: { fields: { product_id: 101 }, required: ['product_id'] },
  purchase: {
    fields: { currency: 'EUR', line_items: [{ product_id: 101, quantity: 1, price: '10.00' }] },
    required: ['currency', 'line_items', 'line_items.0.product_id', 'line_items.0.quantity', 'line_items.0.price'],
  },
  block_view: { fields: {}, required: [] },
  collection_view: { fields: { collection_handle: 'summer-sale' }, required: ['collection_handle'] },
  content_view: { fields: { content_type: 'article', content_id: 77 }, required: ['content_type', 'content_id'] },
  content_click: { fields: { content_type: 'page', content_id: 78 }, required: ['content_type', 'content_id'] },
  content_impression: { fields: { content_type: 'article', content_id: 79 }, required: ['content_type', 'content_id'] },
  banner_impression: { fields: { banner_id: '01HZX3V1J5K8QW2E4R6T8Y0V2A' }, required: ['banner_id'] },
  banner_click: { fields: { banner_id: '01HZX3V1J5K8QW2E4R6T8Y0V2B' }, required: ['banner_id'] },
  search: {
    fields: { query: 'red shoes', contextual_data: { search_source: 'typed' } },
    required: ['query', 'contextual_data', 'contextual_data.search_source'],
  },
  autocomplete: { fields: {}, required: [] },
  autocomplete_click: {
    fields: { contextual_data: { typed_query: 'red sh', position: 2, selection_source: 'query_suggestion' } },
    required: [
      'contextual_data',
      'contextual_data.typed_query',
      'contextual_data.position',
      'contextual_data.selection_source',
    ],
  },
};

const COMMON_REQUIRED = ['event_id', 'event_type', 'timestamp', 'session_id'];

function without(obj: Record<string, unknown>, path: string): Record<string, unknown> {
  const copy = structuredClone(obj);
  const keys = path.split('.');
  let cur: any = copy;
  for (const k of keys.slice(0, -1)) cur = cur[k];
  delete cur[keys.at(-1)!];
  return copy;
}

const server: ServerFields = {
  store_id: 'store-1',
  received_at: '2026-05-06T07:08:10.000Z',
  geo_country: 'FR',
  geo_region: 'IDF',
  geo_city: 'paris',
  device_type: 'desktop',
  browser: 'Firefox',
  os: 'Linux',
  is_bot: false,
  inferred_channel: 'web',
};

describe('parseEvent', () => {
  it('covers every event type', () => {
    expect(Object.keys(CASES).sort()).toEqual([...EVENT_TYPES].sort());
  });

  describe.each(EVENT_TYPES.map((t) => [t]))('%s', (type) => {
    const valid = { ...common, event_type: type, ...CASES[type].fields };

    it('is accepted with its required fields, and the union schema agrees', () => {
      const r = parseEvent(valid);
      expect(r).toMatchObject({
        ok: true,
        event: { event_type: type, event_id: common.event_id, timestamp: common.timestamp },
      });
      expect(EngagementEventSchema.safeParse(valid).success).toBe(true);
    });

    it.each([...COMMON_REQUIRED, ...CASES[type].required].map((p) => [p]))('is rejected without %s', (path) => {
      const r = parseEvent(without(valid, path));
      expect(r).toMatchObject({ ok: false, code: 'missing_field', path });
      if (!r.ok) expect(r.reason).toContain(path);
    });

    it('builds an enriched event that matches the Kafka contract exactly', () => {
      const r = parseEvent(valid);
      if (!r.ok) throw new Error(r.reason);
      const enriched = enrichEvent(r.event, server);
      expect(EnrichedEventSchema.strict().parse(enriched)).toEqual(enriched);
      expect(enriched).toMatchObject({
        store_id: 'store-1',
        geo_city: 'paris',
        shopping_channel: 'web',
        timestamp_clamped: false,
      });
    });
  });

  it('rejects unknown types, non-objects and invalid values with a precise reason', () => {
    expect(parseEvent({ ...common, event_type: 'page_view' })).toMatchObject({
      ok: false,
      code: 'unknown_event_type',
      path: 'event_type',
      event_type: 'page_view',
    });
    expect(parseEvent({ ...common, event_type: 'constructor' })).toMatchObject({
      ok: false,
      code: 'unknown_event_type',
    });
    expect(parseEvent({ ...common, event_type: 7 })).toMatchObject({
      ok: false,
      code: 'unknown_event_type',
      event_type: null,
    });
    expect(parseEvent('hello')).toMatchObject({ ok: false, code: 'not_an_object', path: '' });
    expect(parseEvent([1])).toMatchObject({ ok: false, code: 'not_an_object' });
    expect(parseEvent(null)).toMatchObject({ ok: false, code: 'not_an_object' });

    const click = { ...common, event_type: 'product_click', product_id: 1, position: 1 };
    const invalid: [Record<string, unknown>, string][] = [
      [{ ...click, position: 0 }, 'position'],
      [{ ...click, position: 1.5 }, 'position'],
      [{ ...click, product_id: -3 }, 'product_id'],
      [{ ...click, product_id: 'abc' }, 'product_id'],
      [{ ...click, event_id: 'not-an-id' }, 'event_id'],
      [{ ...click, timestamp: 'yesterday-ish' }, 'timestamp'],
      [{ ...click, session_id: '' }, 'session_id'],
      [{ ...click, shopping_channel: 'kiosk' }, 'shopping_channel'],
      [{ ...click, contextual_data: 'x' }, 'contextual_data'],
      [{ ...common, event_type: 'content_view', content_type: 'video', content_id: 1 }, 'content_type'],
      [{ ...common, event_type: 'banner_click', banner_id: 'banner-1' }, 'banner_id'],
      [
        { ...common, event_type: 'banner_click', banner_id: '01HZX3V1J5K8QW2E4R6T8Y0V2B', banner_mode: 'popup' },
        'banner_mode',
      ],
      [
        { ...common, event_type: 'search', query: 'q', contextual_data: { search_source: 'voice' } },
        'contextual_data.search_source',
      ],
      [{ ...common, event_type: 'search', query: '   ', contextual_data: { search_source: 'typed' } }, 'query'],
      [
        { ...common, event_type: 'purchase', currency: 'EURO', line_items: [{ product_id: 1, quantity: 1, price: 1 }] },
        'currency',
      ],
      [{ ...common, event_type: 'purchase', currency: 'EUR', line_items: [] }, 'line_items'],
      [
        { ...common, event_type: 'purchase', currency: 'EUR', line_items: [{ product_id: 1, quantity: 1, price: -1 }] },
        'line_items.0.price',
      ],
    ];
    for (const [ev, path] of invalid) {
      const r = parseEvent(ev);
      expect({ path, r }).toMatchObject({ path, r: { ok: false, code: 'invalid_field', path } });
    }
  });

  it('drops server-enriched fields a client sent; the server values win', () => {
    const spoofed = {
      ...common,
      event_type: 'product_view',
      product_id: 5,
      store_id: 'someone-elses-store',
      received_at: '2000-01-01T00:00:00Z',
      geo_country: 'XX',
      geo_region: 'YY',
      geo_city: 'nowhere',
      device_type: 'bot',
      browser: 'Evil',
      os: 'EvilOS',
      is_bot: true,
      timestamp_clamped: true,
      user_agent: 'curl',
    };
    const r = parseEvent(spoofed);
    if (!r.ok) throw new Error(r.reason);
    for (const f of [...SERVER_FIELDS, 'user_agent']) expect(r.event).not.toHaveProperty(f);
    const enriched = enrichEvent(r.event, server);
    expect(enriched).toMatchObject({
      store_id: 'store-1',
      received_at: server.received_at,
      geo_country: 'FR',
      geo_region: 'IDF',
      geo_city: 'paris',
      device_type: 'desktop',
      browser: 'Firefox',
      os: 'Linux',
      is_bot: false,
      timestamp_clamped: false,
    });
  });

  it('normalizes ids, timestamps, money, channel and marketing fields', () => {
    const r = parseEvent({
      event_id: '01hzx3v1j5k8qw2e4r6t8y0v2a',
      event_type: 'add_to_cart',
      timestamp: 1767225600000,
      session_id: '  s-1  ',
      customer_id: 99887766,
      product_id: 'gid://shopify/Product/123456789',
      variant_id: '000042',
      quantity: '3',
      price: 19.999999999,
      currency: 'usd',
      shopping_channel: 'app',
      utm_source: 'newsletter',
      marketing_medium: 'email',
    });
    if (!r.ok) throw new Error(r.reason);
    expect(r.event).toMatchObject({
      event_id: '01HZX3V1J5K8QW2E4R6T8Y0V2A',
      timestamp: '2026-01-01T00:00:00.000Z',
      session_id: 's-1',
      customer_id: '99887766',
      product_id: '123456789',
      variant_id: '42',
      quantity: 3,
      price: '20',
      currency: 'USD',
      shopping_channel: 'app',
      marketing_source: 'newsletter',
      marketing_medium: 'email',
      marketing_campaign: null,
      contextual_data: {},
      attribution_token: null,
    });
    expect(enrichEvent(r.event, server).shopping_channel).toBe('app');

    const uuid = parseEvent({
      ...common,
      event_id: '3F2504E0-4F89-11D3-9A0C-0305E82C3301',
      event_type: 'product_view',
      product_id: 1,
    });
    expect(uuid).toMatchObject({ ok: true, event: { event_id: '3f2504e0-4f89-11d3-9a0c-0305e82c3301' } });

    const zones: [unknown, string][] = [
      ['2026-05-06T09:08:09+02:00', '2026-05-06T07:08:09.000Z'],
      ['2026-05-06T07:08:09', '2026-05-06T07:08:09.000Z'],
      ['2026-05-06', '2026-05-06T00:00:00.000Z'],
      ['Wed, 06 May 2026 07:08:09 GMT', '2026-05-06T07:08:09.000Z'],
      [1778051289010, '2026-05-06T07:08:09.010Z'],
    ];
    for (const [input, iso] of zones) {
      const z = parseEvent({ ...common, timestamp: input, event_type: 'product_view', product_id: 1 });
      expect(z).toMatchObject({ ok: true, event: { timestamp: iso } });
    }
  });

  it('keeps the search funnel context and other contextual data', () => {
    const r = parseEvent({
      ...common,
      event_type: 'autocomplete_click',
      query: 'red shoes',
      contextual_data: { typed_query: 'red sh', position: '2', selection_source: 'query_suggestion', panel: 'v2' },
    });
    expect(r).toMatchObject({
      ok: true,
      event: {
        query: 'red shoes',
        contextual_data: { typed_query: 'red sh', position: 2, selection_source: 'query_suggestion', panel: 'v2' },
      },
    });
  });

  it('marks a server-clamped timestamp', () => {
    const r = parseEvent({ ...common, event_type: 'product_view', product_id: 1, timestamp: '2030-01-01T00:00:00Z' });
    if (!r.ok) throw new Error(r.reason);
    const e = enrichEvent(r.event, { ...server, clamped_timestamp: server.received_at });
    expect(e).toMatchObject({ timestamp: server.received_at, timestamp_clamped: true });
  });

  it('builds rejected-event values with the reason and the raw event', () => {
    const raw = { ...common, event_type: 'product_click', product_id: 1 };
    const r = parseEvent(raw);
    if (r.ok) throw new Error('expected a rejection');
    const rej = rejectedEvent(raw, r, { store_id: 'store-1', received_at: server.received_at });
    expect(RejectedEventSchema.parse(rej)).toEqual({
      store_id: 'store-1',
      received_at: server.received_at,
      code: 'missing_field',
      reason: 'missing required field position',
      path: 'position',
      event_type: 'product_click',
      raw_json: JSON.stringify(raw),
    });
  });
});
