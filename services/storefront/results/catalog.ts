// The read API's in-process catalog index: per store, every current product, collection (with its ordered
// members), price list, B2B catalog, swatch metaobject and ranking signal, loaded from the ClickHouse
// projections and kept fresh from the `agg:catalog` channel (schemas/channels.ts). Browse, facets and
// the other product-returning endpoints read only this index on the request path: no query, no FINAL.
//
// Freshness: a catalog processor publishes the record keys of each chunk after its insert; the index
// re-reads exactly those records (a point read by primary key) and swaps them in, so a change is served
// within the processor's linger + one read (typically 150-400 ms). A backlog (a bulk import arriving
// while a store loads) is read back in slices of at most `sliceKeys` keys, each swapped in whole, so no
// read grows with the backlog; a backlog larger than the store itself reloads the store instead. Pub/sub
// has no replay: on every (re)subscription the index reloads each loaded store in full. Ranking signals
// (revenue, trending, popularity) are aggregates of the event streams and are re-read every
// `signalsRefreshMs` (60 s).
//
// A store is loaded on its first request (the request waits for the load) and at start-up for every
// store the directory knows; `version(store)` changes with every applied change (results cache key).
import type { Redis } from 'ioredis';
import type { Db } from '../../../clickhouse/client.ts';
import {
  allCollections,
  allProducts,
  b2bCatalogs,
  type B2bCatalogView,
  collectionMemberLists,
  collectionsByIds,
  type CollectionView,
  type PriceView,
  productsByIds,
  type ProductView,
  storePrices,
  type VariantView,
} from '../../../clickhouse/queries/catalog.ts';
import { allMetaobjects, type MetaobjectView } from '../../../clickhouse/queries/metaobjects.ts';
import { storeProductSignals } from '../../../clickhouse/queries/signals.ts';
import { parseCatalogKey } from '../../../schemas/catalog.ts';
import { normalizeOptionCode } from '../../../schemas/config.ts';
import { CATALOG_CHANNEL, type CatalogChange, parseCatalogMessage } from '../../../schemas/channels.ts';
import type { Logger } from '../../common/logger.ts';

export interface IndexedProduct {
  p: ProductView;
  /** Unix seconds, null when unset */
  createdSec: number | null;
  publishedSec: number | null;
  updatedSec: number | null;
  /** numeric tie-break key (ids compared as numbers; ids fit 2^64, doubles order them well enough) */
  order: number;
  /** `p.price_range.from` as a number (0 when not one), read per candidate by search's ranking */
  priceFrom: number;
  /** `p.available` (any variant available), beside the other per-candidate fields of ranking */
  inStock: boolean;
  /**
   * active and not a combined listing's child: what a channel shows once published (scope.ts
   * channelVisible), read per candidate beside the fields above instead of two strings of `p`
   */
  listed: boolean;
  /**
   * the product's ranking signals, as `StoreCatalog.signal(id)` (kept in step by putProduct and
   * setSignals): ranking and the signal sort orders read them per candidate without a lookup by id
   */
  signal: ProductSignal;
  /** the variants in position order */
  variants: VariantView[];
  /** normalized option code (`normalizeOptionCode`) → the option's slot (1-3: option1..option3) */
  optionSlots: ReadonlyMap<string, 1 | 2 | 3>;
}

/** the variants by position: the product's own array when it is in that order already (the usual case) */
function inPositionOrder(variants: VariantView[]): VariantView[] {
  for (let i = 1; i < variants.length; i++)
    if (variants[i].position < variants[i - 1].position) return [...variants].sort((a, b) => a.position - b.position);
  return variants;
}

/** option code → slot, as the variants' option1..option3 hold the values of the options by position */
function optionSlots(p: ProductView): Map<string, 1 | 2 | 3> {
  const out = new Map<string, 1 | 2 | 3>();
  p.options.forEach((o, i) => {
    const pos = o.position >= 1 && o.position <= 3 ? o.position : i + 1;
    const code = normalizeOptionCode(o.name);
    if (pos <= 3 && !out.has(code)) out.set(code, pos as 1 | 2 | 3);
  });
  return out;
}

export interface IndexedCollection {
  view: CollectionView;
  /** memo: the members that are current products, de-duplicated, with their 1-based positions */
  resolved?: { version: number; list: { item: IndexedProduct; position: number }[] };
  /** member product ids in merchandised order (ids without a current product included; skip them) */
  members: string[];
}

export interface ProductSignal {
  revenue7d: number;
  trending: number;
  popularity: number;
}

const NONE: ReadonlySet<string> = new Set();
/** at most this many distinct strings pooled per store (a bound for catalogs whose values never repeat) */
const MAX_POOLED = 500_000;
const NO_SIGNAL: ProductSignal = { revenue7d: 0, trending: 0, popularity: 0 };

const seconds = (iso: string | null): number | null => (iso ? Math.floor(Date.parse(iso) / 1000) : null);

/** Derived per-store structures kept in step with the products (search's text index). */
export interface CatalogListener {
  /** a new product, or a product's new record (replacing what the listener holds for it: no remove first) */
  put(item: IndexedProduct): void;
  remove(productId: string): void;
}

/**
 * A price list's entries as the read path uses them: variant id → price, and the compare-at price where the
 * entry has one. An entry held as a five-field record in a map (its ids and currency included, which no read
 * takes from the entry) cost ≈ 150 B with its own id strings; this ≈ 55 B (measured on the demo app,
 * docs/decisions.md).
 */
export class PriceList {
  private readonly prices = new Map<string, string>();
  private readonly compareAt = new Map<string, string>();
  /** the list's currency: its entries' (a list prices in one; where entries differ, the earliest held) */
  currency: string | null = null;

  get size(): number {
    return this.prices.size;
  }

  has(variantId: string): boolean {
    return this.prices.has(variantId);
  }

  /** the variant's price on this list (a decimal string), undefined when the list does not price it */
  price(variantId: string): string | undefined {
    return this.prices.get(variantId);
  }

  /** the variant's compare-at price on this list, null when none (or not priced here) */
  compareAtPrice(variantId: string): string | null {
    return this.compareAt.get(variantId) ?? null;
  }

  set(variantId: string, price: string, compareAt: string | null, currency: string): void {
    this.prices.set(variantId, price);
    this.currency ??= currency;
    if (compareAt === null) this.compareAt.delete(variantId);
    else this.compareAt.set(variantId, compareAt);
  }

  delete(variantId: string): void {
    this.prices.delete(variantId);
    this.compareAt.delete(variantId);
    if (this.prices.size === 0) this.currency = null;
  }

  variantIds(): IterableIterator<string> {
    return this.prices.keys();
  }
}

/** One store's catalog. Mutated only by CatalogIndex (whole-record swaps). */
export class StoreCatalog {
  readonly storeId: string;
  readonly products = new Map<string, IndexedProduct>();
  readonly byHandle = new Map<string, string>();
  readonly collections = new Map<string, IndexedCollection>();
  readonly collectionByHandle = new Map<string, string>();
  /** price list id → its entries */
  readonly prices = new Map<string, PriceList>();
  readonly b2b = new Map<string, B2bCatalogView>();
  /** metaobject gid → metaobject */
  readonly metaobjects = new Map<string, MetaobjectView>();
  private signalMap = new Map<string, ProductSignal>();
  /** inventory item id → product id (inventory changes name items, not products) */
  readonly productOfItem = new Map<string, string>();
  readonly productOfVariant = new Map<string, string>();
  /** bumped on every applied change */
  version = 0;
  /** told of every product put and removal, inside the same synchronous swap */
  readonly listeners = new Set<CatalogListener>();

  constructor(storeId: string) {
    this.storeId = storeId;
  }

  signal(productId: string): ProductSignal {
    return this.signalMap.get(productId) ?? NO_SIGNAL;
  }

  /** the ranking signals by product id */
  get signals(): ReadonlyMap<string, ProductSignal> {
    return this.signalMap;
  }

  /** replaces the ranking signals, each product's record's own included */
  setSignals(next: Map<string, ProductSignal>): void {
    this.signalMap = next;
    for (const [id, item] of this.products) item.signal = next.get(id) ?? NO_SIGNAL;
  }

  collection(handleOrId: string): IndexedCollection | undefined {
    const id = this.collectionByHandle.get(handleOrId) ?? (/^\d+$/.test(handleOrId) ? handleOrId : undefined);
    return id === undefined ? undefined : this.collections.get(id);
  }

  /** a collection's current member products in order, de-duplicated (memoized per catalog version) */
  membersOf(c: IndexedCollection): { item: IndexedProduct; position: number }[] {
    if (c.resolved?.version === this.version) return c.resolved.list;
    const list: { item: IndexedProduct; position: number }[] = [];
    const seen = new Set<string>();
    c.members.forEach((id, i) => {
      if (seen.has(id)) return;
      seen.add(id);
      const item = this.products.get(id);
      if (item) list.push({ item, position: i + 1 });
    });
    c.resolved = { version: this.version, list };
    return list;
  }

  /** products of a B2B catalog (listed products and members of listed collections); 'all' when unrestricted */
  b2bProducts(catalogId: string): Set<string> | 'all' | undefined {
    const cat = this.b2b.get(catalogId);
    if (!cat) return undefined;
    if (cat.all_products) return 'all';
    let cached = this.b2bScope.get(catalogId);
    if (!cached) {
      cached = new Set(cat.product_ids);
      for (const c of cat.collection_ids) for (const id of this.collections.get(c)?.members ?? []) cached.add(id);
      this.b2bScope.set(catalogId, cached);
    }
    return cached;
  }
  private readonly b2bScope = new Map<string, Set<string>>();

  // ── mutation (CatalogIndex only) ──

  /** ids of the collections listing a product */
  collectionsOf(productId: string): ReadonlySet<string> {
    return this.memberOf.get(productId) ?? NONE;
  }
  private readonly memberOf = new Map<string, Set<string>>();

  /**
   * One copy per store of each repeated value. Every product read from ClickHouse arrives with strings of
   * its own, and most of a catalog's values repeat: prices, vendors, types, tags, option names and values,
   * variant titles, currencies. A heap snapshot of a 10 000-product demo app (docs/decisions.md) had
   * 24 MB of its 52 MB of strings in such copies. Strings compare by value, so sharing one is invisible.
   */
  private readonly pool = new Map<string, string>();

  private one<T extends string | null>(s: T): T {
    if (s === null) return s;
    const have = this.pool.get(s);
    if (have !== undefined) return have as T;
    if (this.pool.size < MAX_POOLED) this.pool.set(s, s);
    return s;
  }

  private ones(list: string[]): void {
    for (let i = 0; i < list.length; i++) list[i] = this.one(list[i]);
  }

  /** `p` with its repeated values taken from the pool and its own ids shared between its parts (in place) */
  private pooled(p: ProductView): ProductView {
    p.vendor = this.one(p.vendor);
    p.product_type = this.one(p.product_type);
    this.ones(p.tags);
    for (const o of p.options) {
      o.name = this.one(o.name);
      this.ones(o.values);
    }
    p.price_range.from = this.one(p.price_range.from);
    p.price_range.to = this.one(p.price_range.to);
    if (p.category) {
      p.category.id = this.one(p.category.id);
      p.category.name = this.one(p.category.name);
      p.category.full_name = this.one(p.category.full_name);
    }
    const images = new Map<string, string>();
    for (const img of p.images) if (img.id !== null) images.set(img.id, img.id);
    const variants = new Map<string, string>();
    for (const v of p.variants) {
      variants.set(v.id, v.id);
      v.title = this.one(v.title);
      v.price = this.one(v.price);
      v.compare_at_price = this.one(v.compare_at_price);
      v.option1 = this.one(v.option1);
      v.option2 = this.one(v.option2);
      v.option3 = this.one(v.option3);
      v.inventory_policy = this.one(v.inventory_policy);
      v.inventory_management = this.one(v.inventory_management);
      if (v.image_id !== null) v.image_id = images.get(v.image_id) ?? v.image_id;
    }
    for (const img of p.images) {
      const ids = img.variant_ids;
      for (let i = 0; i < ids.length; i++) ids[i] = variants.get(ids[i]) ?? ids[i];
    }
    return p;
  }

  /**
   * A price entry into its list: its values from the pool, its variant id the product's own string (the
   * variant is found through the product the entry names; a variant of no current product keeps its own).
   */
  setPrice(listId: string, entry: PriceView): void {
    let list = this.prices.get(listId);
    if (!list) this.prices.set(listId, (list = new PriceList()));
    let variantId = entry.variant_id;
    const v = this.products.get(entry.product_id)?.variants.find((x) => x.id === variantId);
    if (v) variantId = v.id;
    list.set(variantId, this.one(entry.price), this.one(entry.compare_at_price), this.one(entry.currency));
  }

  deletePrice(listId: string, variantId: string): void {
    this.prices.get(listId)?.delete(variantId);
  }

  /**
   * The products a price list prices (a strict market's catalog), memoized per catalog version: each of
   * its variants' current product.
   */
  pricedProducts(listId: string): ReadonlySet<string> {
    const memo = this.priced.get(listId);
    if (memo?.version === this.version) return memo.products;
    const products = new Set<string>();
    for (const vid of this.prices.get(listId)?.variantIds() ?? []) {
      const pid = this.productOfVariant.get(vid);
      if (pid !== undefined) products.add(pid);
    }
    this.priced.set(listId, { version: this.version, products });
    return products;
  }
  private readonly priced = new Map<string, { version: number; products: Set<string> }>();

  /** products whose options have the same names in the same places share one (read-only) slot map */
  private readonly slotMaps = new Map<string, ReadonlyMap<string, 1 | 2 | 3>>();

  private slotsOf(p: ProductView): ReadonlyMap<string, 1 | 2 | 3> {
    const slots = optionSlots(p);
    const key = JSON.stringify([...slots]);
    const shared = this.slotMaps.get(key);
    if (shared) return shared;
    if (this.slotMaps.size < MAX_POOLED) this.slotMaps.set(key, slots);
    return slots;
  }

  putProduct(view: ProductView): void {
    const p = this.pooled(view);
    // a replaced product's listeners hear of its new record alone (put replaces: the keyword index keeps
    // the ordinal of a product whose text did not change)
    this.forget(p.id);
    this.products.set(p.id, {
      p,
      createdSec: seconds(p.created_at),
      publishedSec: seconds(p.published_at),
      updatedSec: seconds(p.updated_at),
      order: Number(p.id),
      priceFrom: Number(p.price_range.from) || 0,
      inStock: p.available,
      listed: p.status === 'active' && p.combined_listing_role !== 'child',
      signal: this.signal(p.id),
      variants: inPositionOrder(p.variants),
      optionSlots: this.slotsOf(p),
    });
    this.byHandle.set(p.handle, p.id);
    for (const v of p.variants) {
      this.productOfVariant.set(v.id, p.id);
      if (v.inventory_item_id) this.productOfItem.set(v.inventory_item_id, p.id);
    }
    if (this.listeners.size) {
      const item = this.products.get(p.id) as IndexedProduct;
      for (const l of this.listeners) l.put(item);
    }
  }

  removeProduct(id: string): void {
    if (this.forget(id)) for (const l of this.listeners) l.remove(id);
  }

  /** a product out of the catalog's own maps (the listeners not told); false when it was not there */
  private forget(id: string): boolean {
    const old = this.products.get(id);
    if (!old) return false;
    this.products.delete(id);
    if (this.byHandle.get(old.p.handle) === id) this.byHandle.delete(old.p.handle);
    // a variant or item that moved to another product since points there now
    for (const v of old.p.variants) {
      if (this.productOfVariant.get(v.id) === id) this.productOfVariant.delete(v.id);
      if (v.inventory_item_id && this.productOfItem.get(v.inventory_item_id) === id)
        this.productOfItem.delete(v.inventory_item_id);
    }
    return true;
  }

  putCollection(view: CollectionView, members: string[] | undefined): void {
    const prev = this.collections.get(view.id);
    if (prev && prev.view.handle !== view.handle) this.collectionByHandle.delete(prev.view.handle);
    this.setMembers(view.id, view, members ?? prev?.members ?? []);
    this.collectionByHandle.set(view.handle, view.id);
  }

  removeCollection(id: string): void {
    const prev = this.collections.get(id);
    if (!prev) return;
    this.setMembers(id, undefined, []);
    this.collections.delete(id);
    if (this.collectionByHandle.get(prev.view.handle) === id) this.collectionByHandle.delete(prev.view.handle);
  }

  /** replace a collection's member list, keeping each product's collection set in step */
  setMembers(id: string, view: CollectionView | undefined, members: string[]): void {
    const prev = this.collections.get(id);
    for (const pid of prev?.members ?? []) this.memberOf.get(pid)?.delete(id);
    for (const pid of members) {
      let set = this.memberOf.get(pid);
      if (!set) this.memberOf.set(pid, (set = new Set()));
      set.add(id);
    }
    const v = view ?? prev?.view;
    if (v) this.collections.set(id, { view: v, members });
    this.b2bScope.clear();
  }

  setB2b(list: B2bCatalogView[]): void {
    this.b2b.clear();
    for (const c of list) this.b2b.set(c.catalog_id, c);
    this.b2bScope.clear();
  }
}

export interface CatalogIndexOptions {
  db: Db;
  /** a dedicated subscriber connection (pub/sub mode), or none (tests, tools: no live updates) */
  subscriber?: Redis;
  logger: Logger;
  /** ranking signals re-read every this many ms (default 60 s) */
  signalsRefreshMs?: number;
  /** record keys read back per swap at most (default 2 000) */
  sliceKeys?: number;
  /** a backlog of more keys than this (and than the store has products) reloads the store (default 20 000) */
  reloadBacklogKeys?: number;
}

const PAGE = 5_000;

const keyCount = (changes: readonly CatalogChange[]) => changes.reduce((n, change) => n + change.keys.length, 0);

/** `changes` cut into runs of at most `max` keys, in order (a change may be split) */
export function sliceChanges(changes: readonly CatalogChange[], max: number): CatalogChange[][] {
  const out: CatalogChange[][] = [];
  let run: CatalogChange[] = [];
  let size = 0;
  for (const change of changes)
    for (let i = 0; i < change.keys.length; ) {
      const keys = change.keys.slice(i, i + max - size);
      run.push({ ...change, keys });
      size += keys.length;
      i += keys.length;
      if (size === max) {
        out.push(run);
        run = [];
        size = 0;
      }
    }
  if (run.length) out.push(run);
  return out;
}

function sameSignals(a: ReadonlyMap<string, ProductSignal>, b: ReadonlyMap<string, ProductSignal>): boolean {
  if (a.size !== b.size) return false;
  for (const [id, x] of a) {
    const y = b.get(id);
    if (!y || x.revenue7d !== y.revenue7d || x.trending !== y.trending || x.popularity !== y.popularity) return false;
  }
  return true;
}

/** Per-store catalogs, loaded on demand and kept fresh from `agg:catalog`. */
export class CatalogIndex {
  private readonly stores = new Map<string, Promise<StoreCatalog>>();
  private readonly loaded = new Map<string, StoreCatalog>();
  private readonly opts: CatalogIndexOptions;
  private readonly pending = new Map<string, CatalogChange[]>();
  /** stores being (re)loaded → the changes published meanwhile */
  private readonly loading = new Map<string, CatalogChange[]>();
  private flushing: Promise<void> | null = null;
  private signalsTimer: NodeJS.Timeout | null = null;
  private closed = false;
  /** changes applied since start, and store (re)loads (metrics, tests) */
  changesApplied = 0;
  loads = 0;
  lastChangeAt = 0;

  private readonly reloadBacklogKeys: number;

  constructor(opts: CatalogIndexOptions) {
    this.opts = opts;
    this.reloadBacklogKeys = opts.reloadBacklogKeys ?? 20_000;
  }

  async start(): Promise<void> {
    const sub = this.opts.subscriber;
    if (sub) {
      sub.on('message', (channel: string, text: string) => {
        if (channel !== CATALOG_CHANNEL) return;
        try {
          for (const change of parseCatalogMessage(text)) this.enqueue(change);
        } catch (err) {
          this.opts.logger.warn({ err: (err as Error).message }, 'catalog index: malformed agg:catalog message');
        }
      });
      // pub/sub has no replay: every (re)subscription reloads what is loaded
      let first = true;
      sub.on('ready', () => {
        if (first) return;
        for (const storeId of this.loaded.keys()) this.reload(storeId);
      });
      await sub.subscribe(CATALOG_CHANNEL);
      first = false;
    }
    const every = this.opts.signalsRefreshMs ?? 60_000;
    this.signalsTimer = setInterval(() => {
      for (const c of this.loaded.values())
        void this.loadSignals(c).catch((err: Error) =>
          this.opts.logger.warn({ err: err.message, store: c.storeId }, 'catalog index: signals refresh failed'),
        );
    }, every);
    this.signalsTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.signalsTimer) clearInterval(this.signalsTimer);
    await this.flushing;
  }

  /** The store's catalog, loading it on first use. */
  get(storeId: string): Promise<StoreCatalog> {
    let p = this.stores.get(storeId);
    if (!p) {
      p = this.load(storeId);
      this.stores.set(storeId, p);
      p.catch(() => this.stores.delete(storeId));
    }
    return p;
  }

  /** the catalog when already loaded (no wait) */
  peek(storeId: string): StoreCatalog | undefined {
    return this.loaded.get(storeId);
  }

  private reload(storeId: string): void {
    const p = this.load(storeId);
    p.then(
      () => this.stores.set(storeId, p),
      (err: Error) => this.opts.logger.warn({ err: err.message, store: storeId }, 'catalog index: reload failed'),
    );
  }

  private async load(storeId: string): Promise<StoreCatalog> {
    // changes published while the tables are read may or may not be in what is read: keep them, and
    // apply them once the load is in place (a re-read of a record is harmless)
    const during: CatalogChange[] = [];
    this.loading.set(storeId, during);
    let c: StoreCatalog;
    try {
      c = await this.read(storeId);
    } finally {
      if (this.loading.get(storeId) === during) this.loading.delete(storeId);
    }
    this.loaded.set(storeId, c);
    for (const change of during) this.enqueue(change);
    return c;
  }

  private async read(storeId: string): Promise<StoreCatalog> {
    const { db } = this.opts;
    const started = Date.now();
    const c = new StoreCatalog(storeId);
    const [collections, members, b2b, prices, metaobjects] = await Promise.all([
      allCollections(db, storeId),
      collectionMemberLists(db, storeId),
      b2bCatalogs(db, storeId),
      storePrices(db, storeId),
      allMetaobjects(db, storeId),
    ]);
    for (const col of collections) c.putCollection(col, members.get(col.id) ?? []);
    let after = '0';
    for (;;) {
      const page = await allProducts(db, storeId, { after, limit: PAGE });
      for (const p of page) c.putProduct(p);
      if (page.length < PAGE) break;
      after = page[page.length - 1].id;
    }
    c.setB2b(b2b);
    for (const [list, entries] of prices) for (const entry of entries.values()) c.setPrice(list, entry);
    for (const m of metaobjects) c.metaobjects.set(m.gid, m);
    await this.loadSignals(c);
    c.version = (this.loaded.get(storeId)?.version ?? 0) + 1;
    this.loads++;
    this.opts.logger.info(
      { store: storeId, products: c.products.size, collections: c.collections.size, ms: Date.now() - started },
      'catalog index: store loaded',
    );
    return c;
  }

  private async loadSignals(c: StoreCatalog): Promise<void> {
    const rows = await storeProductSignals(this.opts.db, c.storeId);
    const next = new Map<string, ProductSignal>();
    for (const r of rows)
      next.set(r.productId, { revenue7d: r.revenue7d, trending: r.trending, popularity: r.popularity });
    // the version keys the results cache: bump it only when a signal changed
    if (!sameSignals(c.signals, next)) {
      c.setSignals(next);
      c.version++;
    }
  }

  // ── live changes ──

  private enqueue(change: CatalogChange): void {
    const loading = this.loading.get(change.store_id);
    if (loading) {
      loading.push(change);
      return;
    }
    if (!this.loaded.has(change.store_id)) return; // loaded later, from the tables, with this change in it
    let list = this.pending.get(change.store_id);
    if (!list) this.pending.set(change.store_id, (list = []));
    list.push(change);
    this.flushing ??= Promise.resolve().then(() => this.flush());
  }

  /** Apply every queued change: one point read per store and record kind. */
  private async flush(): Promise<void> {
    try {
      while (this.pending.size > 0 && !this.closed) {
        const batch = new Map(this.pending);
        this.pending.clear();
        for (const [storeId, changes] of batch) {
          const c = this.loaded.get(storeId);
          if (!c) continue;
          const slices = sliceChanges(changes, this.opts.sliceKeys ?? 2_000);
          let left = keyCount(changes);
          for (const slice of slices) {
            // a reload swapped in meanwhile has read every change queued before it began
            if (this.loaded.get(storeId) !== c) break;
            // the backlog (this batch's rest and what queued meanwhile) larger than the store: one whole
            // read is cheaper. Every change still queued for the store was queued while no load ran, so
            // before the reload (or one already running) began: dropped, not applied after it.
            if (left + keyCount(this.pending.get(storeId) ?? []) > Math.max(this.reloadBacklogKeys, c.products.size)) {
              this.pending.delete(storeId);
              if (!this.loading.has(storeId)) this.reload(storeId);
              break;
            }
            try {
              await this.apply(c, slice);
            } catch (err) {
              // a failed read-back: reload the store from the tables rather than serve a half-applied change
              this.opts.logger.warn(
                { err: (err as Error).message, store: storeId },
                'catalog index: change not applied',
              );
              this.reload(storeId);
              break;
            }
            left -= keyCount(slice);
          }
        }
      }
    } finally {
      this.flushing = null;
      if (this.pending.size > 0 && !this.closed) this.flushing = Promise.resolve().then(() => this.flush());
    }
  }

  private async apply(c: StoreCatalog, changes: CatalogChange[]): Promise<void> {
    const { db } = this.opts;
    const productIds = new Set<string>();
    const collectionIds = new Set<string>();
    const priceKeys: { priceListId: string; variantId: string }[] = [];
    let b2b = false;
    let metaobjects = false;
    for (const change of changes) {
      for (const key of change.keys) {
        if (change.topic === 'metaobjects') {
          metaobjects = true;
          continue;
        }
        const ref = parseCatalogKey(change.topic, key);
        if (!ref || ref.store_id !== c.storeId) continue;
        switch (ref.topic) {
          case 'products':
            productIds.add(ref.product_id);
            break;
          case 'collections':
            collectionIds.add(ref.collection_id);
            break;
          case 'inventory': {
            const pid = ref.inventory_item_id
              ? c.productOfItem.get(ref.inventory_item_id)
              : ref.variant_id
                ? c.productOfVariant.get(ref.variant_id)
                : undefined;
            if (pid) productIds.add(pid);
            break;
          }
          case 'price':
            priceKeys.push({ priceListId: ref.price_list_id, variantId: ref.variant_id });
            break;
          case 'b2b_catalog':
            b2b = true;
            break;
        }
      }
    }
    const ids = [...productIds];
    const cids = [...collectionIds];
    const [products, collections, members, prices, b2bList, metas] = await Promise.all([
      ids.length ? productsByIds(db, c.storeId, ids) : [],
      cids.length ? collectionsByIds(db, c.storeId, cids) : [],
      cids.length ? collectionMemberLists(db, c.storeId, cids) : new Map<string, string[]>(),
      priceKeys.length ? storePrices(db, c.storeId, priceKeys) : new Map<string, Map<string, PriceView>>(),
      b2b ? b2bCatalogs(db, c.storeId) : null,
      metaobjects ? allMetaobjects(db, c.storeId) : null,
    ]);
    // swap in (synchronously: a request sees the change whole or not at all)
    const found = new Set(products.map((p) => p.id));
    for (const id of ids) if (!found.has(id)) c.removeProduct(id);
    for (const p of products) c.putProduct(p);
    const foundCollections = new Set(collections.map((x) => x.id));
    for (const id of cids) if (!foundCollections.has(id)) c.removeCollection(id);
    for (const col of collections) c.putCollection(col, members.get(col.id) ?? []);
    for (const k of priceKeys) {
      const entry = prices.get(k.priceListId)?.get(k.variantId);
      if (entry) c.setPrice(k.priceListId, entry);
      else c.deletePrice(k.priceListId, k.variantId);
    }
    if (b2bList) c.setB2b(b2bList);
    if (metas) {
      c.metaobjects.clear();
      for (const m of metas) c.metaobjects.set(m.gid, m);
    }
    c.version++;
    this.changesApplied += changes.length;
    this.lastChangeAt = Date.now();
  }
}
