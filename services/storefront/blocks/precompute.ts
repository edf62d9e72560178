// The similar-products precompute (similar/index.ts) at a pace set by what it costs. The base pace — up to
// 25 products every 100 ms — assumes a product costs well under 4 ms; on a 20 000-product store one cost
// 50-400 ms before the index was packed (4-7 ms after, text and attributes; image similarities add to it),
// so every tick held the read API's event loop for seconds and the loop was busy nearly all the time:
// requests waited behind it (the blocks bench's HTTP phase and its 5-minute fetch timeouts, freshness of
// several seconds).
//
// Here the products are precomputed one at a time within a time budget per turn (BUDGET_MS), then the
// precompute rests in proportion to what it spent, so it takes at most SHARE of the event loop however
// expensive a product is: a small store is precomputed in seconds, a large one over a longer pass
// (meanwhile a product without an entry is computed live on its request, with the same result). It works
// in the loop's idle time only: a turn whose rest found the loop busy (utilization ≥ BUSY, requests
// waiting) is skipped, so under load the requests get the loop and the pass resumes when load drops. The
// lists are those of the base class, computed by the same `precomputeSome`.
import { SimilarPrecompute, similarOf } from '../similar/index.ts';

/** one turn works this long at most (plus the one product under way) */
const BUDGET_MS = 8;
/** share of the event loop the precompute may take */
const SHARE = 0.2;
/** a turn with nothing to do: look again after this long */
const IDLE_MS = 1_000;
const MIN_REST_MS = 20;
/** the loop's utilization during a rest above which the next turn is skipped */
const BUSY = 0.8;

export class PacedPrecompute extends SimilarPrecompute {
  private next: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly budgetMs: number;
  private readonly share: number;
  /** products precomputed so far (metrics, tests) */
  computed = 0;
  /** turns skipped because the loop was busy (tests) */
  skipped = 0;
  private restStarted = performance.eventLoopUtilization();
  private readonly busy: number;

  constructor(opts: { budgetMs?: number; share?: number; busy?: number } = {}) {
    // the base class's own timer never fires (the longest interval a timer takes); closed by close()
    super({ intervalMs: 2 ** 31 - 1 });
    this.budgetMs = opts.budgetMs ?? BUDGET_MS;
    this.share = opts.share ?? SHARE;
    this.busy = opts.busy ?? BUSY;
    this.schedule(MIN_REST_MS);
  }

  override close(): void {
    super.close();
    this.stopped = true;
    if (this.next) clearTimeout(this.next);
    this.next = null;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.next = setTimeout(() => this.turn(), ms);
    this.next.unref();
  }

  private turn(): void {
    if (performance.eventLoopUtilization(this.restStarted).utilization >= this.busy) {
      this.skipped++;
      this.rest(MIN_REST_MS);
      return;
    }
    const started = performance.now();
    let worked = false;
    // at least one product per turn, then more while the budget lasts
    stores: for (const s of this.stores.values()) {
      const similar = similarOf(s.catalog);
      for (;;) {
        if (worked && performance.now() - started >= this.budgetMs) break stores;
        const n = similar.precomputeSome(1, s.images);
        if (n === 0) break;
        this.computed += n;
        worked = true;
      }
    }
    const spent = performance.now() - started;
    this.rest(worked ? Math.max(MIN_REST_MS, (spent * (1 - this.share)) / this.share) : IDLE_MS);
  }

  private rest(ms: number): void {
    this.restStarted = performance.eventLoopUtilization();
    this.schedule(ms);
  }
}
