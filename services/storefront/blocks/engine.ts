// Recommendation blocks (POST /blocks/{blockId}/products) on the results engine.
//
// A request: the block (published, by ULID) → its anchor (anchor_id per anchor type; the cart's products;
// the shopper's context) → the first block rule whose conditions match (request properties and
// `anchor.<product property>`) → the strategy (strategies.ts; a behavioural strategy on a store with no
// such data yet is in cold start and serves content-based similar products of the anchor's products, else
// the newest products, instead) →
// exclusions → the results engine's scope (channel, market, B2B, prices), hide-out-of-stock, filters →
// personalization → max products (tiles). Fewer than the minimum (or a rule hid the block) runs the
// fallback chain: each fallback block in order, `replace` taking its result when it meets its own minimum,
// `fill` appending (de-duplicated by product, up to the maximum) until the minimum is met; nested chains
// follow, a visited set guards against loops, exclusions apply throughout. Then facets, the page and the
// records (Unix-second timestamps).
import type { BlockBody, BlockResponse } from '../../../schemas/blocks.ts';
import { STRATEGY_KEYS, type StrategyKey } from '../../../schemas/config.ts';
import { toNumericId, ULID_RE } from '../../../schemas/fields.ts';
import type { FilterGroup } from '../../../schemas/storefront.ts';
import { StorefrontError } from '../errors.ts';
import type { IndexedProduct } from '../results/catalog.ts';
import { compileGroup, type Primitive } from '../results/conditions.ts';
import { breakoutsFor, makeTiles, requestScope, type ResultsInput, resultPage, tileFilter } from '../results/engine.ts';
import { computeFacets, expandFacets } from '../results/facets.ts';
import { requestValues } from '../results/merch.ts';
import type { Scope } from '../results/scope.ts';
import { resolveSortOrder, sortTiles } from '../results/sort.ts';
import { propertyOf, type Tile, tilesOf } from '../results/tiles.ts';
import { contentItemOf } from '../content/rank.ts';
import {
  type Anchor,
  BEHAVIOURAL,
  type BlockConfig,
  personalize,
  relatedContent,
  runStrategy,
  type StrategyDeps,
  VARIANT_AWARE,
} from './strategies.ts';

export type BlockDeps = Omit<StrategyDeps, 'catalog' | 'rc' | 'now'>;

export interface BlockResult {
  envelope: Omit<BlockResponse, 'attributionToken'>;
  productIds: string[];
  anchorId: string | null;
  /** the block's id when it exists (request events) */
  blockId: string | null;
}

/** A theme block metaobject handle: a prefix, then the block ULID in lower case. */
const THEME_HANDLE = /^[a-z0-9][a-z0-9_-]*?[-_]?([0-9a-hjkmnp-tv-z]{26})$/;
const CONTEXT_ANCHORS = new Set(['home', 'search', 'not_found', 'landing', 'other', 'none']);
const MAX_CHAIN = 20;

const invalid = (path: string, message: string) =>
  new StorefrontError(422, 'validation_failed', 'The request is invalid; see error.fields.', [{ path, message }]);

function emptyEnvelope(limit: number, body: BlockBody): Omit<BlockResponse, 'attributionToken'> {
  return {
    results: [],
    totalResults: 0,
    page: body.pagination?.page ?? 1,
    totalPages: 0,
    resultsPerPage: limit,
    facets: {},
    facetRanges: {},
    facetDisplay: {},
    filters: body.filter_group ? { ...body.filter_group } : {},
    block: null,
    _meta: {},
    _workflow: [],
  };
}

/** the block a path id names, null for a theme handle (no products, no error) */
export function resolveBlock(input: ResultsInput, blockId: string): BlockConfig | null {
  if (!ULID_RE.test(blockId)) {
    if (THEME_HANDLE.test(blockId)) return null;
    throw invalid('blockId', 'expected a block ULID');
  }
  const block = input.dir.item(input.view.storeId, 'block', blockId);
  if (!block || block.status !== 'published')
    throw new StorefrontError(404, 'not_found', `No block ${blockId}.`, [
      { path: 'blockId', message: 'unknown block' },
    ]);
  return block;
}

/** the anchor of a block request (422 naming anchor_id when a required one is missing or malformed) */
export function resolveAnchor(input: ResultsInput, block: BlockConfig, body: BlockBody): Anchor {
  const { catalog, rc } = input;
  const raw = body.anchor_id ?? body.anchor_handle ?? null;
  const path = body.anchor_id !== undefined ? 'anchor_id' : 'anchor_handle';
  const anchor: Anchor = {
    type: block.anchor_type,
    productIds: [],
    product: null,
    variantId: null,
    collectionId: null,
    articleId: null,
  };
  const required = () => {
    if (raw === null) throw invalid('anchor_id', `required for ${block.anchor_type} anchors`);
    return raw;
  };
  switch (block.anchor_type) {
    case 'product': {
      const id = toNumericId(required(), 'Product');
      if (!id) throw invalid(path, 'expected a numeric product id or a product GID');
      const item = catalog.products.get(id) ?? null;
      anchor.productIds = [id];
      anchor.product = item;
      // variant_id: only a variant of the anchor product, only for variant-aware strategies (checked by the caller)
      if (body.variant_id !== undefined && item?.variants.some((v) => v.id === String(body.variant_id)))
        anchor.variantId = String(body.variant_id);
      break;
    }
    case 'article': {
      const id = toNumericId(required(), 'Article') ?? toNumericId(raw, 'OnlineStoreArticle');
      if (!id) throw invalid(path, 'expected a numeric article id or an article GID');
      anchor.articleId = id;
      break;
    }
    case 'collection': {
      const ref = required();
      const c = catalog.collection(toNumericId(ref, 'Collection') ?? ref);
      if (c?.view.published) {
        anchor.collectionId = c.view.id;
        anchor.productIds = catalog.membersOf(c).map((m) => m.item.p.id);
      }
      break;
    }
    case 'cart': {
      const seen = new Set<string>();
      for (const item of rc.productsInCart)
        if (item.productId && !seen.has(item.productId)) {
          seen.add(item.productId);
          anchor.productIds.push(item.productId);
        }
      break;
    }
    default:
      if (!CONTEXT_ANCHORS.has(block.anchor_type)) throw invalid('blockId', 'unsupported anchor type');
  }
  return anchor;
}

/** `anchor.<property>` reads the anchor product; everything else the request */
function ruleMatches(rule: BlockConfig['rules'][number], input: ResultsInput, anchor: Anchor, scope: Scope): boolean {
  const anchorTile = anchor.product ? tilesOf(anchor.product, 0, null)[0] : null;
  return compileGroup<null>(
    rule.conditions,
    (p) => {
      if (p === 'anchor.type' || p === 'anchor_type') return () => [anchor.type];
      if (p.startsWith('anchor.')) {
        const get = propertyOf(p.slice('anchor.'.length), scope);
        if (typeof get === 'string') return () => [];
        return () => (anchorTile ? (get(anchorTile) as readonly Primitive[]) : []);
      }
      return () => requestValues(input.rc, p);
    },
    () => undefined,
  )(null);
}

interface Evaluated {
  tiles: Tile[];
  /** related content: content ids instead of products */
  content: string[] | null;
  /** the block's own minimum and maximum after rule overrides */
  min: number;
  max: number;
  strategyKey: StrategyKey;
  ruleIndex: number | null;
  hidden: boolean;
  coldStart: boolean;
  personalized: boolean;
  source?: 'precomputed' | 'live';
}

function evaluate(
  input: ResultsInput,
  block: BlockConfig,
  anchor: Anchor,
  exclude: ReadonlySet<string>,
  body: BlockBody,
  scope: Scope,
  deps: StrategyDeps,
): Evaluated {
  const ruleIndex = block.rules.findIndex((r) => ruleMatches(r, input, anchor, scope));
  const rule = ruleIndex >= 0 ? block.rules[ruleIndex] : null;
  let strategyKey = block.strategy_key;
  let safeguards = { ...block.safeguards };
  let hidden = false;
  const filters: FilterGroup[] = [];
  for (const a of rule?.actions ?? []) {
    if (a.type === 'hide_block') hidden = true;
    else if (a.type === 'change_strategy') strategyKey = a.strategy_key;
    else if (a.type === 'override_safeguards') safeguards = { ...safeguards, ...a.safeguards };
    else filters.push(a.filter_group as FilterGroup);
  }
  const min = Math.min(safeguards.min_products, safeguards.max_products);
  const base = {
    min,
    max: safeguards.max_products,
    ruleIndex: rule ? ruleIndex : null,
    personalized: false,
  };
  if (hidden) return { ...base, tiles: [], content: null, strategyKey, hidden, coldStart: false };
  if (strategyKey === 'related_content')
    return {
      ...base,
      tiles: [],
      content: relatedContent(anchor, deps).slice(0, safeguards.max_products),
      strategyKey,
      hidden,
      coldStart: false,
    };

  // variant_id only for variant-aware strategies
  const a = VARIANT_AWARE.has(strategyKey) ? anchor : { ...anchor, variantId: null };
  let result = runStrategy(strategyKey, block, a, exclude, deps);
  let coldStart = false;
  if (result.noData && result.ids.length === 0 && BEHAVIOURAL.has(strategyKey)) {
    // no shopper data of this kind yet: content-based neighbours for a product, else the newest products
    coldStart = true;
    const substitute: StrategyKey = anchor.productIds.length ? 'similar_products' : 'new_arrivals';
    result = runStrategy(substitute, block, a, exclude, deps);
  }
  // the request's filter_group: unknown properties are the caller's 422; a rule's filter is configuration,
  // so an unknown property there matches nothing (the block empties and its fallbacks run) instead
  const filter: ((t: Tile) => boolean)[] = [];
  const own = tileFilter(body.filter_group, scope);
  if (own) filter.push(own);
  for (const g of filters)
    filter.push(
      compileGroup<Tile>(
        g,
        (p) => propertyOf(p, scope),
        () => undefined,
      ),
    );
  const breakouts = breakoutsFor(input, 'collections', null);
  const products: { item: IndexedProduct; position: number }[] = [];
  // personalization reorders the head of the list (bounded work on long lists such as best sellers)
  const head = Math.max(200, safeguards.max_products * 10);
  const personal = personalize(result.ids.slice(0, head), safeguards.personalization_strength, deps);
  const ids = { ids: [...personal.ids, ...result.ids.slice(head)], applied: personal.applied };
  for (const id of ids.ids) {
    const item = input.catalog.products.get(id);
    if (!item || !scope.visible(item)) continue;
    if ((safeguards.hide_out_of_stock || body.forceHideOutOfStock) && !item.variants.some((v) => v.available)) continue;
    products.push({ item, position: products.length + 1 });
    // without filters the first max_products products fill the block (a product gives one tile or more)
    if (products.length >= safeguards.max_products && filter.length === 0) break;
  }
  let tiles = makeTiles(products, breakouts);
  if (filter.length) tiles = tiles.filter((t) => filter.every((f) => f(t)));
  return {
    ...base,
    tiles: tiles.slice(0, safeguards.max_products),
    content: null,
    strategyKey,
    hidden,
    coldStart,
    personalized: ids.applied,
    source: result.source,
  };
}

interface ChainStep {
  block_id: string;
  mode: 'primary' | 'replace' | 'fill';
  strategy_key: StrategyKey;
  results: number;
  rule?: number;
  hidden?: boolean;
  cold_start?: boolean;
}

/** The block's tiles with its fallback chain run where needed. */
function withFallbacks(
  input: ResultsInput,
  block: BlockConfig,
  anchor: Anchor,
  exclude: ReadonlySet<string>,
  body: BlockBody,
  scope: Scope,
  deps: StrategyDeps,
  visited: Set<string>,
  steps: ChainStep[],
  mode: ChainStep['mode'],
): Evaluated {
  visited.add(block.id);
  const own = evaluate(input, block, anchor, exclude, body, scope, deps);
  steps.push({
    block_id: block.id,
    mode,
    strategy_key: own.strategyKey,
    results: own.tiles.length,
    ...(own.ruleIndex !== null ? { rule: own.ruleIndex } : {}),
    ...(own.hidden ? { hidden: true } : {}),
    ...(own.coldStart ? { cold_start: true } : {}),
  });
  const count = own.content?.length ?? own.tiles.length;
  if (count >= own.min && !own.hidden && (count > 0 || own.min === 0)) return own;
  // a related-content block with some content is not mixed with fallback products
  if (own.content?.length) return own;
  let current = own;
  for (const f of block.fallback) {
    if (visited.has(f.block_id) || visited.size >= MAX_CHAIN) continue;
    const fb = input.dir.item(input.view.storeId, 'block', f.block_id);
    if (!fb || fb.status !== 'published') continue;
    const next = withFallbacks(input, fb, anchor, exclude, body, scope, deps, visited, steps, f.mode);
    if (f.mode === 'replace') {
      if (next.tiles.length >= Math.max(next.min, 1)) return { ...next, min: own.min, max: own.max, hidden: false };
    } else {
      const have = new Set(current.tiles.map((t) => t.item.p.id));
      const tiles = [...current.tiles, ...next.tiles.filter((t) => !have.has(t.item.p.id))].slice(0, own.max);
      current = { ...current, tiles, content: null, hidden: false };
      if (tiles.length >= Math.max(own.min, 1)) return current;
    }
  }
  return current;
}

export function blockProducts(input: ResultsInput, blockId: string, body: BlockBody, deps: BlockDeps): BlockResult {
  const limitOf = (max: number) => Math.min(body.pagination?.limit ?? max, max);
  const block = resolveBlock(input, blockId);
  if (!block)
    return {
      envelope: emptyEnvelope(body.pagination?.limit ?? 24, body),
      productIds: [],
      anchorId: null,
      blockId: null,
    };
  const anchor = resolveAnchor(input, block, body);
  const exclude = new Set<string>();
  (body.excludeProductIds ?? []).forEach((ref, i) => {
    const id = toNumericId(ref, 'Product');
    if (!id) throw invalid(`excludeProductIds[${i}]`, 'expected a numeric product id or a product GID');
    exclude.add(id);
  });
  const scope = requestScope(input, body);
  const sdeps: StrategyDeps = { ...deps, catalog: input.catalog, rc: input.rc, now: input.now };
  const steps: ChainStep[] = [];
  const r = withFallbacks(input, block, anchor, exclude, body, scope, sdeps, new Set(), steps, 'primary');
  const blockObject = {
    id: block.id,
    title: block.title,
    anchor_type: block.anchor_type,
    strategy_type: block.strategy_type ?? STRATEGY_KEYS[block.strategy_key],
    strategy_key: block.strategy_key,
  };
  const chainMeta = { strategy: r.strategyKey, chain: steps };
  if (r.content) {
    // related content: content items (as content search answers them)
    const byId = new Map((deps.content?.items ?? []).map((c) => [c.view.content_id, c]));
    const page = body.pagination?.page ?? 1;
    const limit = limitOf(r.max);
    const items = r.content.flatMap((id) => {
      const c = byId.get(id);
      return c ? [contentItemOf(c)] : [];
    });
    return {
      envelope: {
        ...emptyEnvelope(limit, body),
        results: items.slice((page - 1) * limit, page * limit),
        totalResults: items.length,
        totalPages: Math.ceil(items.length / limit),
        block: blockObject,
        _meta: { block: chainMeta },
      },
      productIds: [],
      anchorId: body.anchor_id ?? body.anchor_handle ?? null,
      blockId: block.id,
    };
  }

  let tiles = r.tiles;
  let sortOrderCode = 'relevance';
  if (body.sort_order_code && body.sort_order_code !== 'relevance') {
    const order = resolveSortOrder(
      body.sort_order_code,
      input.dir.items(input.view.storeId, 'sort_order'),
      'collection',
    );
    tiles = sortTiles(
      tiles.map((t, i) => ({ ...t, position: i + 1 })),
      order,
      scope,
    );
    sortOrderCode = body.sort_order_code;
  }
  const facets = computeFacets(tiles, expandFacets(body.facets, input.catalog, scope), scope, {
    counts: body.retrieveFacetCount === true,
    ranges: body.includeFacetRanges === true,
    display: body.enrichFacetMetaobjects === true,
  });
  const page = body.pagination?.page ?? 1;
  const limit = limitOf(r.max);
  const p = resultPage(
    input,
    { ...body, attributes: body.attributes },
    {
      tiles,
      pageTiles: tiles.slice((page - 1) * limit, page * limit),
      scope,
      facets,
      breakouts: breakoutsFor(input, 'collections', null),
      sortOrderCode,
      page,
      limit,
      timestamps: 'unix',
    },
  );
  return {
    envelope: {
      ...p.fields,
      block: blockObject,
      _meta: {
        ...p.meta,
        block: {
          ...chainMeta,
          ...(r.coldStart ? { coldStart: true } : {}),
          ...(r.personalized ? { personalized: true } : {}),
          ...(r.source ? { similarSource: r.source } : {}),
          ...(anchor.variantId && VARIANT_AWARE.has(r.strategyKey) ? { variantId: Number(anchor.variantId) } : {}),
        },
      },
      _workflow: steps
        .filter((s) => s.rule !== undefined)
        .map((s) => ({ type: 'rule-applied', payload: { block_id: s.block_id, rule: s.rule } })),
    },
    productIds: p.productIds,
    anchorId: body.anchor_id ?? body.anchor_handle ?? null,
    blockId: block.id,
  };
}
