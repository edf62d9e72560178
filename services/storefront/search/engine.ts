// Text search on the results engine (results/engine.ts): search rules → redirect → query plan
// (understand.ts; prepared or computed) → candidates → relevance → the shared pipeline (scope, tiles,
// filter_group, facets, sort order with soft demotion, ranking rules, rule boosts and pins, page, records).
//
// Candidates: the products whose text matches the query or one of its expansions (text-index.ts), and the
// products shoppers chose after searching it (learned.ts), even when no word of the query is in their
// text. Relevance, per candidate:
//   tier      1 when the product matched every query term (or has learned evidence for the query), else 0:
//             products missing a query term never outrank those that match all of them;
//   keyword   BM25+ with field weights, normalized to the best match (expansions count 0.9);
//   learned   log-scaled engagement (views + 3·carts + 5·purchases) after this query, normalized;
//   signals   popularity (engagement of the store's last 30 days), freshness (published age), inventory;
//   intent    price sensitivity and sale interest read from the query;
//   personal  product type and vendor of the shopper's viewed and cart products, words of prior searches.
//   relevance = tier + 0.55·keyword·coverage + 0.30·learned + 0.05·popularity + 0.04·freshness
//               + 0.06·in_stock + intent (≤ 0.1) + personal (≤ 0.06)
// With a sort order other than relevance, results whose relevance is below the order's
// soft_demotion_threshold × the best relevance go after the rest (each part in the order's sequence).
//
// Degraded mode (`_meta.degraded: "prefix_only"`): when the learned ranking stage is unavailable (its
// store could not be read), the text is matched as typed, with prefix matching, and nothing else:
// no expansion, no spelling correction, no intent detection, no learned evidence; never a 5xx.
import type { ConditionGroup } from '../../../schemas/config.ts';
import type { FilterGroup, ResultEnvelope, SearchExecuteBody } from '../../../schemas/storefront.ts';
import type { IndexedProduct } from '../results/catalog.ts';
import {
  breakoutsFor,
  makeTiles,
  requestScope,
  type ResultsInput,
  resultPage,
  tileFilter,
  browse,
} from '../results/engine.ts';
import { computeFacets, expandFacets } from '../results/facets.ts';
import type { Scope } from '../results/scope.ts';
import { applyMerchBoosts, pinTiles, resolveSortOrder, sortTiles } from '../results/sort.ts';
import type { Tile } from '../results/tiles.ts';
import { StorefrontError } from '../errors.ts';
import { redirectFor } from '../store-view.ts';
import { foldText, queryKey, terms } from './analyze.ts';
import type { StoreLearned } from './learned.ts';
import { inlineCollectionHandle, matchedRankingRules, matchedSearchRules, ruleEffects } from './rules.ts';
import { SEMANTIC_REDIRECT_THRESHOLD, type SemanticProvider } from './semantic.ts';
import { MIN_FULL_MATCHES, type ProductTextIndex } from './text-index.ts';
import { type QueryPlan, understand } from './understand.ts';

export interface SearchDeps {
  text: ProductTextIndex;
  /** null: the learned stage is unavailable (degraded mode) */
  learned: StoreLearned | null;
  semantic: SemanticProvider;
}

export interface SearchOutcome {
  envelope: Omit<ResultEnvelope, 'attributionToken'>;
  productIds: string[];
  sortOrderCode: string;
  images: (string | null)[];
  plan: QueryPlan;
  /** what the request event records in details_json */
  details: Record<string, unknown>;
}

const DAY_S = 86_400;

/** The query plan of a query: search rules' replacement and the understanding of the result. */
export function planFor(input: ResultsInput, query: string, deps: SearchDeps): QueryPlan {
  const folded = foldText(query);
  if (deps.learned === null) return literalPlan(query);
  const fx = ruleEffects(matchedSearchRules(input.dir, input.view.storeId, folded, input.rc), undefined);
  const learned = deps.learned;
  const plan = understand({
    query: fx.replaceQuery ? fx.replaceQuery.query : query,
    synonyms: input.dir.items(input.view.storeId, 'synonym'),
    text: deps.text,
    knownWords: learned.words,
    learned: (t) => learned.byKey.has(queryKey(t)),
  });
  return { ...plan, query, normalized: folded };
}

function literalPlan(query: string): QueryPlan {
  const folded = foldText(query);
  return { query, normalized: folded, text: folded, corrections: [], expansions: [], intents: [] };
}

interface Candidate {
  item: IndexedProduct;
  keyword: number;
  coverage: number;
  learned: number;
  relevance: number;
}

/**
 * One search's candidates by keyword-index ordinal: where each ordinal's candidate is in the list, valid
 * while its stamp is the search's. A Map by product id cost a lookup per keyword hit (a few thousand per
 * computed search at 100 000 products: 6 % of the main thread in a profile of computed searches).
 * Searches run one at a time on the thread, so one scratch serves every store.
 */
const scratch = { stamp: new Uint32Array(0), at: new Int32Array(0), epoch: 0 };

function beginCandidates(ordinals: number): number {
  if (scratch.stamp.length < ordinals || scratch.epoch >= 0xffffffff) {
    const size = Math.max(1024, ordinals * 2);
    scratch.stamp = new Uint32Array(size);
    scratch.at = new Int32Array(size);
    scratch.epoch = 0;
  }
  return ++scratch.epoch;
}

function collectCandidates(
  input: ResultsInput,
  plan: QueryPlan,
  extraExpansions: readonly string[],
  deps: SearchDeps,
  prefix: boolean,
): { candidates: Candidate[]; learnedCount: number } {
  const { catalog } = input;
  const text = deps.text;
  const out: Candidate[] = [];
  const epoch = beginCandidates(text.ordinals);
  const { stamp, at } = scratch;
  const add = (ord: number, keyword: number, coverage: number): Candidate | undefined => {
    if (stamp[ord] === epoch) {
      const c = out[at[ord]];
      c.keyword = Math.max(c.keyword, keyword);
      c.coverage = Math.max(c.coverage, coverage);
      return c;
    }
    const item = text.itemAt(ord) ?? catalog.products.get(text.idAt(ord));
    if (!item) return undefined;
    stamp[ord] = epoch;
    at[ord] = out.length;
    const c: Candidate = { item, keyword, coverage, learned: 0, relevance: 0 };
    out.push(c);
    return c;
  };
  const queries = [plan.text, ...plan.expansions, ...extraExpansions.filter((q) => !plan.expansions.includes(q))];
  const take = (partial: boolean) =>
    queries.forEach((q, i) => {
      if (partial && i > 0) return;
      const { n, ords, scores, matched, terms: t } = text.searchColumns(q, { prefix: prefix && i === 0, partial });
      let max = 0;
      for (let k = 0; k < n; k++) if (scores[k] > max) max = scores[k];
      const weight = i === 0 ? 1 : 0.9;
      for (let k = 0; k < n; k++) add(ords[k], (weight * scores[k]) / (max || 1), t ? matched[k] / t : 0);
    });
  // products matching every word of the query or of an expansion; when those are few, also the ones
  // missing a word of the query (a common word alone matches a large part of the catalog: never all of it)
  take(false);
  if (out.length < MIN_FULL_MATCHES) take(true);
  // learned evidence, under the query as typed, as understood and as expanded (expansions count 0.9)
  let learnedCount = 0;
  if (deps.learned) {
    const learned = deps.learned;
    const merged = new Map<string, number>();
    const seen = new Set<string>();
    [plan.normalized, ...queries].forEach((q, i) => {
      const k = queryKey(q);
      if (seen.has(k)) return;
      seen.add(k);
      const weight = i <= 1 ? 1 : 0.9;
      for (const p of learned.byKey.get(k) ?? [])
        merged.set(p.productId, Math.max(merged.get(p.productId) ?? 0, weight * p.engagement));
    });
    let maxE = 0;
    for (const e of merged.values()) if (e > maxE) maxE = e;
    for (const [id, e] of merged) {
      const item = catalog.products.get(id);
      if (!item) continue;
      const ord = text.ordinal(id);
      // a product the keyword index does not hold (an index kept apart from this catalog) is its own candidate
      let c = ord === undefined ? undefined : add(ord, 0, 0);
      if (!c) out.push((c = { item, keyword: 0, coverage: 0, learned: 0, relevance: 0 }));
      c.learned = Math.log1p(e) / Math.log1p(maxE);
      learnedCount++;
    }
  }
  return { candidates: out, learnedCount };
}

function personalization(input: ResultsInput): ((item: IndexedProduct) => number) | null {
  const { rc, catalog } = input;
  const types = new Set<string>();
  const vendors = new Set<string>();
  const note = (productId: string | null, type: string | null) => {
    const item = productId ? catalog.products.get(productId) : undefined;
    if (item) {
      if (item.p.product_type) types.add(item.p.product_type.toLowerCase());
      if (item.p.vendor) vendors.add(item.p.vendor.toLowerCase());
    } else if (type) types.add(type.toLowerCase());
  };
  for (const v of rc.productsViewed) note(v.productId, v.type);
  for (const c of rc.productsInCart) note(c.productId, c.type);
  const priorTerms = new Set<string>();
  for (const s of rc.priorSearches) for (const t of terms(s.searchQuery)) priorTerms.add(t);
  if (types.size === 0 && vendors.size === 0 && priorTerms.size === 0) return null;
  return (item) => {
    let s = 0;
    if (types.has(item.p.product_type.toLowerCase())) s += 0.03;
    if (vendors.has(item.p.vendor.toLowerCase())) s += 0.015;
    if (priorTerms.size && terms(item.p.title).some((t) => priorTerms.has(t))) s += 0.015;
    return s;
  };
}

function score(input: ResultsInput, plan: QueryPlan, list: readonly Candidate[]): void {
  const nowS = input.now / 1000;
  let maxPop = 0;
  let minPrice = Number.POSITIVE_INFINITY;
  let maxPrice = 0;
  // each candidate's popularity and price read once (a signal lookup and a price parse per candidate were
  // a fifth of this function at 100 000 products; the price is parsed once per product since: parsing it
  // here was 40 % of the function in a profile of computed searches at 100 000 products)
  const pops = new Float64Array(list.length);
  const prices = new Float64Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const pop = list[i].item.signal.popularity;
    const price = list[i].item.priceFrom;
    pops[i] = pop;
    prices[i] = price;
    maxPop = Math.max(maxPop, pop);
    minPrice = Math.min(minPrice, price);
    maxPrice = Math.max(maxPrice, price);
  }
  const sensitivity = plan.intents.find((i) => i.type === 'price_sensitivity');
  const sale = plan.intents.some((i) => i.type === 'sale_interest');
  const personal = personalization(input);
  const span = maxPrice - minPrice;
  for (let i = 0; i < list.length; i++) {
    const c = list[i];
    const tier = c.coverage >= 1 || c.learned > 0 ? 1 : 0;
    const pop = maxPop > 0 ? Math.log1p(pops[i]) / Math.log1p(maxPop) : 0;
    const age = c.item.publishedSec === null ? null : Math.max(0, nowS - c.item.publishedSec) / DAY_S;
    const fresh = age === null ? 0 : Math.exp(-age / 180);
    // any variant available, read beside the candidate's other fields (walking the variants was a third of
    // this function, then reading the product view's own flag most of it: a cache miss per candidate)
    const inStock = c.item.inStock ? 1 : 0;
    let intent = 0;
    if (sensitivity && span > 0) {
      const x = (prices[i] - minPrice) / span;
      intent += 0.1 * (sensitivity.direction === 'lower' ? 1 - x : x);
    }
    if (
      sale &&
      c.item.variants.some((v) => v.compare_at_price !== null && Number(v.compare_at_price) > Number(v.price))
    )
      intent += 0.1;
    c.relevance =
      tier +
      0.55 * c.keyword * c.coverage +
      0.3 * c.learned +
      0.05 * pop +
      0.04 * fresh +
      0.06 * inStock +
      intent +
      (personal ? personal(c.item) : 0);
  }
}

function priceGroup(plan: QueryPlan): FilterGroup | null {
  const expressions: FilterGroup['expressions'] = [];
  for (const i of plan.intents) {
    if (i.type === 'price_max') expressions.push({ property: 'price', operator: 'lte', values: [i.value] });
    if (i.type === 'price_min') expressions.push({ property: 'price', operator: 'gte', values: [i.value] });
  }
  return expressions.length ? { conditional: 'AND', expressions } : null;
}

function termRedirect(input: ResultsInput, folded: string, deps: SearchDeps): string | null {
  const exact = redirectFor(input.view, folded);
  if (exact) return exact;
  if (!deps.learned || !input.view.semanticRedirects) return null;
  let best: { url: string; sim: number } | null = null;
  for (const r of input.dir.items(input.view.storeId, 'redirect_term')) {
    if (r.match !== 'semantic') continue;
    const sim = deps.semantic.similarity(folded, r.term, deps.learned);
    if (sim >= SEMANTIC_REDIRECT_THRESHOLD && (!best || sim > best.sim)) best = { url: r.url, sim };
  }
  return best?.url ?? null;
}

export function executeSearch(
  input: ResultsInput,
  query: string,
  body: SearchExecuteBody,
  deps: SearchDeps,
  prepared: QueryPlan | null,
): SearchOutcome {
  const { catalog, view, rc } = input;
  const folded = foldText(query);
  const degraded = deps.learned === null;
  const fx = ruleEffects(matchedSearchRules(input.dir, view.storeId, folded, rc), body.sort_order_code);
  const plan = prepared && prepared.query === query ? prepared : planFor(input, query, deps);
  if (fx.replaceQuery && foldText(fx.replaceQuery.query) === folded) fx.replaceQuery.action.changed = false;
  const workflow: { type: string; payload: unknown }[] = [];
  const baseMeta = {
    query,
    appliedSearchRules: fx.ruleIds,
    appliedSearchRuleActions: fx.actions,
    ...(degraded ? { degraded: 'prefix_only' as const } : {}),
  };
  const details: Record<string, unknown> = {
    ...(fx.ruleIds.length ? { applied_search_rules: fx.ruleIds } : {}),
    ...(plan.text !== plan.normalized ? { replaced_query: plan.text } : {}),
    ...(plan.expansions.length || fx.expansions.length ? { expansions: [...plan.expansions, ...fx.expansions] } : {}),
    ...(plan.intents.length ? { intent_modifiers: plan.intents } : {}),
    ...(degraded ? { degraded: 'prefix_only' } : {}),
  };

  // ── redirects ──
  const redirect = fx.redirect?.url ?? termRedirect(input, folded, deps);
  if (redirect) {
    workflow.push({ type: 'semantic-redirect', payload: redirect });
    const handle = view.record.inlineCollectionRedirects ? inlineCollectionHandle(redirect) : null;
    const collection = handle ? catalog.collection(handle) : undefined;
    if (handle && collection?.view.published) {
      try {
        const { search_id: _, ...rest } = body;
        const r = browse(input, handle, rest);
        return {
          envelope: {
            ...r.envelope,
            _meta: { ...r.envelope._meta, ...baseMeta, inlineRedirect: { url: redirect } },
            _workflow: [...workflow, ...r.envelope._workflow],
          },
          productIds: r.productIds,
          sortOrderCode: r.sortOrderCode,
          images: r.images,
          plan,
          details: { ...details, inline_redirect: redirect },
        };
      } catch (err) {
        // a collection outside the buyer's B2B catalog: the plain redirect
        if (!(err instanceof StorefrontError) || err.status !== 404) throw err;
      }
    }
    const limit = body.pagination?.limit ?? 24;
    return {
      envelope: {
        results: [],
        totalResults: 0,
        page: body.pagination?.page ?? 1,
        totalPages: 0,
        resultsPerPage: limit,
        facets: {},
        facetRanges: {},
        facetDisplay: {},
        filters: body.filter_group ? { ...body.filter_group } : {},
        _meta: { ...baseMeta, redirect: { url: redirect } },
        _workflow: workflow,
      },
      productIds: [],
      sortOrderCode: body.sort_order_code ?? 'relevance',
      images: [],
      plan,
      details: { ...details, redirect },
    };
  }

  // ── understanding, reported ──
  if (plan.text !== readIntentsFree(plan) || fx.replaceQuery?.action.changed)
    workflow.push({ type: 'query-replacement', payload: plan.text });
  const expansions = [...plan.expansions, ...fx.expansions.filter((q) => !plan.expansions.includes(q))];
  if (expansions.length) workflow.push({ type: 'query-expansion', payload: expansions });

  // ── candidates and relevance ──
  const scope = requestScope(input, body);
  const { candidates, learnedCount } = collectCandidates(input, plan, fx.expansions, deps, true);
  score(input, plan, candidates);
  workflow.push({
    type: 'query-interpretation',
    payload: {
      original: query,
      normalized: plan.normalized,
      corrections: plan.corrections,
      language: 'en',
      classification: degraded ? 'prefix_only' : learnedCount > 0 ? 'keyword+learned' : 'keyword',
      learnedProducts: learnedCount,
      semanticProvider: deps.semantic.name,
    },
  });
  if (plan.intents.length) workflow.push({ type: 'intent-modifiers', payload: plan.intents });

  const ranked = candidates
    .filter((c) => scope.visible(c.item) && (!body.forceHideOutOfStock || c.item.variants.some((v) => v.available)))
    .sort((a, b) => b.relevance - a.relevance || a.item.order - b.item.order);
  const facetCodes = expandFacets(body.facets, catalog, scope);
  const breakouts = breakoutsFor(input, 'search', null);
  let tiles = makeTiles(
    ranked.map((c, i) => ({ item: c.item, position: i + 1 })),
    breakouts,
  );

  // ── filters: the request's, the rules', the query's price intents ──
  const requestFilter = tileFilter(body.filter_group, scope);
  if (requestFilter) tiles = tiles.filter(requestFilter);
  for (const f of fx.filters) {
    const pred = safeFilter(f.group, scope);
    if (!pred) continue;
    const before = tiles.length;
    tiles = tiles.filter(pred);
    f.action.changed = tiles.length !== before;
  }
  const price = priceGroup(plan);
  if (price) {
    const pred = tileFilter(price, scope);
    if (pred) tiles = tiles.filter(pred);
  }
  const facets = computeFacets(tiles, facetCodes, scope, {
    counts: body.retrieveFacetCount === true,
    ranges: body.includeFacetRanges === true,
    display: body.enrichFacetMetaobjects === true,
  });

  // ── order: sort order (soft demotion), ranking rules, rule boosts and pins ──
  const orders = input.dir.items(view.storeId, 'sort_order');
  let sortCode = body.sort_order_code ?? 'relevance';
  if (body.sort_order_code === undefined && fx.sortOrderCode) {
    try {
      resolveSortOrder(fx.sortOrderCode.code, orders, 'search');
      sortCode = fx.sortOrderCode.code;
    } catch {
      fx.sortOrderCode.action.changed = false;
    }
  }
  const order = resolveSortOrder(sortCode, orders, 'search');
  tiles = sortTiles(tiles, order, scope);
  if (order && tiles.length) {
    const relevanceOf = new Map<string, number>(ranked.map((c) => [c.item.p.id, c.relevance]));
    let best = 0;
    for (const t of tiles) best = Math.max(best, relevanceOf.get(t.item.p.id) ?? 0);
    const cut = order.soft_demotion_threshold * best;
    const keep: Tile[] = [];
    const demoted: Tile[] = [];
    for (const t of tiles) ((relevanceOf.get(t.item.p.id) ?? 0) >= cut ? keep : demoted).push(t);
    tiles = keep.concat(demoted);
  }
  const rankingRules = matchedRankingRules(input.dir, view.storeId, folded);
  const applied: { id: string; type: string }[] = [];
  for (const r of rankingRules) {
    if (r.type === 'pin') continue;
    if (!r.match || !safeFilter(r.match, scope)) continue;
    tiles = applyMerchBoosts(
      tiles,
      [{ match: r.match, mode: 'multiplicative', factor: r.type === 'promote' ? 1 + r.magnitude : 1 - r.magnitude }],
      scope,
    );
    applied.push({ id: r.id, type: r.type });
  }
  for (const b of fx.boosts) {
    const pred = safeFilter(b.match, scope);
    if (!pred) continue;
    b.action.changed = b.factor !== 1 && tiles.some(pred);
    tiles = applyMerchBoosts(tiles, [{ match: b.match, mode: 'multiplicative', factor: b.factor }], scope);
  }
  const pins = [
    ...rankingRules
      .filter((r) => r.type === 'pin')
      .flatMap((r) => {
        applied.push({ id: r.id, type: r.type });
        return r.product_ids;
      }),
  ];
  for (const p of fx.pins) {
    const before = tiles;
    const r = pinTiles(tiles, p.productIds);
    p.action.changed = r.pinned.length > 0 && r.tiles.some((t, i) => t !== before[i]);
    tiles = r.tiles;
  }
  if (pins.length) tiles = pinTiles(tiles, pins).tiles;
  if (applied.length) workflow.push({ type: 'ranking-rules', payload: applied });

  // ── the page ──
  const page = body.pagination?.page ?? 1;
  const limit = body.pagination?.limit ?? 24;
  const pageTiles = tiles.slice((page - 1) * limit, page * limit);
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
    envelope: { ...p.fields, _meta: { ...baseMeta, ...p.meta }, _workflow: workflow },
    productIds: p.productIds,
    sortOrderCode: sortCode,
    images: p.images,
    plan,
    details,
  };
}

/** the folded query without its intent words: what the text would be had nothing been corrected or replaced */
function readIntentsFree(plan: QueryPlan): string {
  let rest = plan.normalized;
  for (const i of plan.intents) rest = rest.replace(i.text, ' ');
  rest = rest.replace(/\s+/g, ' ').trim();
  return rest === '' ? plan.normalized : rest;
}

/** a configured condition group over tiles; a group naming unknown properties is skipped, not a 422 */
function safeFilter(group: ConditionGroup, scope: Scope): ((t: Tile) => boolean) | null {
  try {
    return tileFilter(group as FilterGroup, scope, 'configuration');
  } catch {
    return null;
  }
}
