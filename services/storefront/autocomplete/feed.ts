// Keeps the in-process autocomplete index fed from the trending aggregate:
//
//   start       subscribe to `agg:trending` first (messages are held), then load every trending cell of
//               the window from ClickHouse and build each store's index, then apply the held messages
//   live        each message carries the current votes of changed cells (store, country, query, hour);
//               a cell only grows within its hour, so the increase over the last known value is added
//               (weighted by the hour's decay) and repeats or reordered messages add nothing
//   periodic    a full reload every AUTOCOMPLETE_REFRESH_MS recomputes the decay, drops hours that left
//               the window and repairs anything a lost message missed; a resubscribe after a Redis
//               disconnect triggers one at once (pub/sub does not replay)
//
// Score of a query = Σ over its hourly cells in the window of votes × 0.5^(age in hours / half-life).
// A country's set uses its own cells; the store-wide set sums all countries' cells (including searches
// whose country is unknown).
//
// Staleness bound: pub/sub path ≈ processor linger + insert + publish (see streams/trending/notify.ts)
// + the index rebuild (at once for a store that was quiet; at most one rebuild per max(100 ms, 5× its
// build time) for a busy one); without pub/sub (Redis down, message lost) at most
// AUTOCOMPLETE_REFRESH_MS (default 60 s) plus one load.
import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.ts';
import { parseTrendingMessage, TRENDING_CHANNEL, type TrendingCell } from '../../../schemas/channels.ts';
import type { AutocompleteIndex, TrendingDelta, TrendingRow } from './index.ts';

export interface TrendingFeedOptions {
  index: AutocompleteIndex;
  /** every cell with a bucket at or after `sinceMs` (clickhouse/queries/trending.ts loadTrendingCells) */
  loadCells(sinceMs: number): Promise<TrendingCell[]>;
  /** a dedicated connection (a subscribed ioredis client cannot run other commands) */
  subscriber: Redis;
  logger: Logger;
  refreshMs: number;
  /** trailing window of hours that count (default 7 days) */
  windowHours?: number;
  /** decay half-life in hours (default 24) */
  halfLifeHours?: number;
  now?: () => number;
}

const HOUR = 3_600_000;

export class TrendingFeed {
  private readonly o: Required<Omit<TrendingFeedOptions, 'now'>> & { now: () => number };
  /** store → cell key → votes */
  private cells = new Map<string, Map<string, number>>();
  private held: TrendingCell[][] | null = null;
  private timer: NodeJS.Timeout | undefined;
  private loading: Promise<void> | null = null;
  private stopped = false;
  private subscribed = false;
  /** epoch ms of the last completed full load */
  lastLoadAt = 0;
  /** epoch ms of the last applied pub/sub message */
  lastMessageAt = 0;
  messagesApplied = 0;

  constructor(opts: TrendingFeedOptions) {
    this.o = { windowHours: 168, halfLifeHours: 24, now: Date.now, ...opts };
  }

  async start(): Promise<void> {
    const sub = this.o.subscriber;
    if (this.stopped) return;
    sub.on('message', (channel: string, text: string) => {
      if (channel !== TRENDING_CHANNEL) return;
      let msg: TrendingCell[];
      try {
        msg = parseTrendingMessage(text);
      } catch (err) {
        this.o.logger.warn({ err: (err as Error).message }, 'autocomplete: malformed agg:trending message ignored');
        return;
      }
      if (this.held) this.held.push(msg);
      else this.apply(msg);
    });
    // after a reconnect ioredis resubscribes; anything published meanwhile is lost, so reload
    sub.on('ready', () => {
      if (this.subscribed && !this.stopped) void this.refresh().catch(() => {});
    });
    // the periodic reload also retries a subscription that failed (Redis down at start)
    this.timer = setInterval(() => void this.tick(), this.o.refreshMs);
    this.timer.unref();
    await this.subscribe();
    await this.refresh();
  }

  private async subscribe(): Promise<void> {
    if (this.subscribed) return;
    try {
      await this.o.subscriber.subscribe(TRENDING_CHANNEL);
      this.subscribed = true;
    } catch (err) {
      this.o.logger.warn(
        { err: (err as Error).message },
        'autocomplete: cannot subscribe to agg:trending yet; serving from periodic reloads',
      );
    }
  }

  private async tick(): Promise<void> {
    await this.subscribe();
    await this.refresh().catch(() => {});
  }

  /** full reload from ClickHouse; concurrent callers share one load */
  refresh(): Promise<void> {
    if (this.loading) return this.loading;
    this.held = [];
    this.loading = (async () => {
      const t0 = this.o.now();
      try {
        const since = Math.floor(t0 / HOUR) * HOUR - (this.o.windowHours - 1) * HOUR;
        const rows = await this.o.loadCells(since);
        const cells = new Map<string, Map<string, number>>();
        for (const r of rows) {
          let m = cells.get(r.store_id);
          if (!m) cells.set(r.store_id, (m = new Map()));
          m.set(cellKey(r.country, r.query, Date.parse(r.bucket)), r.votes);
        }
        this.cells = cells;
        const index = this.o.index;
        for (const storeId of index.storeIds()) if (!cells.has(storeId)) index.remove(storeId);
        for (const [storeId, m] of cells) index.load(storeId, this.snapshot(m));
        this.lastLoadAt = this.o.now();
        this.o.logger.debug(
          { stores: cells.size, cells: rows.length, ms: this.lastLoadAt - t0 },
          'autocomplete index loaded',
        );
      } catch (err) {
        this.o.logger.warn(
          { err: (err as Error).message },
          'autocomplete: trending load failed; serving the previous index',
        );
        throw err;
      } finally {
        const held = this.held ?? [];
        this.held = null;
        this.loading = null;
        for (const msg of held) this.apply(msg);
      }
    })();
    return this.loading;
  }

  private weight(bucketMs: number): number {
    const age = Math.max(0, (this.o.now() - bucketMs) / HOUR);
    if (age > this.o.windowHours) return 0;
    return 0.5 ** (age / this.o.halfLifeHours);
  }

  private snapshot(m: Map<string, number>) {
    const storeWide = new Map<string, number>();
    const byCountry = new Map<string, Map<string, number>>();
    for (const [key, votes] of m) {
      const { country, query, bucketMs } = parseCellKey(key);
      const s = votes * this.weight(bucketMs);
      if (s <= 0) continue;
      storeWide.set(query, (storeWide.get(query) ?? 0) + s);
      if (country) {
        let c = byCountry.get(country);
        if (!c) byCountry.set(country, (c = new Map()));
        c.set(query, (c.get(query) ?? 0) + s);
      }
    }
    const rows = (x: Map<string, number>): TrendingRow[] => [...x].map(([query, score]) => ({ query, score }));
    return { storeWide: rows(storeWide), byCountry: Object.fromEntries([...byCountry].map(([c, x]) => [c, rows(x)])) };
  }

  private apply(msg: TrendingCell[]): void {
    const byStore = new Map<string, TrendingDelta[]>();
    for (const d of msg) {
      const bucketMs = Date.parse(d.bucket);
      if (!Number.isFinite(bucketMs)) continue;
      let m = this.cells.get(d.store_id);
      if (!m) this.cells.set(d.store_id, (m = new Map()));
      const key = cellKey(d.country, d.query, bucketMs);
      const prev = m.get(key) ?? 0;
      if (!(d.votes > prev)) continue;
      m.set(key, d.votes);
      const w = this.weight(bucketMs);
      if (w <= 0) continue;
      let l = byStore.get(d.store_id);
      if (!l) byStore.set(d.store_id, (l = []));
      l.push({ query: d.query, country: d.country || null, delta: (d.votes - prev) * w });
    }
    for (const [storeId, deltas] of byStore) this.o.index.applyDeltas(storeId, deltas);
    this.lastMessageAt = this.o.now();
    this.messagesApplied++;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    try {
      await this.loading;
    } catch {}
    this.o.subscriber.disconnect();
  }
}

function cellKey(country: string, query: string, bucketMs: number): string {
  return `${country}\u0001${bucketMs}\u0001${query}`;
}

function parseCellKey(key: string): { country: string; query: string; bucketMs: number } {
  const a = key.indexOf('\u0001');
  const b = key.indexOf('\u0001', a + 1);
  return { country: key.slice(0, a), bucketMs: Number(key.slice(a + 1, b)), query: key.slice(b + 1) };
}
