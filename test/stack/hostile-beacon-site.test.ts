// Hostile input where no OpenAPI document applies: POST /beacon (not in any document; its shapes are the
// zod event schemas of schemas/events.ts) and the site's urlencoded forms (schemas/site.ts), with
// fast-check. The beacon answers 201 with per-event rejections, or 4xx for the batch; the forms answer
// 200, or a 4xx problem+json naming the field; never a 5xx.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { stack } from '../helpers/stack.ts';
import { createTestStore } from '../helpers/stores.ts';

const RUNS = Number(process.env.HOSTILE_RUNS ?? 40);
let token: string;

beforeAll(async () => {
  ({ token } = await createTestStore({ name: 'hostile beacon' }));
});

const EVENT_TYPES = [
  'product_view',
  'product_click',
  'search',
  'purchase',
  'add_to_cart',
  'collection_view',
  'autocomplete_click',
  'content_view',
  'banner_click',
  'no_such_type',
];
const edgeNumber = fc.constantFrom(2 ** 53, 2 ** 53 + 1, 2 ** 64, -(2 ** 64), 1e308, -1e308, 5e-324, -0, 0.5, -1);
const edgeString = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 50 }),
  fc.constantFrom(
    '',
    '\u0000',
    '\uFFFF',
    'a'.repeat(100_000),
    'gid://shopify/Product/18446744073709551616',
    '\u202E\u0301',
    '🧨'.repeat(500),
  ),
);
const anyValue = fc.oneof(
  edgeNumber,
  edgeString,
  fc.boolean(),
  fc.constant(null),
  fc.json().map((j) => JSON.parse(j) as unknown),
);

/** an event whose fields are drawn from the hostile values above (often the right names, wrong values) */
const hostileEvent = fc.record(
  {
    event_id: fc.oneof(fc.ulid(), fc.uuid(), edgeString),
    event_type: fc.oneof(fc.constantFrom(...EVENT_TYPES), edgeString),
    timestamp: fc.oneof(
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      edgeNumber,
      edgeString,
      fc.constantFrom('9999-12-31T23:59:59Z', '0000-01-01T00:00:00Z', '+275760-09-13T00:00:00Z'),
    ),
    session_id: fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), anyValue),
    product_id: fc.oneof(fc.integer(), edgeNumber, edgeString),
    position: fc.oneof(fc.integer(), edgeNumber),
    query: edgeString,
    currency: edgeString,
    line_items: fc.oneof(
      fc.array(fc.record({ product_id: anyValue, quantity: anyValue, price: anyValue }), { maxLength: 300 }),
      anyValue,
    ),
    contextual_data: fc.oneof(fc.dictionary(edgeString, anyValue, { maxKeys: 20 }), anyValue),
    store_id: edgeString,
  },
  { requiredKeys: [] },
);

async function beacon(body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${stack().httpUrl}/beacon`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-storefront-access-token': token, ...headers },
    body,
  });
  const text = await res.text();
  return {
    status: res.status,
    text,
    body: (() => {
      try {
        return JSON.parse(text);
      } catch {
        return null;
      }
    })(),
  };
}

/** a filter-free nested object `depth` levels deep, as text */
const deep = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

describe('hostile beacon batches', () => {
  it('batches of hostile events answer 201 with every event accepted or rejected by index, or a 4xx; never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hostileEvent, { minLength: 0, maxLength: 110 }), async (events) => {
        const r = await beacon(JSON.stringify({ events }));
        expect(r.status, r.text.slice(0, 300)).toBeLessThan(500);
        if (r.status === 201) {
          expect(r.body.accepted + r.body.rejected).toBe(events.length);
          for (const rej of r.body.rejections) expect(rej.index).toBeLessThan(events.length);
        } else {
          expect(r.body?.error?.code, r.text.slice(0, 300)).toEqual(expect.any(String));
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('bodies that are not batches (deep nesting, huge numbers, wrong types, bad encodings) answer 4xx', async () => {
    const raws = fc.oneof(
      fc.json(),
      fc
        .integer({ min: 1, max: 20_000 })
        .map((d) => `{"events":[{"event_type":"product_view","contextual_data":${deep(d)}}]}`),
      fc.constantFrom(
        '',
        '{',
        '[]',
        'null',
        '{"events":null}',
        '{"events":{}}',
        '{"events":[]}',
        '{"events":[1,2,3]}',
        '{"events":[{"product_id":18446744073709551616}]}',
        '{"events":[{"product_id":1e400}]}',
        '\uFEFF{"events":[]}',
        '{"__proto__":{"events":[]}}',
        `{"events":${'['.repeat(50_000)}${']'.repeat(50_000)}}`,
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        raws,
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data'),
        async (raw, type) => {
          const r = await beacon(raw, { 'content-type': type });
          expect(r.status, `${type} ${raw.slice(0, 80)} → ${r.text.slice(0, 300)}`).toBeLessThan(500);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('hostile tokens (query and header) answer 401, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 300 }),
          fc.constantFrom('sfat_', 'sfat_' + 'A'.repeat(10_000), '%00', '../../'),
        ),
        async (t) => {
          const res = await fetch(`${stack().httpUrl}/beacon?token=${encodeURIComponent(t)}`, {
            method: 'POST',
            body: '{"events":[]}',
          });
          expect(res.status).toBeLessThan(500);
          expect([401, 422]).toContain(res.status);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe("hostile submissions to the site's forms", () => {
  const FORMS = [
    '/api/integration-request',
    '/api/integration-correction',
    '/api/footer-subscribe',
    '/api/article-unlock',
    '/api/arcade/scores',
  ];
  const FIELDS = [
    'email',
    'source',
    'slug',
    'name',
    'service_name',
    'category',
    'store_url',
    'notes',
    'integration_name',
    'integration_slug',
    'details',
    'page_url',
    'player',
    'score',
    'company_website',
    '__proto__',
    'constructor',
  ];

  it('urlencoded bodies with hostile fields answer 200 or a 4xx problem naming the field; never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...FORMS),
        fc.dictionary(
          fc.oneof(fc.constantFrom(...FIELDS), fc.string({ maxLength: 10 })),
          fc.oneof(edgeString, edgeNumber.map(String)),
          { maxKeys: 12 },
        ),
        async (form, fields) => {
          const res = await fetch(`${stack().httpUrl}${form}`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams(fields).toString(),
          });
          const text = await res.text();
          expect(res.status, `${form} ${text.slice(0, 300)}`).toBeLessThan(500);
          if (res.status >= 400) {
            expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
            const body = JSON.parse(text);
            if (res.status === 400) expect(body.error.field, text).toEqual(expect.any(String));
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('raw form bodies (broken percent-encoding, repeated keys, other content types) answer 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...FORMS),
        fc.constantFrom(
          '%',
          '%ZZ',
          'email=%ED%A0%80',
          'email=a&email=b&email=c',
          'a'.repeat(20_000),
          '=&=&=',
          'email',
          '{"email":"a@b.co"}',
        ),
        fc.constantFrom(
          'application/x-www-form-urlencoded',
          'application/json',
          'text/plain',
          'multipart/form-data',
          '',
        ),
        async (form, body, type) => {
          const res = await fetch(`${stack().httpUrl}${form}`, {
            method: 'POST',
            headers: type ? { 'content-type': type } : {},
            body,
          });
          expect(res.status, `${form} ${type} ${body.slice(0, 40)} → ${(await res.text()).slice(0, 300)}`).toBeLessThan(
            500,
          );
        },
      ),
      { numRuns: RUNS },
    );
  });
});
