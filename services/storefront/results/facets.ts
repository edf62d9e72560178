// Facets: the requested codes (exact, or wildcards expanded against the store's attribute codes), value
// counts over the filtered tiles, min/max of numeric facets, and the metaobject display entries.
//
// Codes a wildcard expands to: `options.<name>` for every option name, `metafields.<ns>.<key>` for every
// metafield, `named_tags.<name>` for every `name:value` tag of the store's products, plus the fixed
// codes (vendor, product_type, tags, available, price, …). `*` matches one or more characters, so
// `options.*` and `metafields.custom.*` work; a wildcard that matches nothing is a 422 naming it.
import type { FacetDisplayEntrySchema } from '../../../schemas/storefront.ts';
import type { z } from 'zod';
import { StorefrontError } from '../errors.ts';
import type { MetaobjectView } from '../../../clickhouse/queries/metaobjects.ts';
import type { StoreCatalog } from './catalog.ts';
import { namedTags, propertyOf, type Tile } from './tiles.ts';
import type { Scope } from './scope.ts';

const FIXED_CODES = [
  'vendor',
  'product_type',
  'tags',
  'available',
  'price',
  'compare_at_price',
  'category',
  'collections',
  'is_gift_card',
  'created_at',
  'published_at',
];
/** numeric facets: values are numbers; includeFacetRanges reports their min and max */
const RANGE_CODES = new Set(['price', 'compare_at_price', 'created_at', 'published_at', 'updated_at', 'inventory']);

/** every facetable code of a store (for wildcard expansion), cached per catalog version */
const codesCache = new WeakMap<StoreCatalog, { version: number; codes: string[] }>();
export function storeFacetCodes(catalog: StoreCatalog): string[] {
  const hit = codesCache.get(catalog);
  if (hit && hit.version === catalog.version) return hit.codes;
  const options = new Set<string>();
  const metafields = new Set<string>();
  const named = new Set<string>();
  for (const item of catalog.products.values()) {
    if (item.p.status !== 'active') continue;
    for (const o of item.p.options) options.add(`options.${o.name}`);
    for (const [ns, keys] of Object.entries(item.p.metafields))
      for (const k of Object.keys(keys)) metafields.add(`metafields.${ns}.${k}`);
    for (const n of Object.keys(namedTags(item.p.tags))) named.add(`named_tags.${n}`);
  }
  const codes = [...FIXED_CODES, ...[...options].sort(), ...[...metafields].sort(), ...[...named].sort()];
  codesCache.set(catalog, { version: catalog.version, codes });
  return codes;
}

/** Expand the requested codes; a wildcard matching nothing or an unknown code is a 422 naming it. */
export function expandFacets(
  requested: readonly string[] | undefined,
  catalog: StoreCatalog,
  scope: Scope,
  field = 'facets',
): string[] {
  if (!requested?.length) return [];
  const out: string[] = [];
  const fields: { path: string; message: string }[] = [];
  requested.forEach((code, i) => {
    if (code.includes('*')) {
      const re = new RegExp(`^${code.split('*').map(escapeRe).join('.+')}$`);
      const matched = storeFacetCodes(catalog).filter((c) => re.test(c));
      if (matched.length === 0) fields.push({ path: `${field}[${i}]`, message: `${code} matches no attribute` });
      for (const c of matched) if (!out.includes(c)) out.push(c);
      return;
    }
    const get = propertyOf(code, scope);
    if (typeof get === 'string') fields.push({ path: `${field}[${i}]`, message: get });
    else if (!out.includes(code)) out.push(code);
  });
  if (fields.length)
    throw new StorefrontError(422, 'validation_failed', 'The request is invalid; see error.fields.', fields);
  return out;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export interface FacetResult {
  facets: Record<string, Record<string, number>>;
  facetRanges: Record<string, { min: number; max: number }>;
  facetDisplay: Record<string, Record<string, z.infer<typeof FacetDisplayEntrySchema>>>;
}

/** Counts (tiles per value), ranges and display entries of `codes` over `tiles`. */
export function computeFacets(
  tiles: readonly Tile[],
  codes: readonly string[],
  scope: Scope,
  want: { counts: boolean; ranges: boolean; display: boolean },
): FacetResult {
  const out: FacetResult = { facets: {}, facetRanges: {}, facetDisplay: {} };
  // includeFacetRanges always reports the price range, whether or not `price` is among the facets
  const all = want.ranges && !codes.includes('price') ? [...codes, 'price'] : codes;
  for (const code of all) {
    const get = propertyOf(code, scope);
    if (typeof get === 'string') continue;
    const ranged = RANGE_CODES.has(code);
    // display entries describe the values found, so they need the values even without counts
    if ((want.counts || want.display) && !ranged) {
      const counts = new Map<string, number>();
      for (const t of tiles) {
        const values = get(t);
        // a tile counts once per distinct value (lists are short: compare in place, no Set per tile)
        for (let i = 0; i < values.length; i++) {
          const key = String(values[i]);
          if (key === '') continue;
          let repeated = false;
          for (let j = 0; j < i && !repeated; j++) repeated = String(values[j]) === key;
          if (!repeated) counts.set(key, (counts.get(key) ?? 0) + 1);
        }
      }
      // most frequent first, then by value
      const sorted = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      if (want.counts) out.facets[code] = Object.fromEntries(sorted);
      if (want.display) {
        const display: FacetResult['facetDisplay'][string] = {};
        for (const [handle] of sorted) {
          const m = metaobjectByHandle(scope.catalog, handle);
          if (m)
            display[handle] = { handle: m.handle, display_name: m.display_name, fields: m.fields, swatch: m.swatch };
        }
        if (Object.keys(display).length > 0) out.facetDisplay[code] = display;
      }
    }
    if (want.ranges && ranged) {
      let min = Number.POSITIVE_INFINITY;
      let max = Number.NEGATIVE_INFINITY;
      for (const t of tiles)
        for (const v of get(t))
          if (typeof v === 'number') {
            if (v < min) min = v;
            if (v > max) max = v;
          }
      if (min <= max) out.facetRanges[code] = { min, max };
    }
  }
  return out;
}

function metaobjectByHandle(catalog: StoreCatalog, handle: string) {
  let byHandle = handleIndex.get(catalog);
  if (!byHandle || byHandle.version !== catalog.version) {
    byHandle = { version: catalog.version, map: new Map() };
    for (const m of catalog.metaobjects.values()) byHandle.map.set(m.handle, m);
    handleIndex.set(catalog, byHandle);
  }
  return byHandle.map.get(handle);
}
const handleIndex = new WeakMap<StoreCatalog, { version: number; map: Map<string, MetaobjectView> }>();
