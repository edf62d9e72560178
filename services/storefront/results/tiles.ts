// Result tiles and their properties. A tile is what one result cell shows: a product with all its
// variants, or (variant breakouts) a product's variants sharing one value of the breakout option. Totals,
// pages and facet counts count tiles. Filters, facets and sorting read tiles through `propertyOf`, the
// one definition of the filterable / facetable / sortable attribute codes:
//
//   id handle title vendor product_type tags available is_gift_card category combined_listing_role
//   created_at published_at updated_at (Unix seconds)   price compare_at_price (the request's prices)
//   inventory (units across the tile's variants)   collections (handles)   collection_ids
//   options.<name>   variants.sku   variants.id   metafields.<namespace>.<key>   named_tags.<name>
//   (metaobject references resolve to the metaobject's handle)
//   sort only: revenue_7d (alias best_selling), trending, popularity, position (collection order),
//   tag:<tag> (1 when tagged)
import type { VariantView } from '../../../clickhouse/queries/catalog.ts';
import { normalizeOptionCode } from '../../../schemas/config.ts';
import type { IndexedProduct, StoreCatalog } from './catalog.ts';
import type { Primitive } from './conditions.ts';
import type { EffectivePrice, Scope } from './scope.ts';

export interface Tile {
  item: IndexedProduct;
  /** the tile's variants (all of the product's for a product tile), in position order */
  variants: VariantView[];
  /** variant breakout: the option value this tile stands for */
  breakout: { id: string; name: string; optionCode: string; value: string; valueInTitle: boolean } | null;
  /** 1-based position in the collection (browse), else the index order */
  position: number;
  /** lazily computed effective prices of `variants` */
  prices?: EffectivePrice[];
}

export function tilePrices(t: Tile, scope: Scope): EffectivePrice[] {
  t.prices ??= t.variants.map((v) => scope.price(t.item, v));
  return t.prices;
}

/** The option values of a variant by option code (normalized option name). */
export function variantOption(item: IndexedProduct, v: VariantView, code: string): string | null {
  const slot = item.optionSlots.get(code);
  return slot === 1 ? v.option1 : slot === 2 ? v.option2 : slot === 3 ? v.option3 : null;
}

export type Getter = (t: Tile) => readonly Primitive[];

const one = (v: Primitive | null | undefined): readonly Primitive[] => (v === null || v === undefined ? [] : [v]);

/** flatten a metafield value into facet/filter values; metaobject gids become their handles */
function metafieldValues(value: unknown, catalog: StoreCatalog): Primitive[] {
  const out: Primitive[] = [];
  const add = (v: unknown) => {
    if (typeof v === 'string') out.push(catalog.metaobjects.get(v)?.handle ?? v);
    else if (typeof v === 'number' || typeof v === 'boolean') out.push(v);
    else if (v && typeof v === 'object' && 'value' in v && 'unit' in v) add((v as { value: unknown }).value);
  };
  if (Array.isArray(value)) for (const v of value) add(v);
  else if (typeof value === 'string' && value.startsWith('[')) {
    try {
      const parsed = JSON.parse(value) as unknown;
      if (Array.isArray(parsed)) for (const v of parsed) add(v);
      else add(value);
    } catch {
      add(value);
    }
  } else add(value);
  return out;
}

/** the accessor of a property code, or a reason when the code names nothing */
export function propertyOf(code: string, scope: Scope): Getter | string {
  const catalog = scope.catalog;
  switch (code) {
    case 'id':
      return (t) => [Number(t.item.p.id)];
    case 'handle':
      return (t) => [t.item.p.handle];
    case 'title':
      return (t) => [t.item.p.title];
    case 'vendor':
      return (t) => one(t.item.p.vendor || null);
    case 'product_type':
      return (t) => one(t.item.p.product_type || null);
    case 'tags':
      return (t) => t.item.p.tags;
    case 'available':
      return (t) => [t.variants.some((v) => v.available)];
    case 'is_gift_card':
      return (t) => [t.item.p.is_gift_card];
    case 'category':
      return (t) => one(t.item.p.category?.name);
    case 'combined_listing_role':
      return (t) => one(t.item.p.combined_listing_role);
    case 'created_at':
      return (t) => one(t.item.createdSec);
    case 'published_at':
      return (t) => one(t.item.publishedSec);
    case 'updated_at':
      return (t) => one(t.item.updatedSec);
    case 'price':
      return (t) => tilePrices(t, scope).map((p) => p.price);
    case 'compare_at_price':
      return (t) => tilePrices(t, scope).flatMap((p) => (p.compareAt === null ? [] : [p.compareAt]));
    case 'inventory':
      return (t) => [t.variants.reduce((n, v) => n + Math.max(0, v.inventory_quantity ?? 0), 0)];
    case 'collections':
      return (t) =>
        [...catalog.collectionsOf(t.item.p.id)].flatMap((id) => one(catalog.collections.get(id)?.view.handle));
    case 'collection_ids':
      return (t) => [...catalog.collectionsOf(t.item.p.id)].map(Number);
    case 'variants.sku':
    case 'sku':
      return (t) => t.variants.flatMap((v) => one(v.sku));
    case 'variants.id':
    case 'variant_id':
      return (t) => t.variants.map((v) => Number(v.id));
  }
  if (code.startsWith('options.')) {
    const option = normalizeOptionCode(code.slice('options.'.length));
    if (!option) return 'expected options.<option name>';
    return (t) => {
      const out: string[] = [];
      for (const v of t.variants) {
        const value = variantOption(t.item, v, option);
        if (value !== null && !out.includes(value)) out.push(value);
      }
      return out;
    };
  }
  if (code.startsWith('metafields.')) {
    const rest = code.slice('metafields.'.length);
    const dot = rest.indexOf('.');
    if (dot <= 0 || dot === rest.length - 1) return 'expected metafields.<namespace>.<key>';
    const ns = rest.slice(0, dot);
    const key = rest.slice(dot + 1);
    return (t) => {
      const v = t.item.p.metafields[ns]?.[key];
      return v === undefined || v === null ? [] : metafieldValues(v, catalog);
    };
  }
  if (code.startsWith('named_tags.')) {
    const name = code.slice('named_tags.'.length).toLowerCase();
    return (t) => namedTags(t.item.p.tags)[name] ?? [];
  }
  return `unknown property ${JSON.stringify(code)}`;
}

/** `name:value` tags grouped by (lower-case) name */
export function namedTags(tags: readonly string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const tag of tags) {
    const i = tag.indexOf(':');
    if (i <= 0 || i === tag.length - 1) continue;
    const name = tag.slice(0, i).trim().toLowerCase();
    (out[name] ??= []).push(tag.slice(i + 1).trim());
  }
  return out;
}

/** numeric sort attributes beyond the properties (signals, collection position, tag flags) */
export function sortValueOf(code: string, scope: Scope): ((t: Tile) => number | string | null) | string {
  switch (code) {
    case 'revenue_7d':
    case 'best_selling':
      return (t) => t.item.signal.revenue7d;
    case 'trending':
      return (t) => t.item.signal.trending;
    case 'popularity':
      return (t) => t.item.signal.popularity;
    case 'position':
      return (t) => t.position;
    case 'title':
      return (t) => t.item.p.title.toLowerCase();
    case 'price':
      return (t) => {
        const ps = tilePrices(t, scope);
        return ps.length ? Math.min(...ps.map((p) => p.price)) : null;
      };
  }
  if (code.startsWith('tag:')) {
    const tag = code.slice(4);
    return (t) => (t.item.p.tags.includes(tag) ? 1 : 0);
  }
  const get = propertyOf(code, scope);
  if (typeof get === 'string') return get;
  return (t) => {
    const values = get(t);
    let best: number | string | null = null;
    for (const v of values) {
      const x = typeof v === 'boolean' ? (v ? 1 : 0) : v;
      if (best === null || (typeof x === 'number' && typeof best === 'number' ? x > best : String(x) > String(best)))
        best = x;
    }
    return best;
  };
}

// ── variant breakouts ──

export interface Breakout {
  id: string;
  name: string;
  optionCode: string;
  valueInTitle: boolean;
}

/** The tiles of a product: one, or one per value of the breakout option (same-value variants collapse). */
export function tilesOf(item: IndexedProduct, position: number, breakout: Breakout | null): Tile[] {
  const variants = item.variants;
  if (breakout) {
    const groups = new Map<string, VariantView[]>();
    for (const v of variants) {
      const value = variantOption(item, v, breakout.optionCode);
      if (value === null) continue;
      let g = groups.get(value);
      if (!g) groups.set(value, (g = []));
      g.push(v);
    }
    if (groups.size > 0)
      return [...groups].map(([value, vs]) => ({
        item,
        variants: vs,
        breakout: { ...breakout, value },
        position,
      }));
  }
  return [{ item, variants, breakout: null, position }];
}
