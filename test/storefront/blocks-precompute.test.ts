// The similar-products precompute paced by its cost (services/storefront/blocks/precompute.ts): it fills
// exactly the lists a live computation gives, and works in short turns, so the event loop runs between
// them (a request is never queued behind a whole batch of expensive products), and only in the loop's idle
// time: while the loop is busy it waits.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PacedPrecompute } from '../../services/storefront/blocks/precompute.ts';
import { StoreCatalog } from '../../services/storefront/results/catalog.ts';
import { StoreSimilar, similarOf } from '../../services/storefront/similar/index.ts';
import { productView } from './fixtures.ts';

const WORDS = ['linen', 'cotton', 'wool', 'summer', 'winter', 'midi', 'wrap', 'oxford', 'denim', 'silk', 'knit'];
const TYPES = ['Dress', 'Shirt', 'Skirt', 'Jacket', 'Mug', 'Vase'];

/** a store of `n` products: titles from a few words, types, prices (deterministic) */
function catalogOf(storeId: string, n: number): StoreCatalog {
  const catalog = new StoreCatalog(storeId);
  for (let i = 0; i < n; i++) {
    const w = (k: number) => WORDS[(i * (k + 3) + k) % WORDS.length];
    const type = TYPES[i % TYPES.length];
    catalog.putProduct(
      productView(String(1000 + i), `${w(0)} ${w(1)} ${w(2)} ${type.toLowerCase()}`, type, 10 + (i % 37)),
    );
  }
  return catalog;
}

let paced: PacedPrecompute | null = null;
afterEach(() => {
  paced?.close();
  paced = null;
});

describe('similar products precompute, paced by its cost', () => {
  it('precomputes every product of a served store, with the lists a live computation gives', async () => {
    const N = 300;
    const catalog = catalogOf('s-paced-1', N);
    paced = new PacedPrecompute();
    paced.track(catalog, null);
    await vi.waitFor(() => expect(paced?.computed).toBe(N), { timeout: 60_000, interval: 50 });
    const served = similarOf(catalog);
    // the same products in a store of their own, computed live on request
    const fresh = new StoreSimilar(catalogOf('s-paced-2', N));
    for (const id of catalog.products.keys()) {
      const pre = served.neighbours(id, null, null);
      expect(pre.source).toBe('precomputed');
      const live = fresh.neighbours(id, null, null);
      expect(live.source).toBe('live');
      expect(pre.list).toEqual(live.list);
    }
  });

  it('works in short turns: the event loop runs between them', async () => {
    const N = 400;
    const catalog = catalogOf('s-paced-3', N);
    // a budget of 0: one product per turn
    paced = new PacedPrecompute({ budgetMs: 0 });
    paced.track(catalog, null);
    const seen = new Set<number>();
    let turns = 0;
    await vi.waitFor(
      async () => {
        // a macrotask of ours between the precompute's turns: it sees the count move a product at a time
        await new Promise((r) => setImmediate(r));
        turns++;
        seen.add(paced?.computed ?? 0);
        expect(paced?.computed).toBeGreaterThanOrEqual(20);
      },
      { timeout: 60_000, interval: 1 },
    );
    // every count from 0 to 20 was observed by the event loop: no turn did more than one product
    for (let k = 0; k <= 20; k++) expect(seen.has(k), `count ${k} seen (${turns} polls)`).toBe(true);
  });

  it('waits while the event loop is busy, and resumes once it is idle', async () => {
    const N = 200;
    const catalog = catalogOf('s-paced-4', N);
    paced = new PacedPrecompute({ budgetMs: 0 });
    // the loop kept busy for 600 ms: macrotasks of 4 ms each, back to back (a server saturated by requests)
    const busyUntil = performance.now() + 600;
    await new Promise<void>((resolve) => {
      const spin = () => {
        const until = performance.now() + 4;
        while (performance.now() < until);
        if (performance.now() < busyUntil) setImmediate(spin);
        else resolve();
      };
      paced?.track(catalog, null);
      spin();
    });
    expect(paced.computed).toBe(0);
    expect(paced.skipped).toBeGreaterThan(0);
    // idle again: the pass runs to the end
    await vi.waitFor(() => expect(paced?.computed).toBe(N), { timeout: 60_000, interval: 50 });
  });
});
