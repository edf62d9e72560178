// Hostile bodies the OpenAPI document cannot express, against the running storefront API (fast-check):
// filter groups nested far past the two documented levels, arrays at and past their limits, unicode and
// broken percent-encoding in path segments, GID-shaped identities, numbers at 2^53 and 2^64, malformed
// multipart. Every answer is a 2xx or a 4xx with the error body (a 422 names a field), never a 5xx.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { stack } from '../helpers/stack.ts';
import { createTestStore, SAMPLE_BLOCK_ID, sampleItems } from '../helpers/stores.ts';

let token: string;
let base: string;
const RUNS = Number(process.env.HOSTILE_RUNS ?? 40);

beforeAll(async () => {
  ({ token } = await createTestStore({ name: 'hostile storefront', items: sampleItems() }));
  base = `${stack().httpUrl}/api/storefront/v1`;
});

type Answer = { status: number; body: { error?: { code: string; fields: { path: string }[] } } | null; text: string };

async function call(
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'x-storefront-access-token': token, ...headers },
    body,
  });
  const text = await res.text();
  let parsed: Answer['body'] = null;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: res.status, body: parsed, text };
}

/** a 2xx, or a 4xx with the storefront's error body (a 422 naming at least one field); never a 5xx */
function expectHandled(a: Answer, what: string) {
  expect(a.status, `${what} → ${a.status} ${a.text.slice(0, 300)}`).toBeLessThan(500);
  // known gap (docs/decisions.md, Reliability): a path that does not percent-decode is refused by Fastify's
  // router before any plugin, with Fastify's own 400 body
  if (a.status === 400 && (a.body as { code?: string } | null)?.code === 'FST_ERR_BAD_URL') return;
  if (a.status >= 400) {
    expect(a.body?.error?.code, `${what} → ${a.text.slice(0, 300)}`).toEqual(expect.any(String));
    if (a.status === 422) expect(a.body?.error?.fields?.length, `${what} → ${a.text.slice(0, 300)}`).toBeGreaterThan(0);
  }
}

const POST_PATHS = [
  '/browse/shoes',
  '/shoes/facets',
  '/search/boots/execute',
  '/search/boots/prepare',
  `/blocks/${SAMPLE_BLOCK_ID}/products`,
  '/search/product/4242',
  '/search/content/boots/execute',
];

/** a filter group nested `depth` levels deep (the schema allows two), as JSON text (JSON.stringify would
 * overflow the test's own stack) */
function nested(depth: number, leaf: Record<string, unknown>): string {
  const l = JSON.stringify(leaf);
  let g = `{"conditional":"AND","expressions":[${l}]}`;
  for (let i = 1; i < depth; i++) g = `{"conditional":"${i % 2 ? 'OR' : 'AND'}","expressions":[${g},${l}]}`;
  return g;
}

const hugeNumber = fc.constantFrom(
  2 ** 53,
  2 ** 53 + 1,
  2 ** 64,
  -(2 ** 64),
  1e308,
  -1e308,
  5e-324,
  -0,
  Number.MAX_SAFE_INTEGER,
);
const hugeNumberText = fc.constantFrom(
  '18446744073709551616',
  '1e400',
  '-1e400',
  '1' + '0'.repeat(400),
  '0.' + '0'.repeat(400) + '1',
);

describe('hostile storefront bodies', () => {
  it('filter groups nested far past the two documented levels answer 2xx or 4xx, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...POST_PATHS),
        fc.integer({ min: 1, max: 3000 }),
        fc.record({
          property: fc.constantFrom('vendor', 'price', 'tags', '__proto__', 'constructor'),
          operator: fc.constantFrom('eq', 'in', 'gt', 'between'),
          values: fc.array(fc.oneof(fc.string(), hugeNumber), { maxLength: 3 }),
        }),
        async (path, depth, leaf) => {
          const a = await call('POST', path, `{"filter_group":${nested(depth, leaf)}}`);
          expectHandled(a, `${path} depth ${depth}`);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('arrays at and past their limits (cart, viewed, facets, attributes) answer 2xx or 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...POST_PATHS),
        fc.constantFrom(
          'productsInCart',
          'productsViewed',
          'productsPurchased',
          'priorSearches',
          'facets',
          'attributes',
          'tags',
        ),
        fc.constantFrom(0, 1, 99, 100, 101, 249, 250, 251, 5000, 40_000),
        async (path, field, n) => {
          const item =
            field === 'facets'
              ? 'vendor'
              : field === 'tags'
                ? 'x'
                : field === 'attributes'
                  ? 'title'
                  : { id: '1', productId: 1, query: 'q' };
          const arr = Array.from({ length: n }, () => item);
          const body =
            field === 'facets' || field === 'attributes'
              ? { [field]: arr }
              : field === 'tags'
                ? { context: { customer: { tags: arr } } }
                : { context: { [field]: arr } };
          expectHandled(await call('POST', path, JSON.stringify(body)), `${path} ${field}×${n}`);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('unicode, NUL, lone surrogates and broken percent-encoding in path segments answer 2xx or 4xx', async () => {
    const segment = fc.oneof(
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).map(encodeURIComponent),
      fc
        .string({ unit: 'binary', minLength: 1, maxLength: 40 })
        .map((s) => encodeURIComponent(s.replace(/[\uD800-\uDFFF]/g, 'x'))),
      fc.constantFrom(
        '%ED%A0%80',
        '%C0%AF',
        '%FF%FE',
        '%00',
        '%',
        '%E2%82',
        '..%2F..%2Fetc',
        '%2e%2e',
        'a'.repeat(3000),
        '%F0%9F%92%A9'.repeat(300),
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          '/browse/$',
          '/$/facets',
          '/search/$/execute',
          '/search/$/prepare',
          '/blocks/$/products',
          '/search/product/$',
          '/search/content/$/execute',
          '/search/complete?query=$',
        ),
        segment,
        async (pattern, seg) => {
          const path = pattern.replace('$', seg);
          const method = pattern.startsWith('/search/complete') ? 'GET' : 'POST';
          expectHandled(
            await call(method, path, method === 'POST' ? '{}' : undefined),
            `${method} ${path.slice(0, 120)}`,
          );
        },
      ),
      { numRuns: RUNS * 2 },
    );
  });

  it('GID-shaped identities and numbers at 2^53 and 2^64 answer 2xx or 4xx', async () => {
    const gid = fc.oneof(
      fc.constantFrom(
        'gid://shopify/CompanyLocation/18446744073709551616',
        'gid://shopify/Customer/-1',
        'gid://',
        'gid://shopify//',
        'gid://shopify/Product/1e400',
      ),
      fc.tuple(fc.string(), fc.string(), fc.string()).map(([a, b, c]) => `gid://${a}/${b}/${c}`),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...POST_PATHS), gid, hugeNumber, hugeNumberText, async (path, g, n, nText) => {
        const body = {
          identity: { companyLocationId: g, customerId: g, sessionId: g },
          pagination: { page: n, limit: n },
          context: {
            customer: { numberOfOrders: n, totalSpent: n },
            freeShippingThreshold: n,
            productsInCart: [{ productId: n, quantity: n, price: n }],
          },
        };
        expectHandled(await call('POST', path, JSON.stringify(body)), `${path} ${g} ${n}`);
        // numbers JSON.stringify cannot write (past 2^64, past double range) as raw text
        const raw = `{"pagination":{"page":${nText},"limit":${nText}},"context":{"productsInCart":[{"productId":${nText}}]}}`;
        expectHandled(await call('POST', path, raw), `${path} raw ${nText.slice(0, 30)}`);
      }),
      { numRuns: RUNS },
    );
    for (const id of ['18446744073709551616', '-1', '0', '1e400', '9007199254740993'])
      expectHandled(await call('POST', `/search/product/${id}`, '{}'), `/search/product/${id}`);
    for (const limit of ['18446744073709551616', '-0', '1e400', 'NaN', 'Infinity'])
      expectHandled(await call('GET', `/search/complete?query=a&limit=${limit}`), `complete limit=${limit}`);
  });

  it('a multipart upload without a boundary or cut short is refused with a 4xx, not a 500', async () => {
    for (const [type, body] of [
      ['multipart/form-data', 'junk'],
      ['multipart/form-data; boundary=', 'junk'],
      ['multipart/form-data; boundary=x', 'junk'],
      [
        'multipart/form-data; boundary=x',
        '--x\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n\r\nabc',
      ],
    ] as const) {
      const a = await call('POST', '/images/upload', body, { 'content-type': type });
      expectHandled(a, `upload ${type}`);
      expect(a.status).toBe(422);
    }
  });

  it('bodies that are not objects, or JSON at the edges of the parser, answer 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...POST_PATHS),
        fc.oneof(
          fc.json(),
          fc.constantFrom(
            '',
            'null',
            '[]',
            '"x"',
            '{"__proto__":{"polluted":1}}',
            '{"constructor":{"prototype":{"x":1}}}',
            '{'.repeat(5000),
            `{"a":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
            '\uFEFF{}',
            '{"a":"\\ud800"}',
          ),
        ),
        async (path, raw) => expectHandled(await call('POST', path, raw), `${path} ${raw.slice(0, 60)}`),
      ),
      { numRuns: RUNS },
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
