// Recommendation blocks (POST /blocks/{blockId}/products) and similar products
// (POST /search/product/{searchProductId}), on the in-process catalog, the relations index (pair
// aggregates, live from `agg:related`), the learned search evidence and the similar-products index;
// behind the results cache (keyed by the catalog, configuration and relations versions), with one request
// event each (kinds `blocks`, `similar`).
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  BlockBodySchema,
  BlockParamsSchema,
  BlockResponseSchema,
  SimilarBodySchema,
  SimilarParamsSchema,
} from '../../schemas/blocks.ts';
import { ErrorBodySchema, ResultEnvelopeSchema } from '../../schemas/storefront.ts';
import type { Logger } from '../common/logger.ts';
import type { StoreDirectory } from '../store-config/api.ts';
import { blockProducts } from './blocks/engine.ts';
import type { RelationsIndex, StoreRelations } from './blocks/relations.ts';
import type { StorefrontRequestState } from './frame.ts';
import { decodeAnswer, encodeAnswer, sendAnswer } from './results/answer.ts';
import { cachedOrComputed, type ResultsCache } from './results/cache.ts';
import type { CatalogIndex } from './results/catalog.ts';
import type { ResultsInput } from './results/engine.ts';
import { linkHeader, preloadSettings } from './results/preload.ts';
import type { LearnedIndex, StoreLearned } from './search/learned.ts';
import { similarProducts } from './similar/engine.ts';
import type { DiscoveryServices } from './images/services.ts';
import type { StoreImages } from './images/index.ts';
import type { StoreContent } from './content/index.ts';
import { type ImageSimilarity, imageSimilarityOf, type SimilarPrecompute, similarOf } from './similar/index.ts';

export interface BlockRoutesOptions {
  catalog: CatalogIndex;
  directory: StoreDirectory;
  cache: ResultsCache | null;
  relations: RelationsIndex;
  learned: LearnedIndex;
  /** the image index (look-alikes for similar products) and the content index (related content) */
  discovery: Pick<DiscoveryServices, 'images' | 'content' | 'provider'>;
  precompute?: SimilarPrecompute;
  logger: Logger;
}

const CACHE_HEADER = 'x-service-results-cache';

/** what a block or similar-products request event and headers need besides the envelope (results/answer.ts) */
interface BlockMeta {
  productIds: string[];
  total: number;
  link: string | null;
  sortOrderCode?: string;
  blockId?: string | null;
  anchorId?: string | null;
}

export async function blockRoutes(host: FastifyInstance, opts: BlockRoutesOptions): Promise<void> {
  const app = host.withTypeProvider<ZodTypeProvider>();
  const similarities = new WeakMap<StoreImages, ImageSimilarity>();

  async function inputOf(sf: StorefrontRequestState): Promise<ResultsInput> {
    const catalog = await opts.catalog.get(sf.store.storeId);
    return { catalog, view: sf.view, dir: opts.directory, rc: sf.context, now: Date.now() };
  }

  /**
   * What the answers read besides the catalog: the pair relations, the learned search evidence, image
   * features, content. Each unavailable part (ClickHouse down) degrades to the others, never a 5xx.
   */
  async function behaviourOf(input: ResultsInput): Promise<{
    relations: StoreRelations | null;
    learned: StoreLearned | null;
    images: ImageSimilarity | null;
    /** the store's image index version (cache keys: an image described turns answers over) */
    imagesVersion: number | null;
    content: StoreContent | null;
  }> {
    const storeId = input.view.storeId;
    const warn = (what: string) => (err: Error) => {
      opts.logger.warn({ err: err.message, store: storeId }, `blocks: ${what} unavailable (degraded)`);
      return null;
    };
    const [relations, learned, storeImages, content] = await Promise.all([
      opts.relations.get(storeId).catch(warn('relations')),
      opts.learned.get(storeId).catch(warn('learned evidence')),
      opts.discovery.images.get(storeId).catch(warn('image features')),
      opts.discovery.content.get(storeId).catch(warn('content')),
    ]);
    let images: ImageSimilarity | null = null;
    if (storeImages) {
      images = similarities.get(storeImages) ?? imageSimilarityOf(storeImages, opts.discovery.provider);
      similarities.set(storeImages, images);
    }
    opts.precompute?.track(input.catalog, images);
    return { relations, learned, images, imagesVersion: storeImages?.version ?? null, content };
  }

  const versionOf = (input: ResultsInput, sf: StorefrontRequestState, b: Awaited<ReturnType<typeof behaviourOf>>) =>
    `${input.catalog.version}.${sf.view.generation}.${b.relations?.version ?? 'x'}.${b.learned?.version ?? 'x'}.${similarOf(input.catalog).version}.${b.imagesVersion ?? 'x'}.${b.content ? 'c' : 'x'}`;

  const cached = (key: string | null, kind: string, compute: () => string) =>
    cachedOrComputed(opts.cache, key, kind, compute, decodeAnswer<BlockMeta>);

  app.post(
    '/blocks/:blockId/products',
    {
      config: { kind: 'blocks' },
      schema: {
        operationId: 'blockProducts',
        summary: 'Products of a recommendation block',
        description:
          "The products of a configured block for its anchor (`anchor_id` for product, article and collection anchors; the cart's products; the shopper's context), by the block's strategy, first matching rule, safeguards and fallback chain. Timestamps are Unix seconds. A theme metaobject handle (prefixed) matches no block: 200 with no products.",
        params: BlockParamsSchema,
        body: BlockBodySchema,
        response: {
          200: BlockResponseSchema,
          404: ErrorBodySchema.describe('No published block with this id.'),
        },
      },
    },
    async (req, reply) => {
      const sf = req.storefront as StorefrontRequestState;
      const blockId = req.params.blockId;
      const body = req.body;
      const input = await inputOf(sf);
      const behaviour = await behaviourOf(input);
      const key = opts.cache
        ? opts.cache.key(sf.store.storeId, versionOf(input, sf, behaviour), 'blocks', blockId, body, sf.context)
        : null;
      const { value, hit } = await cached(key, 'blocks', () => {
        const r = blockProducts(input, blockId, body, {
          ...behaviour,
          similar: similarOf(input.catalog),
        });
        const meta: BlockMeta = {
          productIds: r.productIds,
          total: r.envelope.totalResults,
          link: null,
          blockId: r.blockId,
          anchorId: r.anchorId,
        };
        return encodeAnswer(meta, r.envelope);
      });
      reply.header(CACHE_HEADER, hit ? 'HIT' : 'MISS');
      const { meta } = value;
      sf.event = {
        block_id: meta.blockId ?? blockId,
        anchor_id: meta.anchorId ?? null,
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
    '/search/product/:searchProductId',
    {
      config: { kind: 'similar' },
      schema: {
        operationId: 'similarProducts',
        summary: 'Products similar to a product',
        description:
          'Products like the given one by text, attributes and image features (precomputed per product, refreshed when the product changes and daily; computed live when none exist, with the same parameters and results), blended with what shoppers viewed together. `_meta.similar.source` says which. Headers: `X-Service-Results-Cache` and `Link` image preloads.',
        params: SimilarParamsSchema,
        body: SimilarBodySchema,
        response: { 200: ResultEnvelopeSchema, 404: ErrorBodySchema.describe('No such product on this channel.') },
      },
    },
    async (req, reply) => {
      const sf = req.storefront as StorefrontRequestState;
      const productId = req.params.searchProductId;
      const body = req.body;
      const input = await inputOf(sf);
      const behaviour = await behaviourOf(input);
      const key = opts.cache
        ? opts.cache.key(sf.store.storeId, versionOf(input, sf, behaviour), 'similar', productId, body, sf.context)
        : null;
      const { value, hit } = await cached(key, 'similar', () => {
        const r = similarProducts(input, productId, body, behaviour);
        const settings = preloadSettings(sf.store, body.responseOptions);
        if (settings) r.envelope._meta.imagePreloads = { srcsetSizes: settings.srcsetSizes };
        const meta: BlockMeta = {
          productIds: r.productIds,
          total: r.envelope.totalResults,
          link: settings ? linkHeader(r.images, sf.store, settings) : null,
          sortOrderCode: r.sortOrderCode,
        };
        return encodeAnswer(meta, r.envelope);
      });
      reply.header(CACHE_HEADER, hit ? 'HIT' : 'MISS');
      const { meta } = value;
      if (meta.link) reply.header('link', meta.link);
      sf.event = {
        anchor_id: productId,
        sort_order_code: meta.sortOrderCode ?? null,
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
}
