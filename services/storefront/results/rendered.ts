// Rendered product records, remembered: a computed answer (browse, search, blocks, similar products)
// spends most of its time rendering its page's records and serializing them (a CPU profile of computed
// browse answers: serializing 33 %, rendering 27 % of the main thread), and the same records come back in
// answer after answer. A record is a function of its tile (the product record and its breakout, which
// decide the tile's variants) and of what shapes it: the request's attributes, timestamps and selected options; the scope
// (market, currency, B2B location, discount entitlements) with the price lists it reads; the store's
// configuration (breakouts, markets); the catalog (prices and collection titles change without the
// product changing). The key holds all of it, the catalog's version and the configuration's generation
// included, so a changed store never finds an old record: its keys are new and the old ones age out.
//
// Records are shared between answers once remembered: nothing may change a record after renderTile (the
// answers only serialize them). Their JSON text is kept beside them (recordJson), which encodeAnswer
// splices into the envelope: a cached record is neither rendered nor serialized again.
import type { ProductRecord } from '../../../schemas/storefront.ts';
import type { Tile } from './tiles.ts';

/**
 * what the remembered records may hold across stores, counted as their JSON's length (a demo record is
 * ≈ 5 KB; the objects take about as much again): the least recently used go first
 */
export const RENDERED_MAX_CHARS = 8 * 1024 * 1024;

const records = new Map<string, ProductRecord>();
const texts = new WeakMap<object, string>();
let chars = 0;

/**
 * The record of `t` under `context` (renderContext's key: everything but the tile that shapes a record),
 * rendered by `render` when not remembered.
 */
export function renderedRecord(context: string, t: Tile, render: () => ProductRecord): ProductRecord {
  // a tile's variants follow from its product and breakout (results/tiles.ts tilesOf): all of the
  // product's, or those with the breakout's value
  const key = t.breakout
    ? `${context}\u0000${t.item.p.id}\u0000${t.breakout.id}\u0000${t.breakout.value}`
    : `${context}\u0000${t.item.p.id}`;
  const found = records.get(key);
  if (found) {
    records.delete(key);
    records.set(key, found);
    return found;
  }
  const rec = render();
  records.set(key, rec);
  chars += recordJson(rec).length;
  while (chars > RENDERED_MAX_CHARS && records.size > 1) {
    const [oldest, old] = records.entries().next().value as [string, ProductRecord];
    records.delete(oldest);
    chars -= recordJson(old).length;
  }
  return rec;
}

/**
 * The key of everything besides the tile that shapes a record (see the header): a short name for the
 * parts' JSON, so that a record's key stays short (building and hashing a key of the whole JSON per record
 * was 14 % of a computed browse answer).
 */
export function renderContext(parts: readonly unknown[]): string {
  const json = JSON.stringify(parts);
  let id = contexts.get(json);
  if (id === undefined) {
    // names are never reused: records under a forgotten name are not found again and age out
    if (contexts.size >= MAX_CONTEXTS) contexts.clear();
    id = `c${++named}`;
    contexts.set(json, id);
  }
  return id;
}
const contexts = new Map<string, string>();
const MAX_CONTEXTS = 10_000;
let named = 0;

/** JSON.stringify(record), once per record object */
export function recordJson(rec: object): string {
  let s = texts.get(rec);
  if (s === undefined) {
    s = JSON.stringify(rec);
    texts.set(rec, s);
  }
  return s;
}

/** forget every remembered record (tests) */
export function clearRendered(): void {
  records.clear();
  chars = 0;
}
