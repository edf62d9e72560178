// Text search: POST /search/{searchQuery}/prepare, POST /search/{searchQuery}/execute and
// POST /search/feedback, on the search engine (search/engine.ts) over the in-process catalog, the
// per-store text index and the learned evidence; behind the results cache, with the Link preload header.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { newUlid } from '../common/ids.ts';
import {
  ErrorBodySchema,
  ResultEnvelopeSchema,
  SearchExecuteBodySchema,
  SearchFeedbackBodySchema,
  SearchFeedbackResponseSchema,
  SearchPrepareBodySchema,
  SearchPrepareResponseSchema,
  SearchQueryParamsSchema,
} from '../../schemas/storefront.ts';
import type { SearchFeedbackRecord } from '../../schemas/feedback.ts';
import type { Logger } from '../common/logger.ts';
import type { StoreDirectory } from '../store-config/api.ts';
import { StorefrontError } from './errors.ts';
import type { StorefrontRequestState } from './frame.ts';
import { decodeAnswer, encodeAnswer, sendAnswer } from './results/answer.ts';
import { cachedOrComputed, type ResultsCache } from './results/cache.ts';
import type { CatalogIndex } from './results/catalog.ts';
import type { ResultsInput } from './results/engine.ts';
import { linkHeader, preloadSettings } from './results/preload.ts';
import { foldText } from './search/analyze.ts';
import { executeSearch, planFor, type SearchDeps } from './search/engine.ts';
import type { LearnedIndex } from './search/learned.ts';
import { contextOf, type SearchContextRecord, type SearchState, sdkPolls } from './search/prepared.ts';
import type { SemanticProvider } from './search/semantic.ts';
import { textIndexOf } from './search/text-index.ts';

export interface SearchRoutesOptions {
  catalog: CatalogIndex;
  learned: LearnedIndex;
  semantic: SemanticProvider;
  directory: StoreDirectory;
  cache: ResultsCache | null;
  state: SearchState;
  /** writes a feedback record to the log and resolves once Kafka acknowledged it */
  recordFeedback: (record: SearchFeedbackRecord) => Promise<void>;
  logger: Logger;
}

const CACHE_HEADER = 'x-service-results-cache';
/** how long execute waits for an unready prepared search before processing normally (SDK < 1.0.0) */
const PREPARED_WAIT_MS = 1_000;

/** what a search request event, headers and feedback need besides the envelope (results/answer.ts) */
interface SearchMeta {
  productIds: string[];
  link: string | null;
  total: number;
  sortOrderCode: string;
  details: Record<string, unknown>;
  context: SearchContextRecord;
}

export async function searchRoutes(host: FastifyInstance, opts: SearchRoutesOptions): Promise<void> {
  const app = host.withTypeProvider<ZodTypeProvider>();
  const { state } = opts;

  async function inputOf(sf: StorefrontRequestState): Promise<ResultsInput> {
    return {
      catalog: await opts.catalog.get(sf.store.storeId),
      view: sf.view,
      dir: opts.directory,
      rc: sf.context,
      now: Date.now(),
    };
  }

  async function depsOf(input: ResultsInput): Promise<{ deps: SearchDeps; learnedVersion: string }> {
    const learned = await opts.learned.get(input.view.storeId).catch((err: Error) => {
      opts.logger.warn({ err: err.message, store: input.view.storeId }, 'search: learned stage unavailable (degraded)');
      return null;
    });
    return {
      deps: { text: textIndexOf(input.catalog), learned, semantic: opts.semantic },
      learnedVersion: learned ? String(learned.version) : 'degraded',
    };
  }

  app.post(
    '/search/:searchQuery/prepare',
    {
      config: {
        kind: 'prepare',
        links: {
          202: {
            executePrepared: {
              operationId: 'executeSearch',
              description: 'Execute the prepared search: the same query with its `search_id`.',
              parameters: { searchQuery: '$request.path.searchQuery' },
              requestBody: { search_id: '$response.body#/search_id' },
            },
            ratePrepared: {
              operationId: 'searchFeedback',
              description: 'Rate the search by its `search_id`.',
              requestBody: { search_id: '$response.body#/search_id' },
            },
          },
        },
      },
      schema: {
        operationId: 'prepareSearch',
        summary: 'Prepare a search',
        description:
          'Starts query understanding (spelling, synonym and learned expansions, intent modifiers) in the background and answers 202 with a `search_id` at once; send it to execute within 15 minutes.',
        params: SearchQueryParamsSchema,
        body: SearchPrepareBodySchema,
        response: { 202: SearchPrepareResponseSchema },
      },
    },
    async (req, reply) => {
      const sf = req.storefront as StorefrontRequestState;
      const store = sf.store.storeId;
      const query = req.params.searchQuery;
      const id = newUlid();
      const startedAt = Date.now();
      await state.start(store, id, query);
      sf.event = { query, normalized_query: foldText(query), search_id: id };
      // the background work: the request does not wait for it
      setImmediate(() => {
        void (async () => {
          const input = await inputOf(sf);
          const { deps } = await depsOf(input);
          // degraded (the learned stage unavailable): a literal plan is not worth keeping for 15 minutes
          // (it would outlive the outage); execute processes normally, fully once the stage is back
          if (deps.learned === null) return state.abandon(store, id);
          await state.complete(store, id, planFor(input, query, deps), startedAt);
        })().catch(async (err: Error) => {
          opts.logger.warn({ err: err.message, store }, 'search: prepare failed; execute will process normally');
          await state.abandon(store, id).catch(() => undefined);
        });
      });
      return reply.code(202).send({ search_id: id });
    },
  );

  app.post(
    '/search/:searchQuery/execute',
    {
      config: {
        kind: 'search',
        links: {
          200: {
            rateSearch: {
              operationId: 'searchFeedback',
              description: 'Rate this search by its attributionToken.',
              requestBody: { search_id: '$response.body#/attributionToken' },
            },
            similarToFirst: {
              operationId: 'similarProducts',
              description: 'Products similar to the first result.',
              parameters: { searchProductId: '$response.body#/results/0/id' },
            },
          },
        },
      },
      schema: {
        operationId: 'executeSearch',
        summary: 'Search products',
        description:
          'The result envelope for a text query: keyword relevance with learned expansions, search rules, ranking rules and redirects (`_meta`, `_workflow`). With `search_id` the prepared understanding is used; not ready and `X-SDK-Client` ≥ 1.0.0 → 425 with `Retry-After`. Headers: `X-Service-Results-Cache` and `Link` image preloads.',
        params: SearchQueryParamsSchema,
        body: SearchExecuteBodySchema,
        response: {
          200: ResultEnvelopeSchema,
          425: ErrorBodySchema.describe(
            'The prepared search is not ready yet (SDK clients 1.0.0 and later); retry after `Retry-After` seconds.',
          ),
        },
      },
    },
    async (req, reply) => {
      const sf = req.storefront as StorefrontRequestState;
      const store = sf.store.storeId;
      const query = req.params.searchQuery;
      const { search_id: searchId, ...body } = req.body;
      let prepared = searchId ? await state.get(store, searchId) : null;
      if (prepared?.state === 'pending') {
        if (sdkPolls(req.headers['x-sdk-client'] as string | undefined))
          throw new StorefrontError(
            425,
            'search_not_ready',
            'The prepared search is not ready yet; retry shortly.',
            [],
            {
              'retry-after': '1',
            },
          );
        const until = Date.now() + PREPARED_WAIT_MS;
        while (prepared?.state === 'pending' && Date.now() < until) {
          await new Promise((r) => setTimeout(r, 25));
          prepared = await state.get(store, searchId as string);
        }
      }
      const plan = prepared?.state === 'ready' && prepared.query === query ? prepared.plan : null;
      const input = await inputOf(sf);
      const { deps, learnedVersion } = await depsOf(input);
      const key = opts.cache
        ? opts.cache.key(
            store,
            `${input.catalog.version}.${sf.view.generation}.${learnedVersion}`,
            'search',
            query,
            body,
            sf.context,
          )
        : null;
      const compute = (): string => {
        const r = executeSearch(input, query, body, deps, plan);
        const settings = preloadSettings(sf.store, body.responseOptions);
        if (settings) r.envelope._meta.imagePreloads = { srcsetSizes: settings.srcsetSizes };
        const meta: SearchMeta = {
          productIds: r.productIds,
          link: settings ? linkHeader(r.images, sf.store, settings) : null,
          total: r.envelope.totalResults,
          sortOrderCode: r.sortOrderCode,
          details: r.details,
          context: contextOf(r.plan, (r.details.expansions as string[] | undefined) ?? []),
        };
        return encodeAnswer(meta, r.envelope);
      };
      const { value, hit } = await cachedOrComputed(opts.cache, key, 'search', compute, decodeAnswer<SearchMeta>);
      reply.header(CACHE_HEADER, hit ? 'HIT' : 'MISS');
      const { meta } = value;
      if (meta.link) reply.header('link', meta.link);
      // what feedback on this search will record, under the prepared id and this request's token
      void state
        .remember(store, searchId ? [searchId, req.id] : [req.id], meta.context)
        .catch((err: Error) => opts.logger.warn({ err: err.message }, 'search: context not stored'));
      sf.event = {
        query,
        normalized_query: meta.context.normalized_query,
        search_id: searchId ?? null,
        sort_order_code: meta.sortOrderCode,
        result_product_ids: meta.productIds,
        result_count: meta.productIds.length,
        total_results: meta.total,
        page: body.pagination?.page ?? 1,
        limit: body.pagination?.limit ?? 24,
        cache_hit: hit,
        details_json: Object.keys(meta.details).length ? JSON.stringify(meta.details) : null,
      };
      return sendAnswer(req, reply, value, req.id);
    },
  );

  app.post(
    '/search/feedback',
    {
      config: { kind: 'feedback' },
      schema: {
        operationId: 'searchFeedback',
        summary: 'Rate a search',
        description:
          'Records a shopper rating, comment and per-product feedback against a search (a prepare `search_id`, or an execute attributionToken). Within 15 minutes of the search its query, expansions and intent-modifier actions are stored with it. Answers 201 once the record is durably in the log.',
        body: SearchFeedbackBodySchema,
        response: { 201: SearchFeedbackResponseSchema },
      },
    },
    async (req, reply) => {
      const sf = req.storefront as StorefrontRequestState;
      const store = sf.store.storeId;
      const b = req.body;
      const context = await state.context(store, b.search_id).catch(() => null);
      const id = newUlid();
      const record: SearchFeedbackRecord = {
        feedback_id: id,
        store_id: store,
        search_id: b.search_id,
        received_at: new Date().toISOString(),
        rating: b.rating ?? null,
        text_feedback: b.text_feedback ?? null,
        product_feedback: (b.product_feedback ?? []).map((p) => ({
          product_id: String(p.product_id),
          rating: p.rating ?? null,
          feedback: p.feedback ?? null,
        })),
        session_id: sf.context.identity.sessionId,
        customer_id: sf.context.identity.customerId,
        has_search_context: context !== null,
        query: context?.query ?? null,
        normalized_query: context?.normalized_query ?? null,
        expanded_queries: context?.expanded_queries ?? [],
        intent_modifiers_json: context ? JSON.stringify(context.intent_modifiers) : null,
      };
      try {
        await opts.recordFeedback(record);
      } catch (err) {
        opts.logger.warn({ err: (err as Error).message, store }, 'search feedback: not written to the log');
        throw new StorefrontError(503, 'unavailable', 'Feedback cannot be recorded right now; retry later.', [], {
          'retry-after': '5',
        });
      }
      sf.event = {
        search_id: b.search_id,
        query: context?.query ?? null,
        normalized_query: context?.normalized_query ?? null,
        details_json: JSON.stringify({ feedback_id: id, rating: b.rating ?? null }),
      };
      return reply.code(201).send({ id, search_id: b.search_id, recorded: true as const });
    },
  );
}
