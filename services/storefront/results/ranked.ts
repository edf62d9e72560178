// Ranked collection lists: the part of a browse (and of a collection's facets) that depends neither on the
// page nor on the attributes nor on the shopper — the collection's visible members, their tiles, the
// filter_group, the facets, the sort order and the merchandising boosts — kept in a bounded in-process LRU
// so requests that differ only in page, attributes, identity or personalization context reuse it.
//
// The key names everything the list is computed from (rankedKey): the store, its catalog version (every
// applied catalog change and every changed ranking signal bumps it), its configuration generation (sort
// orders, breakouts, merchandising rules and previews, markets, B2B locations), the collection, the request
// scope (market and its pricing, currency, B2B location, discount entitlements), the visibility epoch (how
// many products scheduled to publish later have been published by now), the filters, the sort order, the
// active rule and the facet request. So an entry is never stale: a change makes it unreachable, and the LRU
// evicts it. The budget counts tile-sized units (a tile, a facet value, 100 bytes of key; ≈ 170 B each),
// so one entry of a 100 000-product collection weighs what 4 000 entries of 24-product ones do.
import { counter } from '../../common/metrics.ts';
import type { StoreCatalog } from './catalog.ts';
import type { FacetResult } from './facets.ts';
import type { Tile } from './tiles.ts';

export interface RankedList {
  /** every result tile: visible, filtered, sorted, boosted (pins are per request: not here) */
  tiles: Tile[];
  facets: FacetResult;
}

/**
 * default budget: about 100 MB per process. A unit weighs ≈ 170 B of heap as measured (bench/memory.ts with
 * --heap-owners at 100 000 products: 171 MB held at the former 1 000 000), not the 100 B first assumed.
 */
export const RANKED_BUDGET_TILES = 600_000;

/** an entry's weight in tile-sized units (≈ 100 bytes): its tiles, its facet entries and its key */
function weightOf(key: string, value: RankedList): number {
  let facetEntries = Object.keys(value.facets.facetRanges).length;
  for (const counts of Object.values(value.facets.facets)) facetEntries += Object.keys(counts).length;
  for (const display of Object.values(value.facets.facetDisplay)) facetEntries += 2 * Object.keys(display).length;
  return value.tiles.length + facetEntries + Math.ceil(key.length / 100) + 4;
}

class RankedLru {
  private readonly map = new Map<string, RankedList>();
  private size = 0;
  /** in tiles; 0 turns the LRU off (every list computed, nothing kept) */
  budget = RANKED_BUDGET_TILES;
  /** lookups answered from memory and computed (tests; the metric has them too) */
  hits = 0;
  misses = 0;
  private readonly metric = counter(
    'storefront_ranked_lists_total',
    'Ranked collection list lookups (browse, facets) by result: hit (kept in memory) or miss (computed)',
    ['result'],
  );

  get(key: string, compute: () => RankedList): RankedList {
    if (this.budget <= 0) return compute(); // off
    const hit = this.map.get(key);
    if (hit) {
      this.map.delete(key);
      this.map.set(key, hit); // most recent last
      this.hits++;
      this.metric.inc({ result: 'hit' });
      return hit;
    }
    this.misses++;
    this.metric.inc({ result: 'miss' });
    const value = compute();
    const weight = weightOf(key, value);
    if (weight > this.budget / 4) return value; // one list never takes over the memory
    this.map.set(key, value);
    this.size += weight;
    for (const [k, v] of this.map) {
      if (this.size <= this.budget) break;
      this.map.delete(k);
      this.size -= weightOf(k, v);
    }
    return value;
  }

  clear(): void {
    this.map.clear();
    this.size = 0;
  }

  /** what is kept: entries and their weight */
  usage(): { entries: number; weight: number } {
    return { entries: this.map.size, weight: this.size };
  }
}

/** the process's ranked lists (one per process: every store's entries share the budget) */
export const rankedLists = new RankedLru();

/** publication times kept per catalog version: those after this long before the version was first read */
const WINDOW_SEC = 86_400;
const scheduled = new WeakMap<StoreCatalog, { version: number; fromSec: number; times: Float64Array }>();

/**
 * The visibility epoch at `nowSec`: how many of the catalog's publication times from a day before the
 * version was first read up to `nowSec` have passed (part of the key, so a scheduled publication makes older
 * lists unreachable; a product published before that window is visible at any time the key is built for).
 */
export function visibilityEpoch(catalog: StoreCatalog, nowSec: number): number {
  let s = scheduled.get(catalog);
  if (!s || s.version !== catalog.version || nowSec < s.fromSec) {
    const fromSec = nowSec - WINDOW_SEC;
    const times: number[] = [];
    for (const item of catalog.products.values())
      if (item.publishedSec !== null && item.publishedSec > fromSec) times.push(item.publishedSec);
    s = { version: catalog.version, fromSec, times: Float64Array.from(times).sort() };
    scheduled.set(catalog, s);
  }
  // the number of times ≤ nowSec (upper bound)
  let lo = 0;
  let hi = s.times.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (s.times[mid] <= nowSec) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
