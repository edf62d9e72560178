// What a request may see and at what price: the shopping channel's visibility, the market (strict:
// the market's catalog and prices; pricing_only: its prices; ignore: neither), the B2B location's catalog
// and price list, and the request's discount entitlements. Everything downstream (filters, facets, sort,
// records) reads prices through `Scope.price`, so sorting and filtering on price use discounted prices.
//
// Decisions (docs/decisions.md "Results engine"):
// - visible on a channel: status active, published (published_at set and not in the future), not a
//   combined-listing child. The catalog carries one online-store publication, so `app` sees what `web`
//   sees (the spec's fallback for a store without an app channel). B2B-only products (in a B2B catalog,
//   not published) are visible to that catalog's buyers only.
// - a market's catalog: the products its price list prices (at least one variant); a market without a
//   price list shows the whole catalog.
// - prices: B2B price list, else the market's (strict, pricing_only), else the product's own; then the
//   best applicable discount entitlement (the lowest resulting price).
import type { VariantView } from '../../../clickhouse/queries/catalog.ts';
import type { DiscountEntitlement } from '../../../schemas/storefront.ts';
import { toNumericId } from '../../../schemas/fields.ts';
import { marketPriceListId } from '../../catalog/normalize.ts';
import type { RequestContext } from '../context.ts';
import type { StorefrontStoreView } from '../store-view.ts';
import type { IndexedProduct, StoreCatalog } from './catalog.ts';
import type { Predicate } from './conditions.ts';

export interface EffectivePrice {
  price: number;
  compareAt: number | null;
  /** a discount entitlement lowered it */
  discounted: boolean;
}

export interface Scope {
  catalog: StoreCatalog;
  /** market code when markets apply */
  market: string | null;
  currency: string | null;
  /** the B2B catalog scoping the request */
  b2bCatalogId: string | null;
  visible(item: IndexedProduct): boolean;
  price(item: IndexedProduct, v: VariantView): EffectivePrice;
  /** whether any discount entitlement applies to anything (for _meta) */
  discounts: boolean;
}

const cents = (n: number) => Math.round(n * 100) / 100;

/** A compiled discount entitlement: which products/variants qualify and the price after it. */
export interface CompiledEntitlement {
  applies(item: IndexedProduct, v: VariantView): boolean;
  apply(price: number): number;
}

export function compileEntitlements(
  catalog: StoreCatalog,
  list: readonly DiscountEntitlement[],
  conditions: (
    group: NonNullable<DiscountEntitlement['entitled']['conditions']>,
    index: number,
  ) => Predicate<IndexedProduct>,
): CompiledEntitlement[] {
  return list.map((e, i) => {
    const all = e.entitled.all === true;
    const products = new Set<string>();
    for (const ref of e.entitled.products ?? []) {
      const s = String(ref);
      const id = toNumericId(s, 'Product') ?? catalog.byHandle.get(s);
      if (id) products.add(id);
    }
    const variants = new Set<string>();
    for (const ref of e.entitled.variants ?? []) {
      const id = toNumericId(String(ref), 'ProductVariant');
      if (id) variants.add(id);
    }
    const collections = new Set<string>();
    for (const h of e.entitled.collections ?? []) {
      const c = catalog.collection(h);
      if (c) collections.add(c.view.id);
    }
    const match = e.entitled.conditions ? conditions(e.entitled.conditions, i) : null;
    const { type, value } = e.discount;
    return {
      applies: (item, v) => {
        if (all || products.has(item.p.id) || variants.has(v.id)) return true;
        if (collections.size > 0) for (const c of catalog.collectionsOf(item.p.id)) if (collections.has(c)) return true;
        return match?.(item) === true;
      },
      apply: (price) => (type === 'PERCENTAGE' ? cents(price * (1 - value / 100)) : Math.max(0, cents(price - value))),
    };
  });
}

export function channelVisible(item: IndexedProduct, nowSec: number): boolean {
  return item.listed && item.publishedSec !== null && item.publishedSec <= nowSec;
}

export function buildScope(
  catalog: StoreCatalog,
  view: StorefrontStoreView,
  rc: RequestContext,
  entitlements: CompiledEntitlement[],
  nowSec: number,
  b2bLocation: { catalogId: string; priceListId: string | null } | null,
): Scope {
  const market = rc.market ? view.markets.find((m) => m.code === rc.market?.code) : undefined;
  const marketList = market && rc.market?.marketPricing ? marketPriceList(view, market.code) : null;
  const marketPrices = marketList ? catalog.prices.get(marketList) : undefined;
  const b2bProducts = b2bLocation ? catalog.b2bProducts(b2bLocation.catalogId) : undefined;
  const b2bListId = b2bLocation
    ? (b2bLocation.priceListId ?? catalog.b2b.get(b2bLocation.catalogId)?.price_list_id)
    : null;
  const b2bPrices = b2bListId ? catalog.prices.get(b2bListId) : undefined;
  // strict: the market's catalog = the products its price list prices
  const marketProducts =
    rc.market?.filterCatalog && marketList && marketPrices && marketPrices.size > 0
      ? catalog.pricedProducts(marketList)
      : null;

  const visible = (item: IndexedProduct): boolean => {
    if (b2bLocation) {
      // the location's catalog scopes results (published or B2B-only)
      if (b2bProducts === undefined) return false;
      if (b2bProducts !== 'all' && !b2bProducts.has(item.p.id)) return false;
      return item.listed;
    }
    if (!channelVisible(item, nowSec)) return false;
    return marketProducts === null || marketProducts.has(item.p.id);
  };

  const price = (item: IndexedProduct, v: VariantView): EffectivePrice => {
    const listed = b2bPrices?.has(v.id) ? b2bPrices : marketPrices?.has(v.id) ? marketPrices : undefined;
    const base = Number(listed ? listed.price(v.id) : v.price);
    const compareText = listed ? listed.compareAtPrice(v.id) : v.compare_at_price;
    let best = base;
    for (const e of entitlements) if (e.applies(item, v)) best = Math.min(best, e.apply(base));
    const discounted = best < base;
    const compare = compareText === null ? null : Number(compareText);
    return {
      price: best,
      compareAt: discounted ? Math.max(compare ?? 0, base) : compare,
      discounted,
    };
  };

  return {
    catalog,
    market: rc.market?.code ?? null,
    currency: (b2bListId && b2bPrices?.currency) || market?.currency || rc.currency,
    b2bCatalogId: b2bLocation?.catalogId ?? null,
    visible,
    price,
    discounts: entitlements.length > 0,
  };
}

/** the price list of a market: its configured list, else the list its prices are filed under without one */
function marketPriceList(view: StorefrontStoreView, code: string): string | null {
  const m = view.marketPriceLists.get(code);
  return m === undefined ? null : (m ?? marketPriceListId(code));
}
