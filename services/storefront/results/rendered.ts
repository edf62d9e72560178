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
 * ≈ 5 KB; the objects take about as much again): the least recently used go first, for a newcomer asked
 * for more often than they were (below)
 */
export const RENDERED_MAX_CHARS = 8 * 1024 * 1024;

const records = new Map<string, ProductRecord>();
const texts = new WeakMap<object, string>();
let chars = 0;

/**
 * How often each record key was asked for lately: a count-min sketch (four counters per key, up to 15, in one
 * table, halved every SAMPLE increments so that old popularity fades), TinyLFU's admission test. Once the
 * budget is full, a new record is remembered only when its key was asked for more often than the least
 * recently used one's. Plain LRU keeps nothing when the records asked for cycle over more than the budget
 * holds (a store searched across a large catalog): each is evicted before it comes back, and every one
 * that passed through survived young-generation collections for nothing (a computed search at 100 000
 * products spent 14 % of its thread in garbage collection). With admission a stable part stays and hits,
 * and the rest die young.
 */
const SKETCH_SIZE = 1 << 16;
/**
 * about ten times the records the budget holds (≈ 5 KB each), as TinyLFU ages: a catalog change gives every
 * record a new key, and the old keys' counts must fade within seconds of traffic for the new ones to get in
 */
const SAMPLE = 16_384;
const sketch = new Uint8Array(SKETCH_SIZE);
let sampled = 0;

/** the key's four counter positions, from one FNV-1a hash and a second derived from it */
function slots(key: string, out: Int32Array): void {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  let g = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  g = (g ^ (g >>> 13)) | 1;
  for (let k = 0; k < 4; k++) out[k] = (h + k * g) & (SKETCH_SIZE - 1);
}
const at = new Int32Array(4);

function touch(key: string): void {
  slots(key, at);
  for (let k = 0; k < 4; k++) if (sketch[at[k]] < 15) sketch[at[k]]++;
  if (++sampled >= SAMPLE) {
    for (let i = 0; i < SKETCH_SIZE; i++) sketch[i] >>= 1;
    sampled = 0;
  }
}

function frequency(key: string): number {
  slots(key, at);
  return Math.min(sketch[at[0]], sketch[at[1]], sketch[at[2]], sketch[at[3]]);
}

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
  touch(key);
  const found = records.get(key);
  if (found) {
    records.delete(key);
    records.set(key, found);
    return found;
  }
  const rec = render();
  const size = recordJson(rec).length;
  if (chars + size > RENDERED_MAX_CHARS && records.size > 0) {
    const oldest = records.keys().next().value as string;
    // full: the newcomer must have been asked for more often than what it would push out
    if (frequency(key) <= frequency(oldest)) return rec;
  }
  records.set(key, rec);
  chars += size;
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
  sketch.fill(0);
  sampled = 0;
}
