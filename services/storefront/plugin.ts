// The storefront API as one encapsulated Fastify plugin (mounted at /api/storefront/v1 by the module, or
// alone in tests): the frame (auth, rate limit, identity/context, request events, errors), the
// autocomplete and sort-order endpoints and the OpenAPI document generated from the same schemas.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  AUTOCOMPLETE_MAX_QUERY,
  AutocompleteQuerySchema,
  type AutocompleteResponse,
  AutocompleteResponseSchema,
  type SortOrdersResponse,
  SortOrdersResponseSchema,
} from '../../schemas/storefront.ts';
import type { AutocompleteIndex } from './autocomplete/index.ts';
import { codePointLength, sanitizeQuery } from './autocomplete/text.ts';
import { sendError, validationError } from './errors.ts';
import { type FrameOptions, installFrame } from './frame.ts';
import { buildOpenApi, type Operation } from './openapi.ts';
import { redirectFor } from './store-view.ts';

export const STOREFRONT_PREFIX = '/api/storefront/v1';

export interface StorefrontPluginOptions extends FrameOptions {
  autocomplete: AutocompleteIndex;
}

/** a query under this many characters (code points) after sanitizing counts as empty */
export const MIN_QUERY_CHARS = 2;

/**
 * What the route validates: the documented schema, with the 255-character limit counted in code points
 * (like the 2-character minimum and JSON Schema's `maxLength` in the OpenAPI document) rather than zod's
 * UTF-16 units, so an emoji counts as one character.
 */
const AutocompleteQuery = AutocompleteQuerySchema.extend({
  query: z
    .string()
    .refine((q) => codePointLength(q) <= AUTOCOMPLETE_MAX_QUERY, {
      message: `at most ${AUTOCOMPLETE_MAX_QUERY} characters`,
    })
    .optional(),
});

export const OPERATIONS: Operation[] = [
  {
    method: 'get',
    path: '/search/complete',
    operationId: 'autocomplete',
    summary: 'Query suggestions',
    description:
      "Ranked query-text suggestions from the store's trending searches: prefix matches first, then similar queries. With no effective query (omitted, or under 2 characters after sanitizing) the top trending queries. Brand curation applies. Returns no products.",
    query: AutocompleteQuerySchema,
    responses: { 200: { description: 'Suggestions.', schema: AutocompleteResponseSchema } },
  },
  {
    method: 'get',
    path: '/sort-orders',
    operationId: 'listSortOrders',
    summary: "The store's sort orders",
    description: '`relevance` is always included; the others are configured per store.',
    responses: { 200: { description: 'Sort orders.', schema: SortOrdersResponseSchema } },
  },
  {
    method: 'get',
    path: '/openapi.json',
    operationId: 'openapi',
    summary: 'This OpenAPI 3.1 document',
    public: true,
    responses: { 200: { description: 'The document.' } },
  },
];

export async function storefrontPlugin(app: FastifyInstance, opts: StorefrontPluginOptions): Promise<void> {
  installFrame(app, opts);
  const index = opts.autocomplete;

  app.get('/search/complete', { config: { kind: 'autocomplete' } }, async (req, reply) => {
    const sf = req.storefront!;
    const parsed = AutocompleteQuery.safeParse(req.query);
    if (!parsed.success) return sendError(reply, validationError(parsed.error));
    const raw = parsed.data.query;
    const sanitized = raw === undefined ? '' : sanitizeQuery(raw);
    const effective = codePointLength(sanitized) >= MIN_QUERY_CHARS;
    const normalized = effective ? sanitized.toLowerCase() : null;
    const rc = sf.context;
    const matched = index.suggest(sf.store.storeId, {
      query: normalized,
      country: rc.geo.country ?? rc.detectedCountry,
      mode: sf.store.autocompleteMode,
      limit: parsed.data.limit,
      curation: sf.view.curation,
    });
    const redirect = normalized ? redirectFor(sf.view, normalized) : undefined;
    sf.event = {
      query: raw ?? null,
      normalized_query: normalized,
      result_count: matched.length,
      total_results: matched.length,
      limit: parsed.data.limit ?? null,
      details_json: redirect ? JSON.stringify({ redirect }) : null,
    };
    const body: AutocompleteResponse = {
      matchedQueries: matched,
      originalQuery: effective ? (raw as string) : null,
      normalizedQuery: normalized,
      _meta: redirect ? { redirect: { url: redirect } } : {},
    };
    return body;
  });

  app.get('/sort-orders', async (req): Promise<SortOrdersResponse> => {
    return { sortOrders: req.storefront!.view.sortOrders };
  });

  let doc: string | undefined;
  app.get('/openapi.json', { config: { public: true } }, async (_req, reply) => {
    doc ??= JSON.stringify(buildOpenApi(OPERATIONS, { version: '1.0.0', serverUrl: STOREFRONT_PREFIX }));
    return reply.type('application/json; charset=utf-8').send(doc);
  });
}
