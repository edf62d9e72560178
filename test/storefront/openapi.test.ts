// The OpenAPI document served at /api/storefront/v1/openapi.json: valid OpenAPI 3.1 (checked by a standard
// validator against the official 3.1 schema), generated from the same zod schemas the routes use.
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../services/storefront/openapi.ts';
import { OPERATIONS, STOREFRONT_PREFIX } from '../../services/storefront/plugin.ts';

describe('OpenAPI document', () => {
  const doc = buildOpenApi(OPERATIONS, { version: '1.0.0', serverUrl: STOREFRONT_PREFIX }) as Record<string, any>;

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
});
