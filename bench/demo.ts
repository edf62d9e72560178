// `npm run bench -- demo`: figures of the demo store.
//
// 1. Generator: products/s for 10k and 100k products (metas, then every product materialized), sessions/s,
//    and the normalization throughput of the catalog import path for the generated lines.
// 2. Images: sharp render time per PNG.
// 3. First start (`npm start` on a fresh data dir, free ports): seconds until the token is printed, until
//    the configuration is served, until the whole store is loaded; replayed events/s; then the planted
//    ground truth measured in the aggregates (co-view recall@4, bundle recall@4) over the SQL endpoint,
//    and through the read API where this build serves it (search precision/nDCG on the planted queries,
//    the trending query's rank in autocomplete, the also-viewed / bought-together blocks).
//    Store size: BENCH_DEMO_PRODUCTS / BENCH_DEMO_SESSIONS (default 10 000 / 3 000, the `npm start` default).
//    BENCH_DEMO_START=0 skips this part.
import { DEMO_BLOCKS, generateDemoStore } from '../services/demo/generator/generator.ts';
import { renderImage } from '../services/demo/generator/images.ts';
import { catalogLines } from '../services/demo/generator/load.ts';
import { startDemoApp } from './demo-app.ts';
import { bundleQuality, coViewQuality, searchQuality, trendingRank } from '../services/demo/generator/quality.ts';
import { PRODUCT_TYPES } from '../services/demo/generator/vocab.ts';
import { recordsForImport } from '../services/catalog/importer.ts';

const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const line = (label: string, value: string) => process.stdout.write(`  ${label.padEnd(58)} ${value}\n`);

// ------------------------------------------------------------------------------------------------
process.stdout.write('generator\n');
for (const n of [10_000, 100_000]) {
  const t0 = performance.now();
  const store = generateDemoStore({ products: n });
  const t1 = performance.now();
  let variants = 0;
  for (const p of store.products()) variants += p.variants?.length ?? 0;
  const t2 = performance.now();
  line(`${fmt(n)} products: plan (metas, collections, ground truth)`, `${fmt(t1 - t0)} ms`);
  line(
    `${fmt(n)} products: every product materialized (${fmt(variants)} variants)`,
    `${fmt(t2 - t1)} ms  (${fmt(n / ((t2 - t1) / 1000))} products/s)`,
  );
}
{
  const store = generateDemoStore({ sessions: 3_000 });
  const t0 = performance.now();
  let steps = 0;
  for (const s of store.sessions()) steps += s.steps.length;
  const ms = performance.now() - t0;
  line(`3,000 sessions (${fmt(steps)} events)`, `${fmt(ms)} ms  (${fmt(3_000 / (ms / 1000))} sessions/s)`);

  const small = generateDemoStore({ products: 2_000 });
  const now = new Date().toISOString();
  const t1 = performance.now();
  let lines = 0;
  let records = 0;
  for (const l of catalogLines(small)) {
    const r = recordsForImport('bench', l, now);
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    lines++;
    records += r.records.length;
  }
  const s = (performance.now() - t1) / 1000;
  line(
    `import normalization of 2,000 products (${fmt(lines)} lines)`,
    `${fmt(lines / s)} lines/s, ${fmt(records / s)} records/s`,
  );
}

// ------------------------------------------------------------------------------------------------
process.stdout.write('images (sharp, 512×512 PNG)\n');
{
  await renderImage({ type: 'dress', color: 'red', pattern: 0 }); // warm-up
  const t0 = performance.now();
  let bytes = 0;
  for (const t of PRODUCT_TYPES) bytes += (await renderImage({ type: t.slug, color: 'navy', pattern: 1 })).length;
  const ms = (performance.now() - t0) / PRODUCT_TYPES.length;
  line('render one image', `${fmt(ms, 1)} ms  (${fmt(bytes / PRODUCT_TYPES.length / 1024, 1)} KiB average)`);
}

// ------------------------------------------------------------------------------------------------
if (process.env.BENCH_DEMO_START !== '0') {
  const products = Number(process.env.BENCH_DEMO_PRODUCTS ?? 10_000);
  const sessions = Number(process.env.BENCH_DEMO_SESSIONS ?? 3_000);
  process.stdout.write(
    `first start (npm start, fresh data dir, ${fmt(products)} products, ${fmt(sessions)} sessions)\n`,
  );
  const t0 = Date.now();
  const app = await startDemoApp({ products, sessions });
  const { waitFor, http, clickhouse } = app;
  try {
    const [, token] = await waitFor(/X-Storefront-Access-Token: (\S+)\n/, 180_000);
    line('token printed (store usable)', `${fmt((Date.now() - t0) / 1000, 1)} s`);
    const api = `http://127.0.0.1:${http}/api/storefront/v1`;
    for (;;) {
      const r = await fetch(`${api}/sort-orders`, { headers: { 'X-Storefront-Access-Token': token } });
      if (r.ok && JSON.stringify(await r.json()).includes('price_desc')) break;
      await new Promise((res) => setTimeout(res, 200));
    }
    line('configuration served (sort orders)', `${fmt((Date.now() - t0) / 1000, 1)} s`);
    await waitFor(/demo: catalog loaded/, 3_600_000);
    line('catalog loaded', `${fmt((Date.now() - t0) / 1000, 1)} s`);
    const retries = (app.output().match(/demo: a loading step failed/g) ?? []).length;
    if (retries) line('loading steps retried (see the stack output)', String(retries));
    const [replayed] = await waitFor(/\{[^\n]*demo: shopper sessions replayed[^\n]*\}/, 3_600_000);
    const stats = JSON.parse(replayed) as { events: number; duplicates: number; rejected: number; seconds: number };
    line(
      'sessions replayed',
      `${fmt((Date.now() - t0) / 1000, 1)} s  (${fmt(stats.events)} events accepted, ${fmt(stats.duplicates)} duplicates, ${fmt(stats.rejected)} rejected; ${fmt(stats.events / stats.seconds)} events/s)`,
    );

    const { store, storeId } = app.loaded();
    const state = { storeId };
    const sql = async (q: string, params: Record<string, string>) => {
      const qs = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [`param_${k}`, v]));
      const r = await fetch(`http://127.0.0.1:${clickhouse}/?${qs}`, {
        method: 'POST',
        body: `${q} FORMAT JSONEachRow`,
      });
      return (await r.text())
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { b: string }).b);
    };
    await new Promise((r) => setTimeout(r, 5_000)); // processors' linger + inserts
    const coView = await coViewQuality(store.groundTruth, (id) =>
      sql(
        `SELECT toString(product_b) AS b FROM discovery.co_view_pairs WHERE store_id = {s:String} AND product_a = {a:UInt64} AND product_b != product_a
         GROUP BY product_b ORDER BY sum(sessions) DESC, product_b LIMIT 10`,
        { s: state.storeId, a: id },
      ),
    );
    const bundles = await bundleQuality(store.groundTruth, (id) =>
      sql(
        `SELECT toString(product_b) AS b FROM discovery.co_purchase_pairs WHERE store_id = {s:String} AND product_a = {a:UInt64} AND product_b != product_a
         GROUP BY product_b HAVING sum(orders) > 0 ORDER BY sum(orders) DESC, product_b LIMIT 10`,
        { s: state.storeId, a: id },
      ),
    );
    line(`co-view clusters: recall@4 in co_view_pairs (${coView.products} products)`, fmt(coView.recall, 3));
    line(`bundles: recall@4 in co_purchase_pairs (${bundles.products} products)`, fmt(bundles.recall, 3));

    // the read API against the same ground truth, for the endpoints this build serves
    const headers = {
      'X-Storefront-Access-Token': token,
      'content-type': 'application/json',
      accept: 'application/json',
    };
    const ids = (body: unknown) => ((body as { results?: { id?: unknown }[] }).results ?? []).map((r) => String(r.id));
    const probe = await fetch(`${api}/search/${encodeURIComponent(store.groundTruth.queries[0].query)}/execute`, {
      method: 'POST',
      headers,
      body: '{}',
    });
    if (probe.status === 404 && !(await probe.text()).includes('"results"')) {
      line('search quality (planted queries)', 'search execute not served by this build');
    } else {
      const q = await searchQuality(store.groundTruth, async (query) => {
        const r = await fetch(`${api}/search/${encodeURIComponent(query)}/execute`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ pagination: { page: 1, limit: 10 } }),
        });
        return r.ok ? ids(await r.json()) : [];
      });
      line(
        `search: precision@10 / nDCG@10 over ${q.queries} planted queries`,
        `${fmt(q.precision, 3)} / ${fmt(q.ndcg, 3)}`,
      );
    }
    const trending = await fetch(`${api}/search/complete`, { headers });
    const top = trending.ok ? (((await trending.json()) as { matchedQueries?: string[] }).matchedQueries ?? []) : [];
    line(
      'autocomplete with no query: rank of the planted trending query',
      `${trendingRank(store.groundTruth, top) || 'absent'} (of ${top.length})`,
    );
    const blockProbe = await fetch(`${api}/blocks/${DEMO_BLOCKS.alsoViewed}/products`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ anchor_id: store.groundTruth.coViewClusters[0].productIds[0] }),
    });
    if (blockProbe.status === 404 && !(await blockProbe.text()).includes('"results"')) {
      line('"customers also viewed" block vs co-view clusters', 'blocks not served by this build');
    } else {
      const viaBlock = await coViewQuality(store.groundTruth, async (id) => {
        const r = await fetch(`${api}/blocks/${DEMO_BLOCKS.alsoViewed}/products`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ anchor_id: id }),
        });
        return r.ok ? ids(await r.json()) : [];
      });
      const fbt = await bundleQuality(store.groundTruth, async (id) => {
        const r = await fetch(`${api}/blocks/${DEMO_BLOCKS.boughtTogether}/products`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ anchor_id: id }),
        });
        return r.ok ? ids(await r.json()) : [];
      });
      line('"customers also viewed" block: recall@4 of the co-view clusters', fmt(viaBlock.recall, 3));
      line('"frequently bought together" block: recall@4 of the bundles', fmt(fbt.recall, 3));
    }
  } finally {
    line('stack output', await app.stop('sd-bench-demo.log'));
  }
}
