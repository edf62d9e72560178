// The storefront API as one encapsulated Fastify plugin (mounted at /api/storefront/v1 by the module, or
// alone in tests): the frame (auth, rate limit, identity/context, request events, errors), the
// autocomplete and sort-order endpoints, browse and facets (browse.ts), search (search.ts) and the OpenAPI document generated
// from the registered routes.
//
// Each route is declared once: its zod schemas (`querystring`, `params`, `body`, `response`) validate the
// request (a 422 naming the field, through the frame's one error handler), type the handler, serialize the
// response and document the operation (openapi.ts). See docs/storefront-api.md, "Adding an endpoint".
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  AutocompleteQuerySchema,
  AutocompleteResponseSchema,
  SortOrdersResponseSchema,
} from '../../schemas/storefront.ts';
import type { AutocompleteIndex } from './autocomplete/index.ts';
import { type BlockRoutesOptions, blockRoutes } from './blocks.ts';
import { browseRoutes } from './browse.ts';
import { contentRoutes } from './content/routes.ts';
import { imageRoutes } from './images/routes.ts';
import { type DiscoveryServices, inertDiscovery } from './images/services.ts';
import { type SearchRoutesOptions, searchRoutes } from './search.ts';
import type { ResultsCache } from './results/cache.ts';
import type { CatalogIndex } from './results/catalog.ts';
import { normalizeQuery } from '../../schemas/fields.ts';
import { codePointLength, sanitizeQuery } from './autocomplete/text.ts';
import { type FrameOptions, installFrame } from './frame.ts';
import { registerOpenApi } from './openapi.ts';
import { serializerCompiler, validatorCompiler } from './schema-compilers.ts';
import { redirectFor } from './store-view.ts';

export const STOREFRONT_PREFIX = '/api/storefront/v1';
/** the host's router must accept path parameters this long: a 255-character query, URL-encoded (each
 *  character up to 4 UTF-8 bytes as `%XX`), in `/search/{searchQuery}/execute` */
export const MAX_PARAM_LENGTH = 255 * 12;

/** what `/openapi.json` answers (sent pre-serialized; the schema documents it) */
const OpenApiDocumentSchema = z
  .looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.looseObject({}) })
  .describe('The OpenAPI 3.1 document.');

export interface StorefrontPluginOptions extends FrameOptions {
  autocomplete: AutocompleteIndex;
  /** the in-process catalog index the product-result endpoints read */
  catalog: CatalogIndex;
  /** the Redis results cache (null: every response is computed) */
  resultsCache: ResultsCache | null;
  /** text search: learned evidence, semantic provider, prepared-search state, the feedback writer */
  search: Pick<SearchRoutesOptions, 'learned' | 'semantic' | 'state' | 'recordFeedback'>;
  /** content search and image search (images/services.ts); omitted: inert (no content, no image features) */
  discovery?: DiscoveryServices;
  /** recommendation blocks and similar products: the relations index, image look-alikes, the precompute */
  blocks: Pick<BlockRoutesOptions, 'relations' | 'precompute'>;
}

/** a query under this many characters (code points) after sanitizing counts as empty */
export const MIN_QUERY_CHARS = 2;

export async function storefrontPlugin(host: FastifyInstance, opts: StorefrontPluginOptions): Promise<void> {
  installFrame(host, opts);
  host.setValidatorCompiler(validatorCompiler);
  host.setSerializerCompiler(serializerCompiler);
  await registerOpenApi(host, { version: '1.0.0' });
  const app = host.withTypeProvider<ZodTypeProvider>();
  const index = opts.autocomplete;

  app.get(
    '/search/complete',
    {
      config: { kind: 'autocomplete' },
      schema: {
        operationId: 'autocomplete',
        summary: 'Query suggestions',
        description:
          "Ranked query-text suggestions from the store's trending searches: prefix matches first, then similar queries. With no effective query (omitted, or under 2 characters after sanitizing) the top trending queries. Brand curation applies. Returns no products.",
        querystring: AutocompleteQuerySchema,
        response: { 200: AutocompleteResponseSchema },
      },
    },
    async (req) => {
      const sf = req.storefront!;
      const { query: raw, limit } = req.query;
      const sanitized = raw === undefined ? '' : sanitizeQuery(raw);
      const effective = codePointLength(sanitized) >= MIN_QUERY_CHARS;
      const normalized = effective ? normalizeQuery(sanitized) : null;
      const rc = sf.context;
      const matched = index.suggest(sf.store.storeId, {
        query: normalized,
        country: rc.geo.country ?? rc.detectedCountry,
        mode: sf.store.autocompleteMode,
        limit,
        curation: sf.view.curation,
      });
      const redirect = normalized ? redirectFor(sf.view, normalized) : undefined;
      sf.event = {
        query: raw ?? null,
        normalized_query: normalized,
        result_count: matched.length,
        total_results: matched.length,
        limit: limit ?? null,
        details_json: redirect ? JSON.stringify({ redirect }) : null,
      };
      return {
        matchedQueries: matched,
        originalQuery: effective ? (raw as string) : null,
        normalizedQuery: normalized,
        _meta: redirect ? { redirect: { url: redirect } } : {},
      };
    },
  );

  app.get(
    '/sort-orders',
    {
      schema: {
        operationId: 'listSortOrders',
        summary: "The store's sort orders",
        description: '`relevance` is always included; the others are configured per store.',
        response: { 200: SortOrdersResponseSchema },
      },
    },
    async (req) => ({ sortOrders: req.storefront!.view.sortOrders }),
  );

  await browseRoutes(host, { catalog: opts.catalog, directory: opts.directory, cache: opts.resultsCache });
  await searchRoutes(host, {
    ...opts.search,
    catalog: opts.catalog,
    directory: opts.directory,
    cache: opts.resultsCache,
    logger: opts.logger,
  });
  const discovery = opts.discovery ?? inertDiscovery();
  await blockRoutes(host, {
    ...opts.blocks,
    discovery,
    learned: opts.search.learned,
    catalog: opts.catalog,
    directory: opts.directory,
    cache: opts.resultsCache,
    logger: opts.logger,
  });
  await contentRoutes(host, { ...discovery, catalog: opts.catalog, logger: opts.logger });
  await imageRoutes(host, { ...discovery, catalog: opts.catalog, directory: opts.directory });

  // on the untyped instance: the handler sends the document pre-serialized, once generated
  let doc: string | undefined;
  host.get(
    '/openapi.json',
    {
      config: { public: true },
      schema: {
        operationId: 'openapi',
        summary: 'This OpenAPI 3.1 document',
        response: { 200: OpenApiDocumentSchema },
      },
    },
    async (_req, reply) => {
      doc ??= JSON.stringify(host.swagger());
      return reply.type('application/json; charset=utf-8').send(doc);
    },
  );
}
