// Browse and collection facets (POST /browse/{collection_handle}, POST /{collection_handle}/facets), served
// from the in-process catalog index through the results engine (results/engine.ts), behind the results
// cache (results/cache.ts) and with the image preload Link header (results/preload.ts).
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  BrowseBodySchema,
  CollectionHandleParamsSchema,
  ErrorBodySchema,
  FacetsBodySchema,
  FacetsResponseSchema,
  ResultEnvelopeSchema,
} from '../../schemas/storefront.ts';
import type { StoreDirectory } from '../store-config/api.ts';
import type { StorefrontRequestState } from './frame.ts';
import { decodeAnswer, encodeAnswer, sendAnswer } from './results/answer.ts';
import { cachedOrComputed, type ResultsCache } from './results/cache.ts';
import type { CatalogIndex } from './results/catalog.ts';
import { browse, collectionFacets, type ResultsInput } from './results/engine.ts';
import { scheduleEpoch } from './results/merch.ts';
import { visibilityEpoch } from './results/ranked.ts';
import { linkHeader, preloadSettings } from './results/preload.ts';

export interface BrowseRoutesOptions {
  catalog: CatalogIndex;
  directory: StoreDirectory;
  cache: ResultsCache | null;
}

const CACHE_HEADER = 'x-service-results-cache';

const NOT_FOUND = ErrorBodySchema.describe(
  "No such collection (or unpublished, or outside the B2B buyer's catalog), or an unknown or expired preview_id.",
);

/** what a browse request event and headers need besides the envelope (results/answer.ts) */
interface BrowseMeta {
  productIds: string[];
  link: string | null;
  total: number;
  sortOrderCode: string;
  ruleId: string | null;
}

async function inputOf(sf: StorefrontRequestState, opts: BrowseRoutesOptions): Promise<ResultsInput> {
  return {
    catalog: await opts.catalog.get(sf.store.storeId),
    view: sf.view,
    dir: opts.directory,
    rc: sf.context,
    now: Date.now(),
  };
}

function cacheKey(
  sf: StorefrontRequestState,
  input: ResultsInput,
  opts: BrowseRoutesOptions,
  kind: string,
  handle: string,
  body: unknown,
): string | null {
  if (!opts.cache) return null;
  // answers also change when a product's scheduled publication arrives, and browse answers when a
  // merchandising rule's or banner's schedule starts or ends
  const ruleHandle = input.catalog.collection(handle)?.view.handle ?? handle;
  const epoch = kind === 'browse' ? `.${scheduleEpoch(input.dir, sf.store.storeId, ruleHandle, input.now)}` : '';
  const published = visibilityEpoch(input.catalog, input.now / 1000);
  return opts.cache.key(
    sf.store.storeId,
    `${input.catalog.version}.${sf.view.generation}.${published}${epoch}`,
    kind,
    handle,
    body,
    sf.context,
  );
}

export async function browseRoutes(host: FastifyInstance, opts: BrowseRoutesOptions): Promise<void> {
  const app = host.withTypeProvider<ZodTypeProvider>();

  app.post(
    '/browse/:collection_handle',
    {
      config: {
        kind: 'browse',
        links: {
          200: {
            facetsOfCollection: {
              operationId: 'collectionFacets',
              description: 'The facets of the same collection.',
              parameters: { collection_handle: '$request.path.collection_handle' },
            },
            similarToFirst: {
              operationId: 'similarProducts',
              description: 'Products similar to the first product of the page.',
              parameters: { searchProductId: '$response.body#/results/0/id' },
            },
          },
        },
      },
      schema: {
        operationId: 'browseCollection',
        summary: 'Browse a collection',
        description:
          "A merchandised, filterable, sortable, paginated collection page. Sort: `sort_order_code`, else the collection's default: the sort order configured as its default (`default_for_collections`), else its `service.default_sort_order` metafield, else the collection order (`relevance`). `dynamicLinking` pins products on page 1; the active merchandising rule (or `preview_id`'s) adds pins, boosts and banners (`appliedRules`). Headers: `X-Service-Results-Cache` (HIT|MISS) and `Link` image preloads.",
        params: CollectionHandleParamsSchema,
        body: BrowseBodySchema,
        response: { 200: ResultEnvelopeSchema, 404: NOT_FOUND },
      },
    },
    async (req, reply) => {
      const sf = req.storefront as StorefrontRequestState;
      const handle = req.params.collection_handle;
      const body = req.body;
      const input = await inputOf(sf, opts);
      // previews are never cached and never recorded
      const key = body.preview_id ? null : cacheKey(sf, input, opts, 'browse', handle, body);
      const compute = (): string => {
        const r = browse(input, handle, body);
        const settings = preloadSettings(sf.store, body.responseOptions);
        if (settings) r.envelope._meta.imagePreloads = { srcsetSizes: settings.srcsetSizes };
        if (r.preview) sf.noEvent = true;
        const meta: BrowseMeta = {
          productIds: r.productIds,
          link: settings ? linkHeader(r.images, sf.store, settings) : null,
          total: r.envelope.totalResults,
          sortOrderCode: r.sortOrderCode,
          ruleId: r.ruleId,
        };
        return encodeAnswer(meta, r.envelope);
      };
      const { value, hit } = await cachedOrComputed(opts.cache, key, 'browse', compute, decodeAnswer<BrowseMeta>);
      reply.header(CACHE_HEADER, hit ? 'HIT' : 'MISS');
      const { meta } = value;
      if (meta.link) reply.header('link', meta.link);
      sf.event = {
        ...eventFields(meta.sortOrderCode, meta.ruleId),
        collection_handle: handle,
        result_product_ids: meta.productIds,
        result_count: meta.productIds.length,
        total_results: meta.total,
        page: body.pagination?.page ?? 1,
        limit: body.pagination?.limit ?? 24,
        cache_hit: hit,
      };
      return sendAnswer(req, reply, value, req.id);
    },
  );

  app.post(
    '/:collection_handle/facets',
    {
      config: { kind: 'facets' },
      schema: {
        operationId: 'collectionFacets',
        summary: "A collection's facets",
        description:
          "Facet values and counts (`retrieveFacetCount`), numeric ranges (`includeFacetRanges`) and metaobject display entries (`enrichFacetMetaobjects`) of a collection, over the products visible on the request's channel and matching `filter_group`. No products, pagination or attributionToken.",
        params: CollectionHandleParamsSchema,
        body: FacetsBodySchema,
        response: { 200: FacetsResponseSchema, 404: NOT_FOUND },
      },
    },
    async (req, reply) => {
      const sf = req.storefront as StorefrontRequestState;
      const handle = req.params.collection_handle;
      const input = await inputOf(sf, opts);
      const key = cacheKey(sf, input, opts, 'facets', handle, req.body);
      const compute = () => JSON.stringify(collectionFacets(input, handle, req.body));
      const { value, hit } = await cachedOrComputed(opts.cache, key, 'facets', compute, (bytes) => bytes);
      reply.header(CACHE_HEADER, hit ? 'HIT' : 'MISS');
      sf.event = { collection_handle: handle, cache_hit: hit };
      return reply.type('application/json; charset=utf-8').send(value as never);
    },
  );
}

function eventFields(sortOrderCode: string | null, ruleId: string | null) {
  return {
    sort_order_code: sortOrderCode,
    details_json: ruleId ? JSON.stringify({ rule_id: ruleId }) : null,
  };
}
