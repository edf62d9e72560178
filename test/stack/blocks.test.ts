// Recommendation blocks and similar products on the demo store, through the running stack: the demo's
// shopper sessions are replayed (beacon → events processor → pair aggregates → agg:related → the read
// API's relations index; orders → co-purchase pairs), then every block rule is exercised against the
// planted truth (co-view clusters, bundles) and the catalog.
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEMO_BLOCKS } from '../../services/demo/generator/model.ts';
import { mean, precisionAtK, recallAtK, visibleAt } from '../../services/demo/generator/quality.ts';
import { type DemoStack, demoStack } from '../helpers/demo-stack.ts';
import { sql, stack } from '../helpers/stack.ts';
import { testStoreWriter, waitForApp } from '../helpers/stores.ts';

type Rec = {
  id: number;
  title: string;
  product_type: string;
  available: boolean;
  created_at: number;
  published_at: number;
};
type BlockAnswer = {
  results: Rec[];
  totalResults: number;
  resultsPerPage: number;
  block: { id: string; title: string; anchor_type: string; strategy_type: string; strategy_key: string } | null;
  attributionToken: string;
  _meta: {
    block?: {
      strategy: string;
      chain: { block_id: string; mode: string; results: number; rule?: number }[];
      coldStart?: boolean;
      similarSource?: string;
    };
    similar?: { source: string };
  };
  error?: { code: string; fields: { path: string }[] };
};

let d: DemoStack;
const ids = (r: { results: Rec[] }) => r.results.map((x) => String(x.id));

/** a block config written to the store (a fixed-format ULID per test) */
async function putBlock(item: Record<string, unknown>): Promise<string> {
  const id = (item.id as string | undefined) ?? newUlid();
  const w = testStoreWriter();
  await w.putConfig(d.storeId, 'block', { title: 'Test block', priority: 100, ...item, id });
  await waitForApp(w);
  return id;
}

const block = (id: string, body: Record<string, unknown> = {}) => d.post<BlockAnswer>(`/blocks/${id}/products`, body);

/** a shopper's browser (bot traffic feeds no behavioural aggregate) */
const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';

/** events of one shopper session, a millisecond apart in the order given */
function session(tag: string, steps: Record<string, unknown>[]): Record<string, unknown>[] {
  const id = `${tag}-${newUlid()}`;
  const t = Date.now() - 60_000;
  return steps.map((e, i) => ({ event_id: newUlid(), timestamp: new Date(t + i).toISOString(), session_id: id, ...e }));
}
const view = (id: string) => ({ event_type: 'product_view', product_id: Number(id) });
const cart = (id: string) => ({ event_type: 'add_to_cart', product_id: Number(id), quantity: 1, price: '10.00' });
const purchase = (...pids: string[]) => ({
  event_type: 'purchase',
  currency: 'USD',
  line_items: pids.map((id) => ({ product_id: Number(id), quantity: 1, price: '10.00' })),
});
const search = (query: string) => ({ event_type: 'search', query, contextual_data: { search_source: 'typed' } });

/** sends events through /beacon; returns when the beacon acknowledged them (performance.now()) */
async function beacon(events: Record<string, unknown>[]): Promise<number> {
  const res = await fetch(`${stack().httpUrl}/beacon`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-storefront-access-token': d.token, 'user-agent': BROWSER_UA },
    body: JSON.stringify({ events }),
  });
  const acked = performance.now();
  expect(res.status).toBe(201);
  return acked;
}

/** published products no shopper of the demo touched (no engagement, no sale): planted behaviour is their only evidence */
let quiet: string[] = [];
const takeQuiet = (n: number): string[] => {
  expect(quiet.length).toBeGreaterThanOrEqual(n);
  return quiet.splice(0, n);
};

beforeAll(async () => {
  d = await demoStack({ name: 'blocks', products: 1200, sessions: 500, seed: 'blocks' });
  const stats = await d.replay();
  expect(stats.rejected).toBe(0);
  // every planted co-view pair and bundle has reached ClickHouse
  const gt = d.demo.groundTruth;
  await vi.waitFor(
    async () => {
      const [v] = await sql<{ n: string }>(
        `SELECT toString(count()) AS n FROM (SELECT product_a FROM co_view_pairs WHERE store_id = '${d.storeId}' AND product_a != product_b GROUP BY product_a)`,
      );
      expect(Number(v.n)).toBeGreaterThanOrEqual(gt.coViewClusters.reduce((n, c) => n + c.productIds.length, 0));
      const [o] = await sql<{ n: string }>(
        `SELECT toString(count()) AS n FROM (SELECT product_a FROM co_purchase_pairs WHERE store_id = '${d.storeId}' AND product_a != product_b GROUP BY product_a)`,
      );
      expect(Number(o.n)).toBeGreaterThanOrEqual(gt.bundles.reduce((n, b) => n + b.productIds.length, 0));
    },
    { timeout: 120_000, interval: 500 },
  );
  // every product a replayed session named, from the sessions themselves: the aggregates of the replay's
  // last sessions may still be on their way (a product read as untouched then gained co-views later)
  const touched = new Set<string>();
  for (const session of d.demo.sessions())
    for (const step of session.steps) {
      if ('productId' in step) touched.add(step.productId);
      if (step.type === 'purchase') for (const line of step.lines) touched.add(line.productId);
    }
  for (const r of await sql<{ pid: string }>(
    `SELECT DISTINCT toString(product_id) AS pid FROM product_popularity_daily WHERE store_id = '${d.storeId}'`,
  ))
    touched.add(r.pid);
  const planted = new Set([
    ...d.demo.groundTruth.coViewClusters.flatMap((c) => c.productIds),
    ...d.demo.groundTruth.bundles.flatMap((b) => b.productIds),
  ]);
  quiet = [...d.demo.products()]
    .filter((p) => visibleAt(p) && !touched.has(p.id) && !planted.has(p.id))
    .map((p) => p.id)
    .reverse();
}, 600_000);

afterAll(async () => {
  await d?.close();
});

describe('blocks: quality on the planted truth', () => {
  it('customers also viewed: precision@k ≥ 0.9 on the planted co-view clusters (k = the other members, at most 10)', async () => {
    const scores: number[] = [];
    await vi.waitFor(
      async () => {
        scores.length = 0;
        for (const c of d.demo.groundTruth.coViewClusters)
          for (const p of c.productIds) {
            const r = await block(DEMO_BLOCKS.alsoViewed, { anchor_id: p });
            const others = new Set(c.productIds.filter((x) => x !== p));
            scores.push(precisionAtK(ids(r.body), others, Math.min(10, others.size)));
          }
        expect(mean(scores)).toBeGreaterThanOrEqual(0.9);
      },
      { timeout: 30_000, interval: 1_000 },
    );
  });

  it('frequently bought together finds the planted bundles', async () => {
    const scores: number[] = [];
    for (const b of d.demo.groundTruth.bundles)
      for (const p of b.productIds) {
        const r = await block(DEMO_BLOCKS.boughtTogether, { anchor_id: `gid://shopify/Product/${p}` });
        const others = new Set(b.productIds.filter((x) => x !== p));
        scores.push(recallAtK(ids(r.body), others, Math.max(4, others.size)));
      }
    expect(mean(scores)).toBeGreaterThanOrEqual(0.9);
  });

  it('a new co-view pattern sent through /beacon changes the block; the time from the acknowledgement is printed (goal ≤ 2 s)', async () => {
    /** plants a co-view pair of two products nobody viewed; ms from the beacon's acknowledgement to the first
     *  answer showing it (each answer timed when it arrives: an upper bound of when the block changed) */
    const round = async (): Promise<number> => {
      const [a, b] = takeQuiet(2);
      const before = await block(DEMO_BLOCKS.alsoViewed, { anchor_id: a });
      expect(ids(before.body)).not.toContain(b);
      const acked = await beacon(Array.from({ length: 6 }, () => session('cv', [view(a), view(b)])).flat());
      let changedAfter = Number.POSITIVE_INFINITY;
      await vi.waitFor(
        async () => {
          const r = await block(DEMO_BLOCKS.alsoViewed, { anchor_id: a });
          if (ids(r.body).includes(b)) changedAfter = performance.now() - acked;
          expect(ids(r.body)).toContain(b);
        },
        { timeout: 60_000, interval: 20 },
      );
      expect(ids((await block(DEMO_BLOCKS.alsoViewed, { anchor_id: a })).body)[0]).toBe(b);
      return changedAfter;
    };
    // the first round waits behind whatever of the demo replay the events processor still has to write
    // (a backlog, not the freshness of a new pattern): it is not timed
    const backlog = await round();
    const waits = [await round(), await round(), await round()].map(Math.round);
    // a figure for the report, not an assertion: on the shared 2-core machine it lands around the goal
    // (1.0–4.0 s at load average 5–20), so asserting it would fail with the load, not with the code;
    // bench/blocks.ts measures p50/p95 against the goal
    console.log(
      `blocks freshness: beacon acknowledged → changed block in ${waits.join(', ')} ms (goal ≤ 2000 ms; the first round, behind the replay's backlog: ${Math.round(backlog)} ms)`,
    );
    expect(waits.every((w) => Number.isFinite(w))).toBe(true);
  });
});

describe('blocks: the request', () => {
  it('answers the block object, Unix-second timestamps, resultsPerPage and the attribution token; records a blocks request event', async () => {
    const r = await block(DEMO_BLOCKS.newArrivals, { pagination: { limit: 5 } });
    expect(r.res.status).toBe(200);
    expect(r.body.block).toEqual({
      id: DEMO_BLOCKS.newArrivals,
      title: 'New arrivals',
      anchor_type: 'none',
      strategy_type: 'popularity',
      strategy_key: 'new_arrivals',
    });
    expect(r.body.resultsPerPage).toBe(5);
    expect(r.body.results).toHaveLength(5);
    // Unix seconds (not milliseconds): the catalog's ISO timestamps, to the second
    const byId = new Map([...d.demo.products()].map((p) => [p.id, p]));
    for (const x of r.body.results) {
      expect(x.created_at).toBeLessThan(1e11);
      expect(x.published_at).toBeLessThan(1e11);
      const p = byId.get(String(x.id));
      expect(x.created_at).toBe(Math.floor(Date.parse(String(p?.created_at)) / 1000));
      expect(x.published_at).toBe(Math.floor(Date.parse(String(p?.published_at)) / 1000));
    }
    expect(r.body.attributionToken).toBe(r.res.headers.get('x-request-id'));
    // newest first
    const published = r.body.results.map((x) => x.published_at);
    expect([...published].sort((x, y) => y - x)).toEqual(published);
    await expect
      .poll(
        async () =>
          (
            await sql<{ kind: string; block_id: string; n: string }>(
              `SELECT toString(kind) AS kind, block_id, toString(length(result_product_ids)) AS n FROM requests_raw WHERE request_id = '${r.body.attributionToken}'`,
            )
          )[0],
        { timeout: 15_000, interval: 250 },
      )
      .toEqual({ kind: 'blocks', block_id: DEMO_BLOCKS.newArrivals, n: '5' });
  });

  it('a prefixed theme handle matches no block: 200 with no products; an unknown ULID is a 404; anything else a 422', async () => {
    const handle = await block(`layers-block-${DEMO_BLOCKS.bestSellers.toLowerCase()}`);
    expect(handle.res.status).toBe(200);
    expect(handle.body.results).toEqual([]);
    expect(handle.body.block).toBeNull();
    const unknown = await block('01JDZZZZZZZZZZZZZZZZZZZZZZ');
    expect(unknown.res.status).toBe(404);
    const bad = await block('not a block');
    expect(bad.res.status).toBe(422);
    expect(bad.body.error?.fields[0].path).toBe('blockId');
  });

  it('product anchors need anchor_id (numeric or GID; anchor_handle still accepted); malformed ones are a 422 naming it', async () => {
    const missing = await block(DEMO_BLOCKS.alsoViewed, {});
    expect(missing.res.status).toBe(422);
    expect(missing.body.error?.fields[0].path).toBe('anchor_id');
    const bad = await block(DEMO_BLOCKS.alsoViewed, { anchor_id: 'gid://shopify/Collection/1' });
    expect(bad.res.status).toBe(422);
    const p = d.demo.groundTruth.coViewClusters[0].productIds[0];
    const byGid = await block(DEMO_BLOCKS.alsoViewed, { anchor_id: `gid://shopify/Product/${p}` });
    const byHandle = await block(DEMO_BLOCKS.alsoViewed, { anchor_handle: p });
    expect(ids(byGid.body)).toEqual(ids(byHandle.body));
    expect(ids(byGid.body)).not.toContain(p);
  });

  it('cart anchors use every productsInCart entry with a productId, de-duplicated in cart order', async () => {
    const bundle = d.demo.groundTruth.bundles[0].productIds;
    const id = await putBlock({ anchor_type: 'cart', strategy_key: 'frequently_bought_together' });
    const r = await block(id, {
      context: {
        productsInCart: [
          { productId: bundle[0], title: 'a', price: 10 },
          { productId: bundle[0], title: 'a again', price: 10 },
          { title: 'no id' },
        ],
      },
    });
    expect(r.res.status).toBe(200);
    const got = ids(r.body);
    expect(got).not.toContain(bundle[0]);
    for (const other of bundle.slice(1)) expect(got).toContain(other);
  });

  it('collection anchors take an id or a handle; new arrivals in a collection stay inside it', async () => {
    const c = d.demo.collections.find((x) => x.product_ids.length > 20) as (typeof d.demo.collections)[number];
    const id = await putBlock({ anchor_type: 'collection', strategy_key: 'new_arrivals' });
    const byHandle = await block(id, { anchor_id: c.handle });
    const byId = await block(id, { anchor_id: c.id });
    expect(ids(byHandle.body).length).toBeGreaterThan(0);
    expect(ids(byHandle.body)).toEqual(ids(byId.body));
    const members = new Set(c.product_ids);
    for (const p of ids(byHandle.body)) expect(members.has(p)).toBe(true);
  });

  it('excludeProductIds are removed before ranking and from the fallbacks; a malformed one is a 422', async () => {
    const c = d.demo.groundTruth.coViewClusters[1].productIds;
    const first = await block(DEMO_BLOCKS.alsoViewed, { anchor_id: c[0] });
    const drop = ids(first.body).slice(0, 2);
    const r = await block(DEMO_BLOCKS.alsoViewed, {
      anchor_id: c[0],
      excludeProductIds: [drop[0], `gid://shopify/Product/${drop[1]}`],
    });
    expect(ids(r.body)).not.toContain(drop[0]);
    expect(ids(r.body)).not.toContain(drop[1]);
    const best = await block(DEMO_BLOCKS.bestSellers, { pagination: { limit: 3 } });
    const noBest = await block(DEMO_BLOCKS.bestSellers, { excludeProductIds: ids(best.body) });
    for (const x of ids(best.body)) expect(ids(noBest.body)).not.toContain(x);
    // a block with nothing of its own (no prior search) answers its fallback's newest products, without the excluded
    const empty = await putBlock({
      anchor_type: 'none',
      strategy_key: 'searched_then_viewed',
      safeguards: { min_products: 3, max_products: 6, hide_out_of_stock: false },
      fallback: [{ block_id: DEMO_BLOCKS.newArrivals, mode: 'fill' }],
    });
    const plain = await block(empty);
    expect(plain.body._meta.block?.chain.map((s) => s.block_id)).toEqual([empty, DEMO_BLOCKS.newArrivals]);
    const fromFallback = ids(plain.body);
    expect(fromFallback).toHaveLength(6);
    const excluded = await block(empty, {
      excludeProductIds: [fromFallback[0], `gid://shopify/Product/${fromFallback[2]}`],
    });
    expect(excluded.body._meta.block?.chain.map((s) => s.block_id)).toEqual([empty, DEMO_BLOCKS.newArrivals]);
    expect(ids(excluded.body)).not.toContain(fromFallback[0]);
    expect(ids(excluded.body)).not.toContain(fromFallback[2]);
    // the next newest move up: what remains keeps its order
    expect(ids(excluded.body).slice(0, 4)).toEqual([fromFallback[1], ...fromFallback.slice(3)]);
    // and in a replace fallback
    const replacing = await putBlock({
      anchor_type: 'none',
      strategy_key: 'searched_then_viewed',
      fallback: [{ block_id: DEMO_BLOCKS.bestSellers, mode: 'replace' }],
    });
    const top = ids((await block(replacing)).body);
    expect(top.length).toBeGreaterThan(1);
    const withoutTop = await block(replacing, { excludeProductIds: [top[0]] });
    expect(withoutTop.body._meta.block?.chain.at(-1)?.block_id).toBe(DEMO_BLOCKS.bestSellers);
    expect(ids(withoutTop.body)).not.toContain(top[0]);
    expect(ids(withoutTop.body)[0]).toBe(top[1]);
    const bad = await block(DEMO_BLOCKS.bestSellers, { excludeProductIds: ['abc'] });
    expect(bad.res.status).toBe(422);
    expect(bad.body.error?.fields[0].path).toBe('excludeProductIds[0]');
  });
});

describe('blocks: rules, safeguards and fallbacks', () => {
  it('the first matching rule wins: hide_block runs the fallback, change_strategy and override_safeguards apply', async () => {
    const id = await putBlock({
      anchor_type: 'home',
      strategy_key: 'best_sellers',
      rules: [
        {
          name: 'DE hides',
          conditions: { expressions: [{ property: 'geo.country', operator: 'eq', values: ['DE'] }] },
          actions: [{ type: 'hide_block' }],
        },
        {
          name: 'FR newest, 2 max',
          conditions: { expressions: [{ property: 'geo.country', operator: 'eq', values: ['FR'] }] },
          actions: [
            { type: 'change_strategy', strategy_key: 'new_arrivals' },
            { type: 'override_safeguards', safeguards: { max_products: 2 } },
          ],
        },
        {
          name: 'never reached for FR',
          conditions: { expressions: [{ property: 'geo.country', operator: 'in', values: ['FR', 'DE'] }] },
          actions: [{ type: 'hide_block' }],
        },
      ],
      fallback: [{ block_id: DEMO_BLOCKS.newArrivals, mode: 'replace' }],
    });
    const de = await block(id, { context: { geo: { country: 'DE' } } });
    expect(de.body._meta.block?.chain[0]).toMatchObject({ block_id: id, rule: 0, results: 0 });
    expect(de.body._meta.block?.chain[1]).toMatchObject({ block_id: DEMO_BLOCKS.newArrivals, mode: 'replace' });
    expect(de.body.results.length).toBeGreaterThan(0);
    const fr = await block(id, { context: { geo: { country: 'FR' } } });
    expect(fr.body._meta.block?.strategy).toBe('new_arrivals');
    expect(fr.body.results).toHaveLength(2);
    expect(fr.body._meta.block?.chain).toHaveLength(1);
    const us = await block(id, { context: { geo: { country: 'US' } } });
    expect(us.body._meta.block?.strategy).toBe('best_sellers');
  });

  it('apply_filter narrows the results; anchor properties can be targeted', async () => {
    const p = d.demo.groundTruth.coViewClusters[0].productIds[0];
    const type = [...d.demo.products()].find((x) => x.id === p)?.product_type;
    const id = await putBlock({
      anchor_type: 'product',
      strategy_key: 'new_arrivals',
      rules: [
        {
          name: 'same type as the anchor',
          conditions: { expressions: [{ property: 'anchor.id', operator: 'eq', values: [Number(p)] }] },
          actions: [
            {
              type: 'apply_filter',
              filter_group: { expressions: [{ property: 'product_type', operator: 'eq', values: [type] }] },
            },
          ],
        },
      ],
    });
    const r = await block(id, { anchor_id: p });
    expect(r.body.results.length).toBeGreaterThan(0);
    for (const x of r.body.results) expect(x.product_type).toBe(type);
  });

  it('a rule filter naming an unknown property is configuration, not the caller’s error: the block empties and falls back', async () => {
    const id = await putBlock({
      anchor_type: 'none',
      strategy_key: 'new_arrivals',
      rules: [
        {
          name: 'misconfigured',
          conditions: { expressions: [{ property: 'device_type', operator: 'notNull', values: [] }] },
          actions: [
            {
              type: 'apply_filter',
              filter_group: { expressions: [{ property: 'no_such_property', operator: 'eq', values: ['x'] }] },
            },
          ],
        },
      ],
      fallback: [{ block_id: DEMO_BLOCKS.bestSellers, mode: 'replace' }],
    });
    const r = await block(id);
    expect(r.res.status).toBe(200);
    expect(r.body._meta.block?.chain.map((s) => [s.block_id, s.results > 0])).toEqual([
      [id, false],
      [DEMO_BLOCKS.bestSellers, true],
    ]);
  });

  it('fallback fill appends de-duplicated up to the maximum; a fallback short of its minimum runs its own chain; a loop is cut', async () => {
    const a = newUlid();
    const b = newUlid();
    // a (searched-then-viewed, no priorSearches → nothing) fills from b (searched-then-purchased → nothing; b's own
    // fallback is a again: cut), then from the newest products up to a's maximum
    await putBlock({ id: b, anchor_type: 'none', strategy_key: 'searched_then_purchased' });
    await putBlock({
      id: a,
      anchor_type: 'none',
      strategy_key: 'searched_then_viewed',
      safeguards: { min_products: 5, max_products: 8 },
      fallback: [
        { block_id: b, mode: 'fill' },
        { block_id: DEMO_BLOCKS.newArrivals, mode: 'fill' },
      ],
    });
    await putBlock({
      id: b,
      anchor_type: 'none',
      strategy_key: 'searched_then_purchased',
      fallback: [{ block_id: a, mode: 'fill' }],
    });
    const r = await block(a);
    expect(r.res.status).toBe(200);
    const got = ids(r.body);
    expect(got).toHaveLength(8);
    expect(new Set(got).size).toBe(8);
    expect(r.body._meta.block?.chain.map((s) => s.block_id)).toEqual([a, b, DEMO_BLOCKS.newArrivals]);
    // replace: a fallback's result replaces the primary's
    const c = await putBlock({
      anchor_type: 'none',
      strategy_key: 'searched_then_viewed',
      fallback: [{ block_id: DEMO_BLOCKS.newArrivals, mode: 'replace' }],
    });
    const newest = await block(DEMO_BLOCKS.newArrivals);
    const replaced = await block(c);
    expect(ids(replaced.body)).toEqual(ids(newest.body));
  });

  it('safeguards: max_products caps the tiles and hide_out_of_stock drops unavailable products', async () => {
    const id = await putBlock({
      anchor_type: 'none',
      strategy_key: 'new_arrivals',
      safeguards: { min_products: 1, max_products: 30, hide_out_of_stock: true },
    });
    const r = await block(id, { pagination: { limit: 30 } });
    expect(r.body.results).toHaveLength(30);
    for (const x of r.body.results) expect(x.available).toBe(true);
    const shown = await putBlock({
      anchor_type: 'none',
      strategy_key: 'new_arrivals',
      safeguards: { min_products: 1, max_products: 100, hide_out_of_stock: false },
    });
    const all = await block(shown, { pagination: { limit: 100 } });
    expect(all.body.totalResults).toBe(100);
  });
});

describe('blocks: strategies', () => {
  it('searched-then-viewed reads the last priorSearches query; without one it has nothing', async () => {
    const q = d.demo.groundTruth.learnedQueries[0];
    const id = await putBlock({
      anchor_type: 'search',
      strategy_key: 'searched_then_viewed',
      safeguards: { min_products: 0, max_products: 10 },
    });
    const r = await block(id, {
      context: { priorSearches: [{ searchQuery: 'something else' }, { searchQuery: q.query }] },
    });
    expect(ids(r.body).slice(0, q.engaged.length).sort()).toEqual([...q.engaged].sort());
    const none = await block(id, {});
    expect(none.body.results).toEqual([]);
  });

  it('free-shipping picks close the gap between the cart subtotal (price × quantity) and the threshold', async () => {
    const id = await putBlock({
      anchor_type: 'cart',
      strategy_key: 'free_shipping_picks',
      safeguards: { min_products: 0, max_products: 10, hide_out_of_stock: true },
    });
    const cart = [{ productId: [...d.demo.products()][0].id, title: 'x', price: '12.50', quantity: 2.7 }];
    const r = await block(id, {
      attributes: ['id', 'variants'],
      context: { productsInCart: cart, freeShippingThreshold: 60 },
    });
    // subtotal 25 (quantity rounded down to 2): every pick costs at least 35, the cheapest first
    expect(r.body.results.length).toBeGreaterThan(0);
    const prices = r.body.results.map((x) =>
      Math.min(
        ...(x as unknown as { variants: { price: string; available: boolean }[] }).variants
          .filter((v) => v.available)
          .map((v) => Number(v.price))
          .filter((n) => n >= 35),
      ),
    );
    for (const p of prices) expect(p).toBeGreaterThanOrEqual(35);
    expect([...prices].sort((a, b) => a - b)).toEqual(prices);
    const noThreshold = await block(id, { context: { productsInCart: cart } });
    expect(noThreshold.body.results).toEqual([]);
  });

  it('recently viewed (most recent first) and manual curation (in the configured order, ids or GIDs)', async () => {
    const all = [...d.demo.products()].map((p) => p.id);
    const rv = await putBlock({
      anchor_type: 'home',
      strategy_key: 'recently_viewed',
      safeguards: { min_products: 0, max_products: 10, hide_out_of_stock: false },
    });
    const viewed = await block(rv, {
      context: {
        productsViewed: [
          { id: all[3], at: 3 },
          { id: all[5], at: 5 },
          { id: all[4], at: 4 },
        ],
      },
    });
    expect(ids(viewed.body)).toEqual([all[5], all[4], all[3]]);
    const manual = await putBlock({
      anchor_type: 'none',
      strategy_key: 'manual_curation',
      strategy_params: { product_ids: [all[9], `gid://shopify/Product/${all[7]}`] },
      safeguards: { min_products: 0, max_products: 10, hide_out_of_stock: false },
    });
    expect(ids((await block(manual)).body)).toEqual([all[9], all[7]]);
  });

  it('best sellers rank by 7-day revenue from the order stream', async () => {
    const r = await block(DEMO_BLOCKS.bestSellers, { pagination: { limit: 10 } });
    const rows = await sql<{ pid: string; revenue: number }>(
      `SELECT toString(product_id) AS pid, toFloat64(sum(revenue)) AS revenue FROM product_popularity_daily
       WHERE store_id = '${d.storeId}' AND day > today() - 7 GROUP BY product_id ORDER BY revenue DESC, product_id LIMIT 10`,
    );
    const top = rows[0].revenue;
    expect(r.body.results.length).toBeGreaterThan(0);
    // the first is a top earner (ties allowed)
    const first = rows.find((x) => x.pid === ids(r.body)[0]);
    expect(first?.revenue).toBe(top);
  });

  it('a store without interaction data is in cold start: content-based similar products answer, flagged', async () => {
    const fresh = await demoStack({ name: 'blocks-cold', products: 200, sessions: 50 });
    try {
      const p = [...fresh.demo.products()][10].id;
      const r = await fresh.post<BlockAnswer>(`/blocks/${DEMO_BLOCKS.alsoViewed}/products`, { anchor_id: p });
      expect(r.res.status).toBe(200);
      expect(r.body._meta.block?.coldStart).toBe(true);
      expect(r.body.results.length).toBeGreaterThanOrEqual(3);
      // a context anchor (no product to be similar to): the newest products, as a new-arrivals block answers
      const w = testStoreWriter();
      const safeguards = { min_products: 1, max_products: 8, hide_out_of_stock: false, personalization_strength: 0 };
      const [home, newest] = [newUlid(), newUlid()];
      await w.putConfig(fresh.storeId, 'block', {
        id: home,
        title: 'Also viewed',
        priority: 100,
        anchor_type: 'home',
        strategy_key: 'customers_also_viewed',
        safeguards,
      });
      await w.putConfig(fresh.storeId, 'block', {
        id: newest,
        title: 'Newest',
        priority: 100,
        anchor_type: 'none',
        strategy_key: 'new_arrivals',
        safeguards,
      });
      await waitForApp(w);
      const h = await fresh.post<BlockAnswer>(`/blocks/${home}/products`, {});
      expect(h.res.status).toBe(200);
      expect(h.body._meta.block?.coldStart).toBe(true);
      expect(h.body.results).toHaveLength(8);
      expect(ids(h.body)).toEqual(ids((await fresh.post<BlockAnswer>(`/blocks/${newest}/products`, {})).body));
    } finally {
      await fresh.close();
    }
  });

  it('variant_id forces a live similar-products computation for variant-aware strategies and is ignored otherwise', async () => {
    const product = [...d.demo.products()].find((p) => (p.variants?.length ?? 0) > 1) as ReturnType<
      typeof d.demo.product
    >;
    const variantId = Number(product.variants?.[1].id);
    const similar = await putBlock({
      anchor_type: 'product',
      strategy_key: 'similar_products',
      safeguards: { min_products: 1, max_products: 10 },
    });
    const r = await block(similar, { anchor_id: product.id, variant_id: variantId });
    expect(r.body._meta.block?.similarSource).toBe('live');
    expect(r.body.results.length).toBeGreaterThan(0);
    const other = await block(DEMO_BLOCKS.alsoViewed, { anchor_id: product.id, variant_id: variantId });
    expect(other.res.status).toBe(200);
    expect((other.body._meta.block as { variantId?: number }).variantId).toBeUndefined();
  });
});

/** products by trending signal (the formula of clickhouse/queries/signals.ts), highest first, ties by id */
async function trendingRanking(): Promise<{ pid: string; trending: number }[]> {
  return sql<{ pid: string; trending: number }>(
    `WITH today() AS today_, today_ - 3 AS recent_start, recent_start - 14 AS baseline_start
     SELECT pid, trending FROM (
       SELECT toString(product_id) AS pid,
         (sumIf(w, day > recent_start) + 1) / (sumIf(w, day <= recent_start AND day > baseline_start) / 14 * 3 + 1) AS trending
       FROM (SELECT product_id, day, toFloat64(views + 3 * add_to_carts + 5 * units) AS w FROM product_popularity_daily
             WHERE store_id = '${d.storeId}' AND day > today_ - 30 AND day <= today_)
       GROUP BY product_id)
     WHERE trending > 1 ORDER BY trending DESC, pid`,
  );
}

describe('blocks: trending', () => {
  const visible = () => new Set([...d.demo.products()].filter((p) => visibleAt(p)).map((p) => p.id));

  it('trending now ranks by recent engagement against the baseline (the catalog signal), highest first', async () => {
    const id = await putBlock({
      anchor_type: 'none',
      strategy_key: 'trending_now',
      safeguards: { min_products: 0, max_products: 10, hide_out_of_stock: false, personalization_strength: 0 },
    });
    const shown = visible();
    // the read API re-reads the signals every minute: planted events of other tests may lag behind the table
    await vi.waitFor(
      async () => {
        const expected = (await trendingRanking()).filter((x) => shown.has(x.pid)).slice(0, 10);
        expect(expected).toHaveLength(10);
        expect(ids((await block(id)).body)).toEqual(expected.map((x) => x.pid));
      },
      { timeout: 90_000, interval: 1_000 },
    );
  });

  it('trending in a collection stays inside it, in trending order; on a product anchor, inside its collections', async () => {
    const c = d.demo.collections.find((x) => x.product_ids.length > 20) as (typeof d.demo.collections)[number];
    const members = new Set(c.product_ids);
    const id = await putBlock({
      anchor_type: 'collection',
      strategy_key: 'trending_in_collection',
      safeguards: { min_products: 0, max_products: 10, hide_out_of_stock: false, personalization_strength: 0 },
    });
    const shown = visible();
    await vi.waitFor(
      async () => {
        const expected = (await trendingRanking()).filter((x) => shown.has(x.pid) && members.has(x.pid)).slice(0, 10);
        expect(expected.length).toBeGreaterThan(2);
        const got = ids((await block(id, { anchor_id: c.handle })).body);
        expect(got).toEqual(expected.map((x) => x.pid));
      },
      { timeout: 90_000, interval: 1_000 },
    );
    // a product anchor: the members of the collections it belongs to, never the anchor itself
    const byProduct = await putBlock({
      anchor_type: 'product',
      strategy_key: 'trending_in_collection',
      safeguards: { min_products: 0, max_products: 20, hide_out_of_stock: false, personalization_strength: 0 },
    });
    const p = c.product_ids[0];
    const around = new Set(d.demo.collections.filter((x) => x.product_ids.includes(p)).flatMap((x) => x.product_ids));
    const r = await block(byProduct, { anchor_id: p });
    expect(r.body.results.length).toBeGreaterThan(0);
    expect(ids(r.body)).not.toContain(p);
    for (const x of ids(r.body)) expect(around.has(x)).toBe(true);
  });
});

describe('blocks: behavioural strategies on behaviour planted through /beacon', () => {
  const exact = { min_products: 0, max_products: 10, hide_out_of_stock: false, personalization_strength: 0 };

  it('customers also added to cart: what sessions carted with the anchor, most often first; co-views do not count', async () => {
    const [a, often, sometimes, viewedOnly] = takeQuiet(4);
    await beacon([
      ...Array.from({ length: 6 }, () => session('cc', [cart(a), cart(often)])).flat(),
      ...Array.from({ length: 3 }, () => session('cc', [cart(a), cart(sometimes)])).flat(),
      ...Array.from({ length: 6 }, () => session('cc', [view(a), view(viewedOnly)])).flat(),
    ]);
    const id = await putBlock({
      anchor_type: 'product',
      strategy_key: 'customers_also_added_to_cart',
      safeguards: exact,
    });
    await expect
      .poll(async () => ids((await block(id, { anchor_id: a })).body), { timeout: 15_000, interval: 200 })
      .toEqual([often, sometimes]);
  });

  it('viewed then bought: what sessions bought after viewing the anchor, most purchases first; never the anchor', async () => {
    const [v, most, fewer, viewedToo] = takeQuiet(4);
    await beacon([
      ...Array.from({ length: 6 }, () => session('vb', [view(v), view(viewedToo), purchase(most)])).flat(),
      ...Array.from({ length: 3 }, () => session('vb', [view(v), purchase(fewer, v)])).flat(),
    ]);
    const id = await putBlock({ anchor_type: 'product', strategy_key: 'viewed_then_bought', safeguards: exact });
    await expect
      .poll(async () => ids((await block(id, { anchor_id: v })).body), { timeout: 15_000, interval: 200 })
      .toEqual([most, fewer]);
  });

  it('searched then purchased: what sessions bought after the last prior search, most purchases first; viewed-only products are not', async () => {
    const [bought, boughtLess, viewedOnly] = takeQuiet(3);
    const query = `quokka lantern ${newUlid().slice(-6).toLowerCase()}`;
    await beacon([
      ...Array.from({ length: 5 }, () =>
        session('sp', [search(query), view(bought), view(viewedOnly), purchase(bought)]),
      ).flat(),
      ...Array.from({ length: 2 }, () => session('sp', [search(query), view(boughtLess), purchase(boughtLess)])).flat(),
    ]);
    const purchased = await putBlock({
      anchor_type: 'search',
      strategy_key: 'searched_then_purchased',
      safeguards: exact,
    });
    const viewed = await putBlock({ anchor_type: 'search', strategy_key: 'searched_then_viewed', safeguards: exact });
    const context = { priorSearches: [{ searchQuery: 'something else' }, { searchQuery: query.toUpperCase() }] };
    await expect
      .poll(async () => ids((await block(purchased, { context })).body), { timeout: 15_000, interval: 200 })
      .toEqual([bought, boughtLess]);
    expect(ids((await block(viewed, { context })).body).sort()).toEqual([bought, boughtLess, viewedOnly].sort());
    // the last prior search decides: an earlier one is not read
    const earlier = await block(purchased, {
      context: { priorSearches: [{ searchQuery: query }, { searchQuery: 'x' }] },
    });
    expect(earlier.body.results).toEqual([]);
  });

  it('customers who bought also bought: co-purchases of the anchor and of what the shopper bought before', async () => {
    const [b0, b1] = d.demo.groundTruth.bundles;
    const id = await putBlock({
      anchor_type: 'product',
      strategy_key: 'customers_who_bought_also_bought',
      safeguards: { ...exact, max_products: 20 },
    });
    const anchorOnly = ids((await block(id, { anchor_id: b0.productIds[0] })).body);
    for (const x of b0.productIds.slice(1)) expect(anchorOnly).toContain(x);
    for (const x of b1.productIds) expect(anchorOnly).not.toContain(x);
    const withHistory = ids(
      (
        await block(id, {
          anchor_id: b0.productIds[0],
          context: { productsPurchased: [{ productId: `gid://shopify/Product/${b1.productIds[0]}`, title: 'x' }] },
        })
      ).body,
    );
    for (const x of [...b0.productIds.slice(1), ...b1.productIds.slice(1)]) expect(withHistory).toContain(x);
    // neither the anchor nor what was bought already
    expect(withHistory).not.toContain(b0.productIds[0]);
    expect(withHistory).not.toContain(b1.productIds[0]);
  });

  it('metafield references: the products a metafield of the anchor names (GIDs or ids, a JSON list), in its order', async () => {
    const [m, x, y] = takeQuiet(3);
    const p = [...d.demo.products()].find((q) => q.id === m) as ReturnType<typeof d.demo.product>;
    await d.sink.write(d.storeId, [
      {
        type: 'product',
        ...p,
        metafields: [
          ...(Array.isArray(p.metafields) ? p.metafields : []),
          {
            namespace: 'custom',
            key: 'pairs_with',
            value: JSON.stringify([`gid://shopify/Product/${y}`, x, `gid://shopify/Product/${m}`]),
            type: 'list.product_reference',
          },
        ],
        updated_at: new Date().toISOString(),
      },
    ]);
    const id = await putBlock({
      anchor_type: 'product',
      strategy_key: 'metafield_references',
      strategy_params: { metafield: 'custom.pairs_with' },
      safeguards: exact,
    });
    // the anchor itself is never recommended
    await expect
      .poll(async () => ids((await block(id, { anchor_id: m })).body), { timeout: 15_000, interval: 200 })
      .toEqual([y, x]);
    // a product without the metafield has none
    const without = await block(id, { anchor_id: x });
    expect(without.res.status).toBe(200);
    expect(without.body.results).toEqual([]);
  });
});

describe('blocks: personalization and context anchors', () => {
  it('personalization strength 1 puts what the shopper’s viewed products were co-viewed with first; 0 keeps the strategy order', async () => {
    const cluster = d.demo.groundTruth.coViewClusters[2].productIds;
    const [viewed, ...mates] = cluster;
    const others = takeQuiet(5);
    const list = [...others, ...mates.slice(0, 2)];
    const make = (strength: number) =>
      putBlock({
        anchor_type: 'home',
        strategy_key: 'manual_curation',
        strategy_params: { product_ids: list },
        safeguards: { min_products: 0, max_products: 10, hide_out_of_stock: false, personalization_strength: strength },
      });
    const [none, full] = [await make(0), await make(1)];
    const context = { productsViewed: [{ id: viewed, at: Date.now() }] };
    const plain = await block(none, { context });
    expect(ids(plain.body)).toEqual(list);
    expect(plain.body._meta.block).not.toHaveProperty('personalized');
    const personal = await block(full, { context });
    expect(ids(personal.body).slice(0, 2).sort()).toEqual(mates.slice(0, 2).sort());
    expect(ids(personal.body).slice(2)).toEqual(others);
    expect(personal.body._meta.block).toHaveProperty('personalized', true);
    // without viewed products there is nothing to personalize by
    expect(ids((await block(full, {})).body)).toEqual(list);
  });

  it('not-found, landing and other anchors need no anchor_id and recommend from the shopper’s viewed products', async () => {
    const cluster = (d.demo.groundTruth.coViewClusters.at(-1) as { productIds: string[] }).productIds;
    const [viewed, ...mates] = cluster;
    for (const anchor_type of ['not_found', 'landing', 'other'] as const) {
      const id = await putBlock({
        anchor_type,
        strategy_key: 'customers_also_viewed',
        safeguards: { min_products: 0, max_products: 10, hide_out_of_stock: false, personalization_strength: 0 },
      });
      const r = await block(id, { anchor_id: 'ignored', context: { productsViewed: [{ id: viewed }] } });
      expect(r.res.status).toBe(200);
      expect(r.body.block?.anchor_type).toBe(anchor_type);
      const got = ids(r.body);
      expect(got).not.toContain(viewed);
      expect(precisionAtK(got, new Set(mates), Math.min(10, mates.length))).toBeGreaterThanOrEqual(0.9);
      // nothing viewed, nothing in the cart: nothing to relate to (no error)
      const bare = await block(id, {});
      expect(bare.res.status).toBe(200);
      expect(bare.body.results).toEqual([]);
    }
  });
});

describe('similar products', () => {
  it('answers products like the given one (mostly its type), precomputed or live with the same results; unknown → 404', async () => {
    const p = [...d.demo.products()][42];
    const first = await d.post<BlockAnswer>(`/search/product/${p.id}`, { pagination: { limit: 10 } });
    expect(first.res.status).toBe(200);
    expect(first.body.results).toHaveLength(10);
    expect(ids(first.body)).not.toContain(p.id);
    const sameType = first.body.results.filter((x) => x.product_type === p.product_type).length;
    expect(sameType).toBeGreaterThanOrEqual(8);
    expect(typeof first.body.results[0].created_at).toBe('string');
    const again = await d.post<BlockAnswer>(`/search/product/${p.id}`, {
      pagination: { limit: 10 },
      attributes: ['id'],
    });
    expect(again.body._meta.similar?.source).toBe('precomputed');
    expect(ids(again.body)).toEqual(ids(first.body));
    const missing = await d.post<BlockAnswer>('/search/product/999999999', {});
    expect(missing.res.status).toBe(404);
  });

  it('a product change drops its precomputed neighbours: the next answer follows the new text', async () => {
    const p = [...d.demo.products()][77];
    await d.post(`/search/product/${p.id}`, {});
    const cached = await d.post<BlockAnswer>(`/search/product/${p.id}`, { attributes: ['id'] });
    expect(cached.body._meta.similar?.source).toBe('precomputed');
    // retitled and retyped as another kind of product: its neighbours follow (its image still looks as before,
    // so look-alikes of the old kind keep some places)
    const other = [...d.demo.products()].find((x) => x.product_type !== p.product_type) as typeof p;
    await d.sink.write(d.storeId, [
      {
        type: 'product',
        ...p,
        title: other.title,
        product_type: other.product_type,
        updated_at: new Date().toISOString(),
      },
    ]);
    await expect
      .poll(
        async () =>
          (await d.post<BlockAnswer>(`/search/product/${p.id}`, { pagination: { limit: 10 } })).body.results.filter(
            (x) => x.product_type === other.product_type,
          ).length,
        { timeout: 15_000, interval: 200 },
      )
      .toBeGreaterThanOrEqual(5);
  });
});

describe('similar products: behaviour', () => {
  it('a new co-view pattern through /beacon moves the answer: the co-viewed product rises (_meta.similar.behaviour)', async () => {
    // an anchor no shopper viewed: its answer is content alone
    const [a] = takeQuiet(1);
    const before = await d.post<BlockAnswer>(`/search/product/${a}`, {
      pagination: { limit: 100 },
      attributes: ['id'],
    });
    expect(before.body._meta.similar).toMatchObject({ behaviour: false });
    const b = ids(before.body)[40];
    await beacon(Array.from({ length: 6 }, () => session('sim', [view(a), view(b)])).flat());
    const answer = async () => {
      const r = await d.post<BlockAnswer>(`/search/product/${a}`, { pagination: { limit: 100 }, attributes: ['id'] });
      return { behaviour: (r.body._meta.similar as { behaviour?: boolean }).behaviour, ids: ids(r.body) };
    };
    await expect.poll(answer, { timeout: 15_000, interval: 200 }).toMatchObject({ behaviour: true });
    // only b gained (the anchor's one co-view): b moved up past some products, every other kept its order
    const after = (await answer()).ids;
    expect(after.indexOf(b)).toBeGreaterThanOrEqual(0);
    expect(after.indexOf(b)).toBeLessThan(40);
    expect(after.filter((x) => x !== b)).toEqual(ids(before.body).filter((x) => x !== b));
  });
});

describe('blocks: related content', () => {
  it('answers articles and pages related to the anchor product or article, never the anchor article itself', async () => {
    const id = await putBlock({
      anchor_type: 'product',
      strategy_key: 'related_content',
      safeguards: { min_products: 1, max_products: 5 },
    });
    const article = d.demo.articles[0];
    // a product of the article's type (its first tag is the type's slug)
    const product =
      [...d.demo.products()].find((p) =>
        String(p.title ?? '')
          .toLowerCase()
          .includes(String(article.tags?.[0] ?? '')),
      ) ?? [...d.demo.products()][0];
    const r = await d.post<{
      results: { __typename: string; content_id: number; title: string }[];
      block: { strategy_key: string };
    }>(`/blocks/${id}/products`, { anchor_id: product.id });
    expect(r.res.status).toBe(200);
    expect(r.body.block.strategy_key).toBe('related_content');
    expect(r.body.results.length).toBeGreaterThan(0);
    for (const x of r.body.results) expect(['Article', 'Page']).toContain(x.__typename);
    const byArticle = await putBlock({
      anchor_type: 'article',
      strategy_key: 'related_content',
      safeguards: { min_products: 1, max_products: 5 },
    });
    const a = await d.post<{ results: { content_id: number }[] }>(`/blocks/${byArticle}/products`, {
      anchor_id: `gid://shopify/Article/${article.id}`,
    });
    expect(a.res.status).toBe(200);
    expect(a.body.results.length).toBeGreaterThan(0);
    expect(a.body.results.map((x) => String(x.content_id))).not.toContain(article.id);
    const missing = await d.post<BlockAnswer>(`/blocks/${byArticle}/products`, {});
    expect(missing.res.status).toBe(422);
  });
});
