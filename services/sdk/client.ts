// The storefront API client: one typed method per endpoint of /api/storefront/v1. Request and response
// types are derived from the zod schemas the API itself validates and documents with (schemas/*.ts,
// `z.input` for what is sent, `z.infer` for what comes back); only types are imported, so nothing of zod
// reaches the bundle. Every method answers `{ data, error }` and never throws for an HTTP or network
// failure.
import type { z } from 'zod';
import type { BlockBodySchema, BlockResponseSchema, SimilarBodySchema } from '../../schemas/blocks.ts';
import type { ContentSearchBodySchema, ContentSearchResponseSchema } from '../../schemas/content.ts';
import type { ImageSearchBodySchema, ImageUploadResponseSchema } from '../../schemas/images.ts';
import type {
  AutocompleteResponseSchema,
  BrowseBodySchema,
  ContextSchema,
  ErrorBodySchema,
  FacetsBodySchema,
  FacetsResponseSchema,
  IdentitySchema,
  ResultEnvelopeSchema,
  SearchExecuteBodySchema,
  SearchFeedbackBodySchema,
  SearchFeedbackResponseSchema,
  SearchPrepareBodySchema,
  SearchPrepareResponseSchema,
  SortOrdersResponseSchema,
} from '../../schemas/storefront.ts';
import { SDK_NAME, SDK_VERSION } from './version.ts';

export type Context = z.input<typeof ContextSchema>;
export type Identity = z.input<typeof IdentitySchema>;
export type BrowseBody = z.input<typeof BrowseBodySchema>;
export type FacetsBody = z.input<typeof FacetsBodySchema>;
export type SearchPrepareBody = z.input<typeof SearchPrepareBodySchema>;
export type SearchExecuteBody = z.input<typeof SearchExecuteBodySchema>;
export type SearchFeedbackBody = z.input<typeof SearchFeedbackBodySchema>;
export type BlockBody = z.input<typeof BlockBodySchema>;
export type SimilarBody = z.input<typeof SimilarBodySchema>;
export type ContentSearchBody = z.input<typeof ContentSearchBodySchema>;
export type ImageSearchBody = z.input<typeof ImageSearchBodySchema>;

export type Autocomplete = z.infer<typeof AutocompleteResponseSchema>;
export type SortOrders = z.infer<typeof SortOrdersResponseSchema>;
export type Results = z.infer<typeof ResultEnvelopeSchema>;
export type Product = Results['results'][number];
export type Facets = z.infer<typeof FacetsResponseSchema>;
export type PreparedSearch = z.infer<typeof SearchPrepareResponseSchema>;
export type FeedbackReceipt = z.infer<typeof SearchFeedbackResponseSchema>;
export type BlockResults = z.infer<typeof BlockResponseSchema>;
export type ContentResults = z.infer<typeof ContentSearchResponseSchema>;
export type ImageUpload = z.infer<typeof ImageUploadResponseSchema>;

type ApiError = z.infer<typeof ErrorBodySchema>['error'];
/** the API's error (code, message, field paths), or `network_error` / `unexpected_response` from the SDK */
export interface SdkError {
  status: number;
  code: ApiError['code'] | 'network_error' | 'unexpected_response';
  message: string;
  fields: ApiError['fields'];
  /** seconds, from Retry-After (429, 503) */
  retryAfter?: number;
}
export type Result<T> =
  | { data: T; error: null; status: number; requestId: string | null }
  | { data: null; error: SdkError; status: number; requestId: string | null };

/** What a client asks of a tracker (tracking.ts implements it): the shopper's identity and context, and
 * the attribution token of each result the shopper sees next. */
export interface TrackerLink {
  identity(): Identity;
  context(): Context;
  /** a response with an attribution token: the events that follow carry it */
  attributed(token: string, source: { kind: string; query?: string; results?: number }): void;
  /** `utm_products` of the landing URL, for browse's dynamicLinking */
  dynamicLinking(): string[] | undefined;
}

export interface ClientOptions {
  /** the store's storefront access token */
  token: string;
  /** the app's origin (`https://shop-api.example`); the API prefix is added */
  baseUrl: string;
  fetch?: typeof fetch;
  /** merged into every request's `context` (an object, or a function called per request) */
  context?: Context | (() => Context);
  /** default `attributes` of product-result requests */
  attributes?: string[];
  /** default `sort_order_code` per endpoint kind */
  sorts?: { browse?: string; search?: string; block?: string };
  /** default `facets` of browse and search (with facet counts and ranges) */
  facets?: string[];
  identity?: Identity;
  /** a tracker (createTracker) whose identity/context is sent and which keeps the attribution tokens */
  tracker?: TrackerLink;
  /** `X-SDK-Client` name/version, default storefront-sdk/<version> */
  client?: string;
  /** longest total wait for a prepared search (425 polling), default 10 000 ms */
  maxPrepareWaitMs?: number;
}

export const API_PREFIX = '/api/storefront/v1';
const enc = encodeURIComponent;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Extra = { signal?: AbortSignal };

export function createClient(opts: ClientOptions) {
  const base = opts.baseUrl.replace(/\/+$/, '') + API_PREFIX;
  const doFetch = opts.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a));
  const sdkClient = opts.client ?? `${SDK_NAME}/${SDK_VERSION}`;
  const prepared = new Map<string, string>();

  function mergedContext(extra?: Context): Context | undefined {
    const fromOpts = typeof opts.context === 'function' ? opts.context() : opts.context;
    const fromTracker = opts.tracker?.context();
    if (!fromOpts && !fromTracker && !extra) return undefined;
    return { ...fromTracker, ...fromOpts, ...extra };
  }

  /** the shared body fields: identity and context; defaults for result endpoints */
  function withDefaults<B extends { context?: Context; identity?: Identity }>(body: B, kind?: string): B {
    const out: Record<string, unknown> = { ...body };
    const identity = { ...opts.tracker?.identity(), ...opts.identity, ...body.identity };
    if (Object.keys(identity).length) out.identity = identity;
    const context = mergedContext(body.context);
    if (context) out.context = context;
    if (kind) {
      if (opts.attributes && out.attributes === undefined) out.attributes = opts.attributes;
      const sort = opts.sorts?.[kind as 'browse'];
      if (sort && out.sort_order_code === undefined) out.sort_order_code = sort;
      if (opts.facets && kind !== 'block' && out.facets === undefined) {
        out.facets = opts.facets;
        out.retrieveFacetCount ??= true;
        out.includeFacetRanges ??= true;
      }
    }
    return out as B;
  }

  async function call<T>(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    extra: Extra & { form?: FormData } = {},
  ): Promise<Result<T>> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      'x-storefront-access-token': opts.token,
      'x-sdk-client': sdkClient,
    };
    let payload: string | FormData | undefined;
    if (extra.form) payload = extra.form;
    else if (body !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    let res: Response;
    try {
      res = await doFetch(base + path, { method, headers, body: payload, signal: extra.signal });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      return {
        data: null,
        status: 0,
        requestId: null,
        error: { status: 0, code: 'network_error', message, fields: [] },
      };
    }
    const requestId = res.headers.get('x-request-id');
    let parsed: unknown;
    try {
      parsed = await res.json();
    } catch {
      parsed = undefined;
    }
    if (res.ok && parsed && typeof parsed === 'object')
      return { data: parsed as T, error: null, status: res.status, requestId };
    const e = (parsed as { error?: Partial<ApiError> } | undefined)?.error;
    const retry = Number(res.headers.get('retry-after'));
    const error: SdkError = {
      status: res.status,
      code: e?.code ?? 'unexpected_response',
      message: e?.message ?? `HTTP ${res.status}`,
      fields: e?.fields ?? [],
    };
    if (Number.isFinite(retry) && res.headers.has('retry-after')) error.retryAfter = retry;
    return { data: null, error, status: res.status, requestId };
  }

  function attributed<T extends { attributionToken?: string; totalResults?: number }>(
    r: Result<T>,
    kind: string,
    query?: string,
  ): Result<T> {
    if (r.data?.attributionToken)
      opts.tracker?.attributed(r.data.attributionToken, { kind, query, results: r.data.totalResults });
    return r;
  }

  const client = {
    options: opts,

    /** GET /search/complete: query suggestions (trending queries under 2 characters) */
    autocomplete(query: string, o: Extra & { limit?: number } = {}) {
      const qs = `query=${enc(query)}${o.limit ? `&limit=${o.limit}` : ''}`;
      return call<Autocomplete>('GET', `/search/complete?${qs}`, undefined, o);
    },

    /** GET /sort-orders */
    sortOrders(o: Extra = {}) {
      return call<SortOrders>('GET', '/sort-orders', undefined, o);
    },

    /** POST /browse/{handle}; `utm_products` of the landing URL become dynamicLinking */
    async browse(handle: string, body: BrowseBody = {}, o: Extra = {}) {
      const b = withDefaults(body, 'browse');
      const linked = opts.tracker?.dynamicLinking();
      if (linked?.length && !b.dynamicLinking) b.dynamicLinking = { products: linked };
      return attributed(await call<Results>('POST', `/browse/${enc(handle)}`, b, o), 'browse');
    },

    /** POST /{handle}/facets */
    facets(handle: string, body: FacetsBody = {}, o: Extra = {}) {
      return call<Facets>('POST', `/${enc(handle)}/facets`, withDefaults(body), o);
    },

    /** POST /search/{q}/prepare: starts query understanding; a later search() of the same query uses it */
    async prepareSearch(query: string, body: SearchPrepareBody = {}, o: Extra = {}) {
      const r = await call<PreparedSearch>('POST', `/search/${enc(query)}/prepare`, withDefaults(body), o);
      if (r.data) prepared.set(query, r.data.search_id);
      return r;
    },

    /**
     * POST /search/{q}/execute. With a `search_id` (given, or from prepareSearch of the same query) a
     * 425 is waited out (Retry-After seconds) and retried, at most `maxPrepareWaitMs` in all; then the
     * search runs without it.
     */
    async search(query: string, body: SearchExecuteBody = {}, o: Extra = {}) {
      const b = withDefaults(body, 'search');
      if (!b.search_id && prepared.has(query)) b.search_id = prepared.get(query);
      prepared.delete(query);
      const deadline = Date.now() + (opts.maxPrepareWaitMs ?? 10_000);
      const path = `/search/${enc(query)}/execute`;
      let r = await call<Results>('POST', path, b, o);
      while (r.status === 425) {
        const wait = (r.error?.retryAfter ?? 1) * 1000;
        if (Date.now() + wait > deadline) {
          delete b.search_id;
          r = await call<Results>('POST', path, b, o);
          break;
        }
        await sleep(wait);
        r = await call<Results>('POST', path, b, o);
      }
      return attributed(r, 'search', query);
    },

    /** POST /search/feedback */
    searchFeedback(body: SearchFeedbackBody, o: Extra = {}) {
      return call<FeedbackReceipt>('POST', '/search/feedback', body, o);
    },

    /** POST /blocks/{blockId}/products */
    async block(blockId: string, body: BlockBody = {}, o: Extra = {}) {
      return attributed(
        await call<BlockResults>('POST', `/blocks/${enc(blockId)}/products`, withDefaults(body, 'block'), o),
        'block',
      );
    },

    /** POST /search/product/{id}: similar products */
    async similarProducts(productId: number | string, body: SimilarBody = {}, o: Extra = {}) {
      const id = String(productId).replace(/^gid:\/\/[^/]+\/Product\//, '');
      return attributed(
        await call<Results>('POST', `/search/product/${enc(id)}`, withDefaults(body, 'block'), o),
        'similar',
      );
    },

    /** POST /search/content/{q}/execute: articles and pages */
    async searchContent(query: string, body: ContentSearchBody = {}, o: Extra = {}) {
      return attributed(
        await call<ContentResults>('POST', `/search/content/${enc(query)}/execute`, withDefaults(body), o),
        'content',
        query,
      );
    },

    /** POST /images/upload (multipart): an image id for searchImage, kept 24 hours */
    uploadImage(image: Blob, o: Extra = {}) {
      const form = new FormData();
      form.append('image', image);
      return call<ImageUpload>('POST', '/images/upload', undefined, { ...o, form });
    },

    /** POST /search/image: products that look like an uploaded (image_id) or inline (image_data) image */
    async searchImage(body: ImageSearchBody, o: Extra = {}) {
      return attributed(await call<Results>('POST', '/search/image', withDefaults(body, 'search'), o), 'image');
    },
  };
  return client;
}

export type Client = ReturnType<typeof createClient>;
