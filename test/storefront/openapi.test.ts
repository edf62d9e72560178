// The OpenAPI document served at /api/storefront/v1/openapi.json: generated from the routes the plugin
// registers (each route's zod schemas), valid OpenAPI 3.1 (checked by a standard validator against the
// official 3.1 schema). A route declared once inside the plugin is validated, serialized and documented.
import { createBlockServices } from '../../services/storefront/blocks/services.ts';
import { Validator } from '@seriousme/openapi-schema-validator';
import { CatalogIndex } from '../../services/storefront/results/catalog.ts';
import { privateDb } from '../helpers/chdb.ts';
import Fastify, { type FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PaginationSchema, SortOrderSchema, StorefrontBodySchema } from '../../schemas/storefront.ts';
import { parseTrustedProxies } from '../../services/common/enrich.ts';
import { createLogger } from '../../services/common/logger.ts';
import { AutocompleteIndex } from '../../services/storefront/autocomplete/index.ts';
import { STOREFRONT_PREFIX, storefrontPlugin } from '../../services/storefront/plugin.ts';
import { createRateLimiter } from '../../services/storefront/rate-limit.ts';
import { createSearchServices, noFeedbackLog } from '../../services/storefront/search/services.ts';
import { StoreViews } from '../../services/storefront/store-view.ts';
import { type Harness, MemoryDirectory, type RedisServer, startHarness, startRedis } from './harness.ts';

let redis: RedisServer;
let h: Harness;
let doc: Record<string, any>;

beforeAll(async () => {
  redis = await startRedis();
  h = await startHarness(redis.url);
  const r = await h.app.inject({ method: 'GET', url: `${STOREFRONT_PREFIX}/openapi.json` });
  expect(r.statusCode).toBe(200);
  doc = r.json();
});
afterAll(async () => {
  await h?.close();
  await redis?.stop();
});

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const res = await validator.validate(structuredClone(doc));
    expect(res.errors ?? []).toEqual([]);
    expect(res.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('describes autocomplete and sort orders from the zod schemas, with the error body and auth', () => {
    const complete = doc.paths['/search/complete'].get;
    const query = complete.parameters.find((p: { name: string }) => p.name === 'query');
    expect(query).toMatchObject({ in: 'query', required: false, schema: { type: 'string', maxLength: 255 } });
    expect(complete.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/AutocompleteResponse',
    });
    expect(doc.components.schemas.AutocompleteResponse.required).toEqual([
      'matchedQueries',
      'originalQuery',
      'normalizedQuery',
      '_meta',
    ]);
    for (const s of ['401', '402', '422', '429']) {
      expect(complete.responses[s].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    }
    expect(doc.components.schemas.Error.properties.error.required).toEqual(['code', 'message', 'fields']);
    expect(doc.paths['/sort-orders'].get.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/SortOrdersResponse',
    });
    expect(doc.components.securitySchemes.storefrontToken).toEqual({
      type: 'apiKey',
      in: 'header',
      name: 'X-Storefront-Access-Token',
    });
    expect(doc.paths['/openapi.json'].get.security).toEqual([]);
    // the shared request objects, for the body endpoints
    expect(doc.components.schemas.Identity.properties.companyLocationId).toMatchObject({
      type: 'string',
      pattern: expect.any(String),
    });
    expect(doc.components.schemas.Context.properties.productsInCart.items).toEqual({
      $ref: '#/components/schemas/CartItem',
    });
    expect(doc.components.schemas.Pagination.properties.page).toMatchObject({ minimum: 1, maximum: 100 });
  });

  it('documents browse and facets with their request and response schemas', () => {
    const browse = doc.paths['/browse/{collection_handle}'].post;
    expect(browse.operationId).toBe('browseCollection');
    expect(browse.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/BrowseRequest',
    });
    expect(browse.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/ResultEnvelope',
    });
    expect(browse.responses['404']).toBeDefined();
    const facets = doc.paths['/{collection_handle}/facets'].post;
    expect(facets.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/FacetsRequest',
    });
    expect(facets.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/FacetsResponse',
    });
    for (const name of ['FilterGroup', 'DiscountEntitlement', 'ProductRecord', 'Banner', 'FacetDisplayEntry'])
      expect(doc.components.schemas[name], name).toBeDefined();
  });

  it('documents exactly the routes the plugin registered, relative to its prefix, with the frame headers', async () => {
    const routes = h.app
      .printRoutes({ commonPrefix: false })
      .split('\n')
      .filter((l) => l.includes(`${STOREFRONT_PREFIX}/`) && /\((GET|POST)/.test(l))
      .map((l) => l.slice(l.indexOf(STOREFRONT_PREFIX) + STOREFRONT_PREFIX.length).split(' ')[0])
      .map((path) => path.replace(/:([A-Za-z_]+)/g, '{$1}'))
      .sort();
    expect(Object.keys(doc.paths).sort()).toEqual(routes);
    expect(doc.servers).toEqual([{ url: STOREFRONT_PREFIX }]);
    expect(doc.paths['/sort-orders'].get.operationId).toBe('listSortOrders');
    const r429 = doc.paths['/sort-orders'].get.responses['429'];
    expect(Object.keys(r429.headers).sort()).toEqual(['retry-after', 'x-request-id', 'x-service-build']);
    // zod's global registry holds every module's schemas; the document keeps the storefront's only
    expect(Object.keys(doc.components.schemas).filter((n) => /^(Catalog|Order)/.test(n))).toEqual([]);
    // the document is served as it is generated (one generation, cached)
    const again = await h.app.inject({ method: 'GET', url: `${STOREFRONT_PREFIX}/openapi.json` });
    expect(again.json()).toEqual(doc);
  });
});

describe('a new endpoint is one declaration', () => {
  let app: FastifyInstance;
  let token: string;
  const BodySchema = StorefrontBodySchema.extend({
    pagination: PaginationSchema.optional(),
    codes: z.array(z.string().min(2)).max(3),
  });
  const ResponseSchema = z
    .object({ sortOrders: z.array(SortOrderSchema), page: z.int() })
    .meta({ id: 'PickedSortOrders', description: 'The picked sort orders.' });

  beforeAll(async () => {
    const directory = new MemoryDirectory();
    ({ token } = directory.addStore());
    const views = new StoreViews(directory);
    const redisClient = new (await import('ioredis')).Redis(redis.url);
    const rateLimiter = createRateLimiter(redisClient, {
      storePerSec: 1000,
      storeBurst: 1000,
      ipPerSec: 1000,
      ipBurst: 1000,
      timeoutMs: 200,
    });
    app = Fastify();
    await app.register(
      async (sf) => {
        await storefrontPlugin(sf, {
          directory,
          views,
          rateLimiter,
          trustedProxies: parseTrustedProxies('127.0.0.0/8'),
          bodyLimit: 16 * 1024,
          logger: createLogger('openapi-test', 'silent'),
          build: 'openapi-test',
          autocomplete: new AutocompleteIndex({ minRegionQueries: 3 }),
          catalog: new CatalogIndex({
            db: await privateDb('storefront_openapi'),
            logger: createLogger('openapi-test', 'silent'),
          }),
          resultsCache: null,
          search: await createSearchServices({
            db: await privateDb('storefront_openapi'),
            redis: redisClient,
            logger: createLogger('openapi-test', 'silent'),
            recordFeedback: noFeedbackLog,
          }),
          blocks: await createBlockServices({
            db: await privateDb('storefront_openapi'),
            logger: createLogger('openapi-test', 'silent'),
          }),
        });
        // the whole cost of the endpoint: this declaration
        sf.withTypeProvider<ZodTypeProvider>().post(
          '/sort-orders/pick',
          {
            config: { kind: 'search' },
            schema: {
              operationId: 'pickSortOrders',
              summary: 'Pick sort orders',
              body: BodySchema,
              response: { 200: ResponseSchema },
            },
          },
          async (req) => ({
            sortOrders: req.body.codes.map((code) => ({ code, nickname: code.toUpperCase(), secret: 'dropped' })),
            page: req.body.pagination?.page ?? 1,
          }),
        );
      },
      { prefix: STOREFRONT_PREFIX },
    );
    app.addHook('onClose', async () => {
      await rateLimiter.close();
      views.close();
      redisClient.disconnect();
    });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
  });

  const pick = (body: unknown) =>
    app.inject({
      method: 'POST',
      url: `${STOREFRONT_PREFIX}/sort-orders/pick`,
      headers: { 'x-storefront-access-token': token, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });

  it('validates the body with the declared schema: 422 naming each field, in the storefront error body', async () => {
    const r = await pick({ codes: ['x', 'newest'], pagination: { page: 0 }, context: { currency: 'dollars' } });
    expect(r.statusCode).toBe(422);
    expect(r.json()).toEqual({
      error: {
        code: 'validation_failed',
        message: 'The request is invalid; see error.fields.',
        fields: expect.arrayContaining([
          { path: 'codes[0]', message: expect.any(String) },
          { path: 'pagination.page', message: expect.any(String) },
          { path: 'context.currency', message: 'expected an ISO 4217 code' },
        ]),
      },
    });
    expect(r.json().error.fields).toHaveLength(3);
    expect(r.headers['x-service-build']).toBe('openapi-test');
  });

  it('types and serializes the answer through the response schema (undeclared properties are not sent)', async () => {
    const r = await pick({ codes: ['newest'], pagination: { page: 2 }, identity: { sessionId: 's1' } });
    expect(r.statusCode).toBe(200);
    expect(r.body).toBe('{"sortOrders":[{"code":"newest","nickname":"NEWEST"}],"page":2}');
  });

  it('appears in the document with its body, its response and the body-only error responses', async () => {
    const d = (await app.inject({ method: 'GET', url: `${STOREFRONT_PREFIX}/openapi.json` })).json();
    const res = await new Validator().validate(structuredClone(d));
    expect(res.errors ?? []).toEqual([]);
    const op = d.paths['/sort-orders/pick'].post;
    expect(op.operationId).toBe('pickSortOrders');
    const body = op.requestBody.content['application/json'].schema;
    expect(body.properties.identity).toEqual({ $ref: '#/components/schemas/Identity' });
    expect(body.properties.context).toEqual({ $ref: '#/components/schemas/Context' });
    expect(body.required).toEqual(['codes']);
    expect(op.responses['200']).toMatchObject({
      description: 'The picked sort orders.',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/PickedSortOrders' } } },
    });
    expect(Object.keys(op.responses).sort()).toEqual(['200', '401', '402', '403', '413', '415', '422', '429']);
    expect(d.components.schemas.PickedSortOrders.required).toEqual(['sortOrders', 'page']);
  });
});
