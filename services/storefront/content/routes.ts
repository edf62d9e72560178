// Content search: POST /search/content/{searchQuery}/execute — articles and pages of the store (one type
// with `content_type`, else both merged into one ranking), ranked by text, image and freshness
// (content/rank.ts). An invalid body is a 422 naming the field; any failure after validation (the content
// or image index unavailable, anything unexpected) answers an empty result set with totalResults 0 and
// `_meta.degraded: "processing_failed"` — never an error (spec).
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { ContentSearchBodySchema, ContentSearchResponseSchema } from '../../../schemas/content.ts';
import { SearchQueryParamsSchema } from '../../../schemas/storefront.ts';
import type { ImageFeatureProvider, ImageFeatures } from '../../common/image-features.ts';
import type { Logger } from '../../common/logger.ts';
import type { StorefrontRequestState } from '../frame.ts';
import type { StoreImages } from '../images/index.ts';
import type { CatalogIndex } from '../results/catalog.ts';
import { foldText } from '../search/analyze.ts';
import { textIndexOf } from '../search/text-index.ts';
import type { IndexedContent, StoreContent } from './index.ts';
import { contentItemOf, contentWeights, rankContent } from './rank.ts';

export interface ContentRoutesOptions {
  catalog: CatalogIndex;
  content: { get(storeId: string): Promise<StoreContent> };
  images: { get(storeId: string): Promise<StoreImages> };
  provider: ImageFeatureProvider;
  logger: Logger;
}

const round4 = (x: number) => Math.round(x * 1e4) / 1e4;

/** products whose images stand for the query (the best keyword matches) */
export const QUERY_IMAGE_PRODUCTS = 5;

export async function contentRoutes(host: FastifyInstance, opts: ContentRoutesOptions): Promise<void> {
  const app = host.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/search/content/:searchQuery/execute',
    {
      config: { kind: 'content' },
      schema: {
        operationId: 'searchContent',
        summary: 'Search articles and pages',
        description:
          'Articles and pages matching the query (`content_type` restricts to one; omitted, both are merged). Ranked by text similarity 50 %, image similarity 20 % (the item image vs. the images of the products best matching the query) and freshness 30 %, each min-max normalized over the candidates; `tuning` changes the weights (`textualWeight`/`visualWeight` split the semantic group, `rankingWeightOverrides` sets `semantic` and `freshness`, normalized to sum 1) and `topK` the candidates re-ranked. Items with the metafield `seo.hidden` are never returned. A processing failure answers an empty result set (`totalResults` 0), never an error.',
        params: SearchQueryParamsSchema,
        body: ContentSearchBodySchema,
        response: { 200: ContentSearchResponseSchema },
      },
    },
    async (req) => {
      const sf = req.storefront as StorefrontRequestState;
      const store = sf.store.storeId;
      const query = req.params.searchQuery;
      const body = req.body;
      const contentType = body.content_type ?? null;
      const page = body.pagination?.page ?? 1;
      const limit = body.pagination?.limit ?? 24;
      const weights = contentWeights(body.tuning);
      const base = { query, contentType, page, resultsPerPage: limit, attributionToken: req.id };
      sf.event = { query, normalized_query: foldText(query), content_type: contentType, page, limit };
      try {
        const [content, catalog, images] = await Promise.all([
          opts.content.get(store),
          opts.catalog.get(store),
          weights.image > 0 ? opts.images.get(store) : null,
        ]);
        // the images of the products best matching the query's text
        let productImages: ImageFeatures[] = [];
        if (images) {
          const hits = textIndexOf(catalog).search(query, { prefix: false }).hits;
          productImages = hits
            .sort((a, b) => b.score - a.score)
            .slice(0, QUERY_IMAGE_PRODUCTS)
            .flatMap((h) => images.featuresOf('product', h.id));
        }
        const imageSimilarity = (item: IndexedContent) => {
          if (!images || productImages.length === 0) return 0;
          let best = 0;
          for (const f of images.featuresOf(item.view.content_type, item.view.content_id))
            for (const p of productImages)
              if (p.model === f.model) best = Math.max(best, opts.provider.similarity(f, p));
          return best;
        };
        const ranked = rankContent(content, query, { contentType, topK: body.tuning?.topK, weights, imageSimilarity });
        const pageItems = ranked.slice((page - 1) * limit, page * limit);
        const results = pageItems.map((r) => contentItemOf(r.item));
        sf.event = {
          ...sf.event,
          result_count: results.length,
          total_results: ranked.length,
          details_json: JSON.stringify({ content_ids: results.map((r) => String(r.content_id)) }),
        };
        return {
          ...base,
          results,
          totalResults: ranked.length,
          totalPages: Math.ceil(ranked.length / limit),
          _meta: {
            weights,
            signals: pageItems.map((r) => ({
              text: round4(r.signals.text),
              image: round4(r.signals.image),
              freshness: round4(r.signals.freshness),
              score: round4(r.score),
            })),
          },
        };
      } catch (err) {
        opts.logger.warn({ err: (err as Error).message, store }, 'content search failed: answered empty');
        sf.event = {
          ...sf.event,
          result_count: 0,
          total_results: 0,
          details_json: JSON.stringify({ degraded: 'processing_failed' }),
        };
        return {
          ...base,
          results: [],
          totalResults: 0,
          totalPages: 0,
          _meta: { weights, degraded: 'processing_failed' as const },
        };
      }
    },
  );
}
