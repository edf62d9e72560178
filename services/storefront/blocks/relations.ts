// What shoppers did together, for the recommendation blocks: per store, the behavioural pair aggregates
// (co_view_pairs, co_cart_pairs, co_purchase_pairs, viewed_then_bought; written by the `events` and
// `orders` processors) held in process as anchor → strongest neighbours. Loaded per store on its first
// block request, then kept fresh from `agg:related`: the processors publish the products whose rows a
// chunk wrote and the index re-reads exactly those anchors, so a new co-view pattern sent through
// /beacon moves a block within the processor's linger plus one read. A periodic full reload lets old
// days age out of the window.
//
// Scores are popularity-normalized co-occurrence (item-to-item collaborative filtering): for the
// symmetric pairs cosine = n_ab / sqrt(n_aa · n_bb), the diagonal n_aa being how many sessions (orders)
// had the product; for viewed-then-bought n_vb / sqrt(sessions that viewed v · purchases of b after any
// view). A best seller co-occurs with everything, and the normalization keeps it from topping every
// block. Each score is shrunk by its support, n / (n + PAIR_SUPPORT_SHRINKAGE), so one-off pairs with
// rarely viewed products do not outrank a repeated pattern (clickhouse/queries/related.ts, which scores the
// same way in SQL). With several anchors (a cart, a collection) a candidate's per-anchor scores are summed.
import { PAIR_SUPPORT_SHRINKAGE, type RelationKind, type RelationRow } from '../../../clickhouse/queries/related.ts';
import type { Logger } from '../../common/logger.ts';
import { PerStore } from '../per-store.ts';

export const RELATION_KINDS: readonly RelationKind[] = ['co_view', 'co_cart', 'co_purchase', 'viewed_then_bought'];

/** where the rows come from (clickhouse/queries/related.ts in the app; wired by the module) */
export interface RelationsSource {
  rows(storeId: string, kind: RelationKind, anchors?: readonly string[]): Promise<RelationRow[]>;
  /** viewed-then-bought: purchases of each product after any view */
  boughtTotals(storeId: string, products?: readonly string[]): Promise<Map<string, number>>;
}

export interface Neighbour {
  productId: string;
  score: number;
  /** co-occurrences summed over the anchors */
  support: number;
}

/**
 * An anchor's neighbours, strongest first, as two arrays side by side: the product ids (one string per
 * product, shared across anchors and kinds) and their co-occurrence counts. A row object per pair with
 * its own copies of both ids (as ClickHouse returns them) cost ≈ 80 B of heap against 12 here, and a
 * store's pairs grow with its traffic: up to 200 per anchor and kind.
 */
interface Pairs {
  b: string[];
  /** a plain array of doubles: most anchors have a few pairs, and a typed array's own header is ≈ 100 B */
  n: number[];
}

class KindIndex {
  /** anchor → neighbours (diagonal excluded), strongest first */
  readonly pairs = new Map<string, Pairs>();
  /** product → its own count (symmetric kinds: the diagonal; viewed_then_bought: purchases after a view) */
  readonly own = new Map<string, number>();

  setAnchor(anchor: string, rows: readonly RelationRow[], symmetric: boolean, id: (s: string) => string): void {
    // map() allocates exactly the length (push() would leave room for 16 more)
    const kept = rows.filter((r) => r.b !== anchor);
    if (kept.length) this.pairs.set(id(anchor), { b: kept.map((r) => id(r.b)), n: kept.map((r) => r.n) });
    else this.pairs.delete(anchor);
    if (symmetric) {
      const diag = rows.find((r) => r.b === anchor);
      if (diag) this.own.set(id(anchor), diag.n);
      else this.own.delete(anchor);
    }
  }
}

export class StoreRelations {
  readonly kinds = new Map<RelationKind, KindIndex>(RELATION_KINDS.map((k) => [k, new KindIndex()]));
  version = 0;
  /** one string per product id (the rows' ids arrive as copies of their own) */
  private readonly ids = new Map<string, string>();
  private readonly id = (s: string): string => {
    const had = this.ids.get(s);
    if (had !== undefined) return had;
    this.ids.set(s, s);
    return s;
  };

  private kind(k: RelationKind): KindIndex {
    return this.kinds.get(k) as KindIndex;
  }

  /** whether the store has any pair of this kind (cold start otherwise) */
  has(kind: RelationKind): boolean {
    return this.kind(kind).pairs.size > 0;
  }

  apply(kind: RelationKind, anchors: readonly string[] | null, rows: readonly RelationRow[]): void {
    const idx = this.kind(kind);
    const byAnchor = new Map<string, RelationRow[]>();
    for (const r of rows) {
      let list = byAnchor.get(r.a);
      if (!list) byAnchor.set(r.a, (list = []));
      list.push(r);
    }
    const symmetric = kind !== 'viewed_then_bought';
    for (const a of anchors ?? byAnchor.keys()) idx.setAnchor(a, byAnchor.get(a) ?? [], symmetric, this.id);
  }

  setBoughtTotals(totals: ReadonlyMap<string, number>, products: readonly string[] | null): void {
    const own = this.kind('viewed_then_bought').own;
    if (products === null) own.clear();
    for (const p of products ?? totals.keys()) {
      const n = totals.get(p);
      if (n) own.set(this.id(p), n);
      else own.delete(p);
    }
  }

  /**
   * Neighbours of the anchors, popularity-normalized, strongest first; anchors and `exclude` never
   * returned. `weights` scales each anchor's contribution (recency of a viewed product, a cart's order).
   */
  neighbours(
    kind: RelationKind,
    anchors: readonly string[],
    exclude: ReadonlySet<string> = new Set(),
    weights?: ReadonlyMap<string, number>,
  ): Neighbour[] {
    const idx = this.kind(kind);
    const views = this.kind('co_view').own;
    const anchorSet = new Set(anchors);
    const acc = new Map<string, Neighbour>();
    for (const a of anchorSet) {
      const rows = idx.pairs.get(a);
      if (!rows) continue;
      const w = weights?.get(a) ?? 1;
      // viewed-then-bought normalizes by the sessions that viewed the anchor (the co-view diagonal)
      const na = kind === 'viewed_then_bought' ? views.get(a) : idx.own.get(a);
      for (let i = 0; i < rows.b.length; i++) {
        const b = rows.b[i] as string;
        const n = rows.n[i] as number;
        if (anchorSet.has(b) || exclude.has(b)) continue;
        const nb = idx.own.get(b);
        const cosine = n / Math.sqrt(Math.max(na ?? n, n) * Math.max(nb ?? n, n));
        const score = (w * cosine * n) / (n + PAIR_SUPPORT_SHRINKAGE);
        const cur = acc.get(b);
        if (cur) {
          cur.score += score;
          cur.support += n;
        } else acc.set(b, { productId: b, score, support: n });
      }
    }
    return [...acc.values()].sort(
      (x, y) => y.score - x.score || y.support - x.support || (x.productId < y.productId ? -1 : 1),
    );
  }
}

export interface RelationsIndexOptions {
  source: RelationsSource;
  logger: Logger;
  /** full reload of loaded stores every this many ms (default 10 minutes) */
  refreshMs?: number;
}

/** Per-store behavioural relations. */
export class RelationsIndex {
  private readonly stores: PerStore<StoreRelations>;
  private readonly opts: RelationsIndexOptions;
  /** products re-read after `agg:related` messages (metrics, tests) */
  changesApplied = 0;

  constructor(opts: RelationsIndexOptions) {
    this.opts = opts;
    this.stores = new PerStore({
      name: 'relations index',
      logger: opts.logger,
      refreshMs: opts.refreshMs,
      load: async (storeId) => {
        const s = new StoreRelations();
        const [rows, totals] = await Promise.all([
          Promise.all(RELATION_KINDS.map((k) => this.opts.source.rows(storeId, k))),
          this.opts.source.boughtTotals(storeId),
        ]);
        for (const [i, k] of RELATION_KINDS.entries()) s.apply(k, null, rows[i]);
        s.setBoughtTotals(totals, null);
        return s;
      },
      patch: async (storeId, s, products) => {
        const [rows, totals] = await Promise.all([
          Promise.all(RELATION_KINDS.map((k) => this.opts.source.rows(storeId, k, products))),
          this.opts.source.boughtTotals(storeId, products),
        ]);
        for (const [i, k] of RELATION_KINDS.entries()) s.apply(k, products, rows[i]);
        s.setBoughtTotals(totals, products);
        this.changesApplied += products.length;
      },
    });
  }

  close(): void {
    this.stores.close();
  }

  /** the store's relations (loading them on first use; a failed load rejects) */
  get(storeId: string): Promise<StoreRelations> {
    return this.stores.get(storeId);
  }

  /** reload every loaded store (after a pub/sub reconnect: messages may have been missed) */
  reloadAll(): void {
    this.stores.reloadAll();
  }

  /** `agg:related`: these products' rows changed; re-read them (per store one read at a time, coalesced) */
  changed(storeId: string, products: readonly string[]): Promise<void> {
    return this.stores.change(storeId, products);
  }
}
