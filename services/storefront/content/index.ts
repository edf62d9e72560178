// The read API's in-process content index: per store, the published articles and pages that are not
// hidden from search (metafield `seo.hidden`; clickhouse/queries/catalog.ts `contentItems`), with a small
// BM25 keyword index over their text. Loaded on a store's first content search and reloaded (whole: a
// store has hundreds of items, not millions) when `agg:catalog` names a content change of the store.
import type { Redis } from 'ioredis';
import type { Db } from '../../../clickhouse/client.ts';
import { type ContentView, contentItems } from '../../../clickhouse/queries/catalog.ts';
import { CATALOG_CHANNEL, parseCatalogMessage } from '../../../schemas/channels.ts';
import type { Logger } from '../../common/logger.ts';
import { terms } from '../search/analyze.ts';

/** per-field weights of content text relevance */
export const CONTENT_FIELD_WEIGHTS = { title: 3, tags: 1.5, summary: 1, body: 1, author: 0.5 } as const;
type Field = keyof typeof CONTENT_FIELD_WEIGHTS;
const FIELDS = Object.keys(CONTENT_FIELD_WEIGHTS) as Field[];
const K1 = 1.2;
const B = 0.75;

export interface IndexedContent {
  view: ContentView;
  publishedSec: number;
  /** per field: term → frequency, and the field's length */
  fields: Record<Field, { tf: Map<string, number>; length: number }>;
}

/** One store's searchable content. */
export class StoreContent {
  readonly storeId: string;
  readonly items: IndexedContent[];
  private readonly avgLength: Record<Field, number>;
  /** term → items holding it (any field) */
  private readonly df = new Map<string, number>();

  constructor(storeId: string, views: readonly ContentView[]) {
    this.storeId = storeId;
    this.items = views.map((view) => {
      const text: Record<Field, string> = {
        title: view.title,
        tags: view.tags.join(' '),
        summary: view.summary_text,
        // the body repeats the summary's opening: only what follows it adds evidence
        body: view.body_text.startsWith(view.summary_text)
          ? view.body_text.slice(view.summary_text.length)
          : view.body_text,
        author: view.author ?? '',
      };
      const fields = {} as IndexedContent['fields'];
      const seen = new Set<string>();
      for (const f of FIELDS) {
        const list = terms(text[f]);
        const tf = new Map<string, number>();
        for (const t of list) {
          tf.set(t, (tf.get(t) ?? 0) + 1);
          seen.add(t);
        }
        fields[f] = { tf, length: list.length };
      }
      for (const t of seen) this.df.set(t, (this.df.get(t) ?? 0) + 1);
      const published = view.published_at ? Date.parse(view.published_at) / 1000 : 0;
      return { view, publishedSec: published, fields };
    });
    const n = Math.max(1, this.items.length);
    this.avgLength = Object.fromEntries(
      FIELDS.map((f) => [f, Math.max(1, this.items.reduce((s, it) => s + it.fields[f].length, 0) / n)]),
    ) as Record<Field, number>;
  }

  /** BM25 with field weights: every item matching at least one query term, with its score */
  textScores(query: string, contentType: 'article' | 'page' | null): { item: IndexedContent; score: number }[] {
    const q = [...new Set(terms(query))];
    if (q.length === 0) return [];
    const n = this.items.length;
    const out: { item: IndexedContent; score: number }[] = [];
    for (const item of this.items) {
      if (contentType && item.view.content_type !== contentType) continue;
      let score = 0;
      for (const t of q) {
        const df = this.df.get(t) ?? 0;
        if (df === 0) continue;
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        for (const f of FIELDS) {
          const tf = item.fields[f].tf.get(t);
          if (!tf) continue;
          const norm = tf + K1 * (1 - B + (B * item.fields[f].length) / this.avgLength[f]);
          score += CONTENT_FIELD_WEIGHTS[f] * idf * ((tf * (K1 + 1)) / norm);
        }
      }
      if (score > 0) out.push({ item, score });
    }
    return out;
  }
}

export interface ContentIndexOptions {
  db: Db;
  /** a dedicated subscriber connection (pub/sub mode); none: no live updates */
  subscriber?: Redis;
  logger: Logger;
}

/** Per-store content, loaded on demand and reloaded on content changes from `agg:catalog`. */
export class ContentIndex {
  private readonly stores = new Map<string, Promise<StoreContent>>();
  private readonly opts: ContentIndexOptions;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** reloads done after a change (tests, metrics) */
  reloads = 0;

  constructor(opts: ContentIndexOptions) {
    this.opts = opts;
  }

  async start(): Promise<void> {
    const sub = this.opts.subscriber;
    if (!sub) return;
    sub.on('message', (channel: string, text: string) => {
      if (channel !== CATALOG_CHANNEL) return;
      try {
        for (const c of parseCatalogMessage(text)) if (c.topic === 'content') this.changed(c.store_id);
      } catch {
        // the catalog index logs malformed messages
      }
    });
    let first = true;
    sub.on('ready', () => {
      if (first) return;
      for (const storeId of this.stores.keys()) this.changed(storeId);
    });
    await sub.subscribe(CATALOG_CHANNEL);
    first = false;
  }

  close(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  get(storeId: string): Promise<StoreContent> {
    let p = this.stores.get(storeId);
    if (!p) {
      p = this.load(storeId);
      this.stores.set(storeId, p);
      p.catch(() => this.stores.delete(storeId));
    }
    return p;
  }

  private async load(storeId: string): Promise<StoreContent> {
    return new StoreContent(storeId, await contentItems(this.opts.db, storeId));
  }

  /** a content change of a loaded store: reload it shortly (changes of one chunk coalesce) */
  private changed(storeId: string): void {
    if (!this.stores.has(storeId) || this.timers.has(storeId)) return;
    const t = setTimeout(() => {
      this.timers.delete(storeId);
      const p = this.load(storeId);
      p.then(
        () => {
          this.stores.set(storeId, p);
          this.reloads++;
        },
        (err: Error) => this.opts.logger.warn({ err: err.message, store: storeId }, 'content index: reload failed'),
      );
    }, 50);
    t.unref();
    this.timers.set(storeId, t);
  }
}
