// The lifecycle the read API's per-store indexes of stream aggregates share (the learned search evidence,
// the block relations): a store's state is loaded on its first request (concurrent requests share the
// load; a failed load is forgotten, so the next request retries and the caller degrades meanwhile),
// reloaded whole on a timer and after a pub/sub reconnect (messages may have been missed), and patched by
// changes naming the keys (products, queries) whose rows moved. A store's changes run one at a time (so
// the newest read wins) and coalesce: keys published while a patch runs are read together by the next
// one, so a burst of chunk notifications (a demo load, a replay catching up) costs a few reads, and one
// busy store never queues another store's changes behind it. Each loaded state carries a version that
// moves with every load and applied patch (results cache keys).
import type { Logger } from '../common/logger.ts';

export interface Versioned {
  version: number;
}

export interface PerStoreOptions<T> {
  /** a store's whole state */
  load(storeId: string): Promise<T>;
  /** re-read these keys' rows into a loaded state */
  patch(storeId: string, state: T, keys: readonly string[]): Promise<void>;
  logger: Logger;
  /** names the index in log lines */
  name: string;
  /** full reload of every loaded store every this many ms (default 10 minutes) */
  refreshMs?: number;
}

export class PerStore<T extends Versioned> {
  private readonly stores = new Map<string, Promise<T>>();
  private readonly loaded = new Map<string, T>();
  private readonly opts: PerStoreOptions<T>;
  private timer: NodeJS.Timeout | null;
  /** stores with a patch running or due → the keys not yet read and who waits for them */
  private readonly queues = new Map<string, { keys: Set<string>; waiters: (() => void)[] }>();
  /** stores being (re)loaded → the changes published meanwhile (applied once the load is in place: the
   * load may have read the tables before those rows were written) */
  private readonly loading = new Map<string, (() => void)[]>();

  constructor(opts: PerStoreOptions<T>) {
    this.opts = opts;
    this.timer = setInterval(() => this.reloadAll(), opts.refreshMs ?? 600_000);
    this.timer.unref();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** the store's state, loading it on first use (a failed load rejects; the caller degrades) */
  get(storeId: string): Promise<T> {
    let p = this.stores.get(storeId);
    if (!p) {
      p = this.load(storeId);
      this.stores.set(storeId, p);
      p.catch(() => this.stores.delete(storeId));
    }
    return p;
  }

  private async load(storeId: string): Promise<T> {
    const during: (() => void)[] = [];
    this.loading.set(storeId, during);
    let s: T;
    try {
      s = await this.opts.load(storeId);
    } finally {
      if (this.loading.get(storeId) === during) this.loading.delete(storeId);
    }
    s.version = (this.loaded.get(storeId)?.version ?? 0) + 1;
    this.loaded.set(storeId, s);
    for (const run of during) run();
    return s;
  }

  /** reload every loaded store (the timer, and after a pub/sub reconnect) */
  reloadAll(): void {
    for (const id of this.loaded.keys()) {
      const p = this.load(id);
      p.then(
        () => this.stores.set(id, p),
        (err: Error) => this.opts.logger.warn({ err: err.message, store: id }, `${this.opts.name}: reload failed`),
      );
    }
  }

  /**
   * These keys' rows changed: re-read them into the loaded store (none loaded or loading: nothing to do,
   * the next load reads them; one loading: applied once the load is in place). Resolves once a patch that
   * read them after this call has run; a failed patch is logged and the state stays as it was until the
   * next reload.
   */
  change(storeId: string, keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return Promise.resolve();
    const during = this.loading.get(storeId);
    if (during) {
      // a (re)load is reading the tables: apply the change to what it loads, after it
      return new Promise((resolve) => during.push(() => void this.change(storeId, keys).then(resolve)));
    }
    if (!this.loaded.has(storeId)) return Promise.resolve();
    let q = this.queues.get(storeId);
    const idle = !q;
    if (!q) this.queues.set(storeId, (q = { keys: new Set(), waiters: [] }));
    for (const k of keys) q.keys.add(k);
    const done = new Promise<void>((resolve) => q.waiters.push(resolve));
    if (idle) void this.drain(storeId, q);
    return done;
  }

  private async drain(storeId: string, q: { keys: Set<string>; waiters: (() => void)[] }): Promise<void> {
    while (q.keys.size > 0) {
      const keys = [...q.keys];
      const waiters = q.waiters.splice(0);
      q.keys.clear();
      // the state in place now (a reload may have replaced the one the change was published against)
      const s = this.loaded.get(storeId);
      if (s) {
        try {
          await this.opts.patch(storeId, s, keys);
          s.version++;
        } catch (err) {
          this.opts.logger.warn(
            { err: (err as Error).message, store: storeId },
            `${this.opts.name}: change not applied`,
          );
        }
      }
      for (const w of waiters) w();
    }
    this.queues.delete(storeId);
  }
}
