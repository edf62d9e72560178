// What shoppers chose after searching a query, learned from the event stream: per store, per query, the
// products viewed, added to cart and bought in the same session after the search (the aggregates
// searched_then_viewed / searched_then_carted / searched_then_purchased, written by the `events`
// processor). Loaded per store on its first search, then kept fresh from `agg:search`: the processor
// publishes the queries whose rows a chunk changed, and the index re-reads exactly those, so a burst of
// shopper behaviour moves rankings within the processor's linger plus one read (well under 5 s).
// A periodic full reload (`refreshMs`) lets old days age out of the window.
//
// Queries are keyed by their analyzed form (analyze.ts queryKey: "Festival Fits" and "festival fit" are
// one key), so inflections and word order of stop words do not split the evidence.
import type { LearnedRow } from '../../../clickhouse/queries/learned.ts';
import type { Logger } from '../../common/logger.ts';
import { PerStore } from '../per-store.ts';
import { queryKey } from './analyze.ts';

/** where the rows come from (clickhouse/queries/learned.ts in the app; wired by the module) */
export interface LearnedSource {
  store(storeId: string): Promise<LearnedRow[]>;
  queries(storeId: string, queries: readonly string[]): Promise<LearnedRow[]>;
}

export interface LearnedProduct {
  productId: string;
  /** views + 3·carts + 5·purchases */
  engagement: number;
  views: number;
  carts: number;
  purchases: number;
}

export const engagementOf = (r: { views: number; carts: number; purchases: number }): number =>
  r.views + 3 * r.carts + 5 * r.purchases;

class StoreLearned {
  /** raw query → its rows (replaced whole on a change) */
  readonly byQuery = new Map<string, LearnedRow[]>();
  /** analyzed key → products, most engaged first (derived from byQuery) */
  readonly byKey = new Map<string, LearnedProduct[]>();
  /** the raw queries of each key */
  private readonly queriesOf = new Map<string, Set<string>>();
  /** every word of every learned query (spelling correction must not "fix" them) */
  readonly words = new Set<string>();
  version = 0;

  setQuery(query: string, rows: LearnedRow[]): void {
    const key = queryKey(query);
    if (!key) return;
    if (rows.length) this.byQuery.set(query, rows);
    else this.byQuery.delete(query);
    let qs = this.queriesOf.get(key);
    if (!qs) this.queriesOf.set(key, (qs = new Set()));
    if (rows.length) qs.add(query);
    else qs.delete(query);
    for (const w of query.split(/\s+/)) if (w) this.words.add(w);
    this.rebuild(key);
  }

  private rebuild(key: string): void {
    const sums = new Map<string, LearnedProduct>();
    for (const q of this.queriesOf.get(key) ?? []) {
      for (const r of this.byQuery.get(q) ?? []) {
        const s = sums.get(r.productId) ?? { productId: r.productId, engagement: 0, views: 0, carts: 0, purchases: 0 };
        s.views += r.views;
        s.carts += r.carts;
        s.purchases += r.purchases;
        s.engagement = engagementOf(s);
        sums.set(r.productId, s);
      }
    }
    const list = [...sums.values()].sort((a, b) => b.engagement - a.engagement || (a.productId < b.productId ? -1 : 1));
    if (list.length) this.byKey.set(key, list);
    else this.byKey.delete(key);
  }
}

export interface LearnedIndexOptions {
  source: LearnedSource;
  logger: Logger;
  /** full reload of loaded stores every this many ms (default 10 minutes) */
  refreshMs?: number;
}

function group(rows: readonly LearnedRow[]): Map<string, LearnedRow[]> {
  const out = new Map<string, LearnedRow[]>();
  for (const r of rows) {
    let list = out.get(r.query);
    if (!list) out.set(r.query, (list = []));
    list.push(r);
  }
  return out;
}

/** Per-store learned query → product evidence. */
export class LearnedIndex {
  private readonly stores: PerStore<StoreLearned>;
  private readonly opts: LearnedIndexOptions;
  /** query changes applied (metrics, tests) */
  changesApplied = 0;

  constructor(opts: LearnedIndexOptions) {
    this.opts = opts;
    this.stores = new PerStore({
      name: 'learned index',
      logger: opts.logger,
      refreshMs: opts.refreshMs,
      load: async (storeId) => {
        const s = new StoreLearned();
        for (const [q, rows] of group(await this.opts.source.store(storeId))) s.setQuery(q, rows);
        return s;
      },
      patch: async (storeId, s, queries) => {
        const rows = group(await this.opts.source.queries(storeId, queries));
        for (const q of queries) s.setQuery(q, rows.get(q) ?? []);
        this.changesApplied += queries.length;
      },
    });
  }

  close(): void {
    this.stores.close();
  }

  /** the store's learned evidence (loading it on first use; a failed load rejects, the caller degrades) */
  get(storeId: string): Promise<StoreLearned> {
    return this.stores.get(storeId);
  }

  /** reload every loaded store (after a pub/sub reconnect: messages may have been missed) */
  reloadAll(): void {
    this.stores.reloadAll();
  }

  /** `agg:search`: these queries' rows changed; re-read them (per store one read at a time, coalesced) */
  changed(storeId: string, queries: readonly string[]): Promise<void> {
    return this.stores.change(storeId, queries);
  }
}

export type { StoreLearned };
