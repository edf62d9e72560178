// The results engine: what every product-returning endpoint shares, run on the in-process catalog index
// (catalog.ts). A request goes: scope (channel, market, B2B, prices, discounts) → candidate products →
// tiles (variant breakouts) → filter_group → facets → sort order → merchandising boosts and pins →
// dynamic linking (page 1) → page → records (attributes). Browse and facets are built here; search,
// blocks and similar reuse `prepare`, `finish` and the pieces they call.
import { toNumericId } from '../../../schemas/fields.ts';
import { type ConfigPayload, normalizeOptionCode } from '../../../schemas/config.ts';
import type {
  BrowseBody,
  FacetsBody,
  FacetsResponse,
  FilterGroup,
  ResultEnvelope,
  ResultFields,
} from '../../../schemas/storefront.ts';
import type { StoreDirectory } from '../../store-config/api.ts';
import type { RequestContext } from '../context.ts';
import { formatPath, StorefrontError } from '../errors.ts';
import type { StorefrontStoreView } from '../store-view.ts';
import type { IndexedCollection, IndexedProduct, StoreCatalog } from './catalog.ts';
import { compileGroup, type Predicate } from './conditions.ts';
import { computeFacets, expandFacets } from './facets.ts';
import { activeRule, liveBanners, livePins } from './merch.ts';
import { MAX_PRELOADS } from './preload.ts';
import { featuredImageOf, parseAttributes, renderTile } from './render.ts';
import { renderContext, renderedRecord } from './rendered.ts';
import { rankedLists, visibilityEpoch } from './ranked.ts';
import { buildScope, compileEntitlements, type Scope } from './scope.ts';
import { applyMerchBoosts, pinAt, pinTiles, resolveSortOrder, sortTiles } from './sort.ts';
import { type Breakout, propertyOf, type Tile, tilesOf } from './tiles.ts';

export interface ResultsInput {
  catalog: StoreCatalog;
  view: StorefrontStoreView;
  dir: StoreDirectory;
  rc: RequestContext;
  /** ms */
  now: number;
}

const invalid = (fields: { path: string; message: string }[]) =>
  new StorefrontError(422, 'validation_failed', 'The request is invalid; see error.fields.', fields);

/** Compile a filter group over tiles; unknown properties are a 422 naming them (under `field`). */
export function tileFilter(
  group: FilterGroup | undefined,
  scope: Scope,
  field = 'filter_group',
): Predicate<Tile> | null {
  if (!group) return null;
  const fields: { path: string; message: string }[] = [];
  const pred = compileGroup<Tile>(
    group,
    (p) => propertyOf(p, scope),
    (path, reason) => fields.push({ path: formatPath(path, field), message: reason }),
  );
  if (fields.length) throw invalid(fields);
  return pred;
}

/** The B2B catalog and price list of the request's authorized company location, if any. */
export function b2bLocationOf(input: ResultsInput): { catalogId: string; priceListId: string | null } | null {
  const b2b = input.rc.b2b;
  if (!b2b) return null;
  const locationId = toNumericId(b2b.companyLocationId, 'CompanyLocation');
  if (!locationId) return null;
  const configured = input.dir.item(input.view.storeId, 'b2b_company_location', locationId);
  if (configured) return { catalogId: configured.catalog_id, priceListId: configured.price_list_id };
  for (const c of input.catalog.b2b.values())
    if (c.company_location_ids.includes(locationId)) return { catalogId: c.catalog_id, priceListId: c.price_list_id };
  // an authorized location without a catalog sees nothing rather than the retail catalog
  return { catalogId: '', priceListId: null };
}

export function requestScope(input: ResultsInput, body: Pick<ResultFields, 'discountEntitlements'>): Scope {
  const { catalog, view, rc, now } = input;
  // entitlement conditions are product conditions: evaluated on the product's own data and base prices
  const baseScope = buildScope(catalog, view, rc, [], now / 1000, null);
  const entitlements = compileEntitlements(catalog, body.discountEntitlements ?? [], (group, i) => {
    const pred = tileFilter(group, baseScope, `discountEntitlements[${i}].entitled.conditions`);
    return (item: IndexedProduct) => (pred ? pred(tilesOf(item, 0, null)[0]) : false);
  });
  return buildScope(catalog, view, rc, entitlements, now / 1000, b2bLocationOf(input));
}

/** The published variant breakouts that apply to an endpoint (and collection), in id order. */
export function breakoutsFor(
  input: ResultsInput,
  endpoint: 'collections' | 'search',
  collectionHandle: string | null,
): (Breakout & { productIds: Set<string> })[] {
  return input.dir
    .items(input.view.storeId, 'variant_breakout')
    .filter(
      (b) =>
        b.status === 'published' &&
        (b.applies === 'both' || b.applies === endpoint) &&
        (b.collection_handles.length === 0 ||
          (collectionHandle !== null && b.collection_handles.includes(collectionHandle))),
    )
    .map((b) => ({
      id: b.id,
      name: b.name,
      optionCode: b.option_code,
      valueInTitle: b.include_option_value_in_title,
      productIds: new Set(b.product_ids),
    }));
}

export function makeTiles(
  products: readonly { item: IndexedProduct; position: number }[],
  breakouts: readonly (Breakout & { productIds: Set<string> })[],
): Tile[] {
  const tiles: Tile[] = [];
  for (const { item, position } of products) {
    const b =
      breakouts.find(
        (x) => (x.productIds.size === 0 || x.productIds.has(item.p.id)) && item.optionSlots.has(x.optionCode),
      ) ?? null;
    for (const t of tilesOf(item, position, b)) tiles.push(t);
  }
  return tiles;
}

/** option/variant filters switch defaultSelectedOptions off */
function filtersVariants(group: FilterGroup | undefined): boolean {
  if (!group) return false;
  const variantProperty = (p: string) =>
    p.startsWith('options.') || p.startsWith('variants.') || p === 'sku' || p === 'variant_id';
  return group.expressions.some((e) =>
    'expressions' in e ? e.expressions.some((l) => variantProperty(l.property)) : variantProperty(e.property),
  );
}

export function selectedOptions(
  body: Pick<ResultFields, 'defaultSelectedOptions' | 'filter_group'>,
): Map<string, Set<string>> | null {
  if (!body.defaultSelectedOptions?.length || filtersVariants(body.filter_group)) return null;
  const out = new Map<string, Set<string>>();
  for (const o of body.defaultSelectedOptions) {
    const code = normalizeOptionCode(o.optionCode);
    let set = out.get(code);
    if (!set) out.set(code, (set = new Set()));
    set.add(o.value);
  }
  return out;
}

/**
 * The page every product-returning endpoint answers: the records of `pageTiles` and the envelope fields
 * and `_meta` entries they share (the endpoint adds its own `_meta`, `_workflow`, rules).
 */
export function resultPage(
  input: ResultsInput,
  body: ResultFields,
  o: {
    /** every result tile, in order (totals, breakouts used) */
    tiles: readonly Tile[];
    pageTiles: readonly Tile[];
    scope: Scope;
    facets: ReturnType<typeof computeFacets>;
    breakouts: readonly Breakout[];
    sortOrderCode: string;
    page: number;
    limit: number;
    /** ISO 8601 (search, browse; the default) or Unix seconds (blocks) */
    timestamps?: 'iso' | 'unix';
  },
) {
  const { catalog } = input;
  const projection = parseAttributes(body.attributes);
  const selected = selectedOptions(body);
  const collectionTitles = (id: string) =>
    [...catalog.collectionsOf(id)].flatMap((cid) => {
      const c = catalog.collections.get(cid);
      return c?.view.published ? [c.view.title] : [];
    });
  const usedBreakouts = o.breakouts.filter((b) => o.tiles.some((t) => t.breakout?.id === b.id));
  const timestamps = o.timestamps ?? 'iso';
  // what shapes a record besides its tile (results/rendered.ts): the request's side of it, the scope's
  // inputs (buildScope), the catalog's version and the configuration's generation
  const context = renderContext([
    catalog.storeId,
    catalog.version,
    input.view.generation,
    body.attributes ?? null,
    timestamps,
    selected ? [...selected].map(([code, values]) => [code, [...values]]) : null,
    input.rc.market ?? null,
    input.rc.currency ?? null,
    b2bLocationOf(input),
    body.discountEntitlements ?? null,
  ]);
  return {
    fields: {
      results: o.pageTiles.map((t) =>
        renderedRecord(context, t, () =>
          renderTile(t, { projection, scope: o.scope, timestamps, selected, collectionTitles }),
        ),
      ),
      totalResults: o.tiles.length,
      page: o.page,
      totalPages: Math.ceil(o.tiles.length / o.limit),
      resultsPerPage: o.limit,
      facets: o.facets.facets,
      facetRanges: o.facets.facetRanges,
      facetDisplay: o.facets.facetDisplay,
      filters: body.filter_group ? { ...body.filter_group } : {},
    },
    meta: {
      sortOrderCode: o.sortOrderCode,
      ...(usedBreakouts.length
        ? { variantBreakouts: usedBreakouts.map((b) => ({ id: b.id, name: b.name, optionCode: b.optionCode })) }
        : {}),
      ...(body.discountEntitlements?.length ? { discountEntitlements: body.discountEntitlements } : {}),
      ...(o.scope.market ? { market: o.scope.market } : {}),
      ...(o.scope.currency ? { currency: o.scope.currency } : {}),
    },
    productIds: o.pageTiles.map((t) => t.item.p.id),
    /** featured image URLs of the first tiles (Link preload header) */
    images: o.pageTiles.slice(0, MAX_PRELOADS).map((t) => featuredImageOf(t, selected)?.src ?? null),
  };
}

// ── browse and facets ──

interface CollectionPage {
  collection: IndexedCollection;
  scope: Scope;
  /** the B2B location scoping the request (part of the ranked-list key) */
  b2b: ReturnType<typeof b2bLocationOf>;
}

function collectionPage(
  input: ResultsInput,
  handle: string,
  body: Pick<ResultFields, 'discountEntitlements'>,
): CollectionPage {
  const { catalog } = input;
  const collection = catalog.collection(handle);
  const notFound = () =>
    new StorefrontError(404, 'not_found', `No collection ${JSON.stringify(handle)}.`, [
      { path: 'collection_handle', message: 'unknown collection' },
    ]);
  if (!collection?.view.published) throw notFound();
  const scope = requestScope(input, body);
  if (scope.b2bCatalogId !== null) {
    // a collection outside the buyer's B2B catalog does not exist for them
    const cat = catalog.b2b.get(scope.b2bCatalogId);
    if (!cat || (!cat.all_products && !cat.collection_ids.includes(collection.view.id))) throw notFound();
  }
  return { collection, scope, b2b: b2bLocationOf(input) };
}

/** visible products of the collection in collection order */
function visibleMembers(
  input: ResultsInput,
  page: CollectionPage,
  forceHideOutOfStock: boolean | undefined,
): { item: IndexedProduct; position: number }[] {
  const products: { item: IndexedProduct; position: number }[] = [];
  for (const m of input.catalog.membersOf(page.collection)) {
    if (!page.scope.visible(m.item)) continue;
    if (forceHideOutOfStock && !m.item.p.variants.some((v) => v.available)) continue;
    products.push(m);
  }
  return products;
}

/**
 * The ranked-list key (ranked.ts): everything a collection's ranked tiles and facets are computed from, and
 * nothing per shopper or per page.
 */
function rankedKey(
  input: ResultsInput,
  page: CollectionPage,
  body: Pick<ResultFields, 'discountEntitlements' | 'forceHideOutOfStock' | 'filter_group'>,
  parts: { facetCodes: readonly string[]; want: FacetWant; sortCode: string | null; ruleId: string | null },
): string {
  const { catalog, view, rc, now } = input;
  const market = rc.market;
  return JSON.stringify([
    view.storeId,
    catalog.version,
    view.generation,
    page.collection.view.id,
    visibilityEpoch(catalog, now / 1000),
    market ? [market.code, market.filterCatalog, market.marketPricing] : null,
    rc.currency,
    page.b2b,
    body.discountEntitlements ?? null,
    body.forceHideOutOfStock === true,
    body.filter_group ?? null,
    parts.facetCodes,
    parts.want,
    parts.sortCode,
    parts.ruleId,
  ]);
}

type FacetWant = { counts: boolean; ranges: boolean; display: boolean };

const facetWant = (
  body: Pick<ResultFields, 'retrieveFacetCount' | 'includeFacetRanges' | 'enrichFacetMetaobjects'>,
) => ({
  counts: body.retrieveFacetCount === true,
  ranges: body.includeFacetRanges === true,
  display: body.enrichFacetMetaobjects === true,
});

/**
 * A collection's default sort order: the configured one (the sort order whose `default_for_collections`
 * names the collection's handle; the lowest code when several do), else its `service.default_sort_order`
 * metafield when that names a sort order of the collection scope, else `relevance` (the collection order).
 */
export function defaultSortOf(
  orders: readonly ConfigPayload<'sort_order'>[],
  collection: Pick<IndexedCollection, 'view'>,
): string {
  let configured: string | null = null;
  for (const o of orders)
    if (o.scope !== 'search' && o.default_for_collections.includes(collection.view.handle))
      if (configured === null || o.code < configured) configured = o.code;
  if (configured !== null) return configured;
  const metafield = collection.view.default_sort_order;
  return metafield && orders.some((o) => o.code === metafield && o.scope !== 'search') ? metafield : 'relevance';
}

export interface BrowseResult {
  envelope: Omit<ResultEnvelope, 'attributionToken'>;
  productIds: string[];
  sortOrderCode: string;
  ruleId: string | null;
  preview: boolean;
  /** featured image URLs of the first tiles (Link preload header) */
  images: (string | null)[];
}

export function browse(input: ResultsInput, handle: string, body: BrowseBody): BrowseResult {
  const { catalog, view, rc, now } = input;
  const cp = collectionPage(input, handle, body);
  const { collection, scope } = cp;
  const facetCodes = expandFacets(body.facets, catalog, scope);
  const filter = tileFilter(body.filter_group, scope);

  // the sort order: requested, else the collection's default
  const orders = input.dir.items(view.storeId, 'sort_order');
  const defaultCode = defaultSortOf(orders, collection);
  const sortCode = body.sort_order_code ?? defaultCode;
  const order = resolveSortOrder(sortCode, orders, 'collection');

  const active = activeRule(
    input.dir,
    view.storeId,
    collection.view.handle,
    { code: sortCode, isDefault: body.sort_order_code === undefined || body.sort_order_code === defaultCode },
    rc,
    now,
    body.preview_id,
  );
  const rule = active?.rule ?? null;
  const breakouts = rule?.disable_variant_breakouts ? [] : breakoutsFor(input, 'collections', collection.view.handle);

  const want = facetWant(body);
  // the ranked list (shared by every request with the same key); pins and pages are per request
  const ranked = rankedLists.get(
    rankedKey(input, cp, body, {
      facetCodes,
      want,
      sortCode,
      ruleId: active ? `${active.id}:${active.preview}` : null,
    }),
    () => {
      let all = makeTiles(visibleMembers(input, cp, body.forceHideOutOfStock), breakouts);
      if (filter) all = all.filter(filter);
      const facets = computeFacets(all, facetCodes, scope, want);
      all = sortTiles(all, order, scope);
      if (rule) all = applyMerchBoosts(all, rule.boosts, scope);
      return { tiles: all, facets };
    },
  );
  const { facets } = ranked;
  const tiles = rule ? pinAt(ranked.tiles, livePins(rule, rc)) : ranked.tiles;

  const { page, limit } = { page: body.pagination?.page ?? 1, limit: body.pagination?.limit ?? 24 };
  let pageTiles: Tile[];
  if (page === 1 && body.dynamicLinking?.products.length) {
    const ids = body.dynamicLinking.products.flatMap((ref) => {
      const id = typeof ref === 'number' ? String(ref) : (catalog.byHandle.get(ref) ?? toNumericId(ref, 'Product'));
      const item = id ? catalog.products.get(id) : undefined;
      return item?.p.variants.some((v) => v.available) ? [item.p.id] : [];
    });
    pageTiles = pinTiles(tiles, ids).tiles.slice(0, limit);
  } else pageTiles = tiles.slice((page - 1) * limit, page * limit);

  const banners = rule && active ? liveBanners(rule, rc, now).map((b) => ({ ...b, rule_id: active.id })) : [];
  const p = resultPage(input, body, {
    tiles,
    pageTiles,
    scope,
    facets,
    breakouts,
    sortOrderCode: sortCode,
    page,
    limit,
  });
  return {
    envelope: {
      ...p.fields,
      appliedRules: active ? [{ id: active.id, name: active.rule.name, preview: active.preview, banners }] : [],
      _meta: {
        collection: { id: Number(collection.view.id), handle: collection.view.handle, title: collection.view.title },
        ...p.meta,
      },
      _workflow: active ? [{ type: 'rule-applied', payload: active.id }] : [],
    },
    productIds: p.productIds,
    sortOrderCode: sortCode,
    ruleId: active?.id ?? null,
    preview: active?.preview ?? false,
    images: p.images,
  };
}

export function collectionFacets(input: ResultsInput, handle: string, body: FacetsBody): FacetsResponse {
  const { catalog } = input;
  const cp = collectionPage(input, handle, body);
  const { collection, scope } = cp;
  const facetCodes = expandFacets(body.facets, catalog, scope);
  const filter = tileFilter(body.filter_group, scope);
  const want = facetWant(body);
  // facets only: no sort order and no rule in the key (a browse's entry has its own)
  const f = rankedLists.get(rankedKey(input, cp, body, { facetCodes, want, sortCode: null, ruleId: null }), () => {
    let tiles = makeTiles(visibleMembers(input, cp, false), breakoutsFor(input, 'collections', collection.view.handle));
    if (filter) tiles = tiles.filter(filter);
    // unsorted: the facets are the entry's subject
    return { tiles, facets: computeFacets(tiles, facetCodes, scope, want) };
  }).facets;
  return {
    ...(want.counts ? { facets: f.facets } : {}),
    ...(want.ranges ? { facetRanges: f.facetRanges } : {}),
    ...(want.display ? { facetDisplay: f.facetDisplay } : {}),
    filters: body.filter_group ? { ...body.filter_group } : {},
  };
}
