// The demo store generator: deterministic for a seed, valid against the platform's own input schemas
// (the catalog normalizers, the store-config validators, the beacon's event schemas), and its planted
// ground truth is consistent with the simulated sessions it generates.
import { describe, expect, it } from 'vitest';
import { parseEvent } from '../../schemas/events.ts';
import { type ConfigKind, validateConfig } from '../../schemas/config.ts';
import {
  normalizeB2bCatalog,
  normalizeCollection,
  normalizeContent,
  normalizeOrder,
  normalizePrice,
  normalizeProduct,
} from '../../services/catalog/normalize.ts';
import { recordsForImport } from '../../services/catalog/importer.ts';
import { beaconEvent } from '../../services/demo/generator/events.ts';
import { catalogLines } from '../../services/demo/generator/load.ts';
import {
  type DemoStore,
  demoHash,
  generateDemoStore,
  orderInput,
  productIndexOf,
} from '../../services/demo/generator/generator.ts';
import { Rng } from '../../services/demo/generator/prng.ts';

const SMALL = { products: 1_500, sessions: 600 };
const NOW = Date.UTC(2026, 5, 1, 12);
const opts = { source: 'import' as const, now: new Date(NOW).toISOString() };

describe('prng', () => {
  it('is a pure function of the seed, and forks are independent streams', () => {
    const a = new Rng('x');
    const b = new Rng('x');
    const seqA = Array.from({ length: 5 }, () => a.nextUint32());
    expect(Array.from({ length: 5 }, () => b.nextUint32())).toEqual(seqA);
    expect(Array.from({ length: 5 }, () => new Rng('y').nextUint32())).not.toEqual(seqA);
    expect(new Rng('x').fork('s:1').uuid()).toBe(new Rng('x').fork('s:1').uuid());
    expect(new Rng('x').fork('s:1').uuid()).not.toBe(new Rng('x').fork('s:2').uuid());
    expect(new Rng('x').uuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('draws uniformly enough to make realistic stores (int, zipf)', () => {
    const r = new Rng('dist');
    const counts = new Array(10).fill(0);
    for (let i = 0; i < 20_000; i++) counts[r.int(0, 9)]++;
    for (const c of counts) expect(c).toBeGreaterThan(1_700); // ≈ 2000 each
    const z = new Array(100).fill(0);
    for (let i = 0; i < 20_000; i++) z[r.zipf(100)]++;
    expect(z[0]).toBeGreaterThan(z[10]);
    expect(z[10]).toBeGreaterThan(z[90]);
  });
});

describe('generator determinism', () => {
  // The generator's recorded output (last changed by issue #22: the free-shipping-picks block in the
  // configuration; before that #17: learned-query sessions and the search evaluation set in the ground
  // truth): a refactoring must keep every product, collection, price, config item, session and the ground
  // truth byte-equal.
  it('produces exactly the recorded stores', () => {
    expect(demoHash(generateDemoStore({ products: 400, sessions: 300, seed: 'snapshot' }))).toBe(
      '4a49b122c0b350b9170b80b6d3ee97a3d18ed9a636a088e76f7c31716534d317',
    );
    expect(demoHash(generateDemoStore({ products: 2_000, sessions: 500, seed: 'demo' }))).toBe(
      '0d2728a0c0f9fcc1cb1cfa3600b83e72b21aec4d006e3455dbb652d8cefda864',
    );
  });

  it('same seed → identical output hash; different seed → different', () => {
    const h1 = demoHash(generateDemoStore({ seed: 'alpha', ...SMALL }));
    const h2 = demoHash(generateDemoStore({ seed: 'alpha', ...SMALL }));
    const h3 = demoHash(generateDemoStore({ seed: 'beta', ...SMALL }));
    expect(h1).toMatch(/^[0-9a-f]{64}$/);
    expect(h2).toBe(h1);
    expect(h3).not.toBe(h1);
  });

  it('lazily built parts do not depend on the order they are asked for', () => {
    const a = generateDemoStore({ seed: 'lazy', ...SMALL });
    const b = generateDemoStore({ seed: 'lazy', ...SMALL });
    expect(b.session(400)).toEqual(a.session(400));
    const later = a.product(1_234);
    for (let i = 0; i < 10; i++) a.product(i);
    expect(b.product(1_234)).toEqual(later);
  });

  it('builds the default 10k-product store with the promised shape', () => {
    const s = generateDemoStore({ seed: 'shape' });
    expect(s.productCount).toBe(10_000);
    const vendors = new Set<string>();
    const types = new Set<string>();
    let variants = 0;
    for (let i = 0; i < s.productCount; i += 7) {
      const p = s.product(i);
      vendors.add(String(p.vendor));
      types.add(String(p.product_type));
      variants += p.variants?.length ?? 0;
    }
    expect(vendors.size).toBeGreaterThanOrEqual(15);
    expect(types.size).toBe(27);
    expect(variants / Math.ceil(s.productCount / 7)).toBeGreaterThan(2);
    expect(s.collections.length).toBeGreaterThanOrEqual(30);
    expect(s.articles.length).toBeGreaterThanOrEqual(20);
    expect(s.pages.length).toBeGreaterThanOrEqual(5);
    expect(s.markets.map((m) => m.code)).toEqual(['us', 'eu']);
    expect(s.config.sort_order.map((o) => o.code)).toEqual([
      'best_selling',
      'newest',
      'price_asc',
      'price_desc',
      'trending',
      'popularity',
      'featured',
    ]);
    // the merchandising rule pins members of its collection, and every config item is valid
    const rule = s.config.merch_rule[0];
    const members = s.collections.find((c) => c.handle === rule.collection_handle)?.product_ids ?? [];
    for (const pin of rule.pins ?? []) expect(members).toContain(pin.product_id);
    for (const [kind, items] of Object.entries(s.config))
      for (const item of items) expect(validateConfig(kind as ConfigKind, item), kind).toMatchObject({ ok: true });
  });
});

describe('generated data is valid platform input', () => {
  const s = generateDemoStore({ seed: 'valid', ...SMALL });

  it('every product, collection, article, page, price and the B2B catalog normalize without issues', () => {
    for (const p of s.products()) {
      const r = normalizeProduct('demo', p, opts);
      if (!r.ok) throw new Error(`product ${p.id}: ${JSON.stringify(r.issues)}`);
      expect(r.value.inventory.length).toBe((p.variants?.length ?? 0) * 2);
      for (const price of s.pricesOf(p)) {
        const pr = normalizePrice('demo', price, opts);
        if (!pr.ok) throw new Error(`price ${price.variant_id}: ${JSON.stringify(pr.issues)}`);
      }
    }
    for (const c of s.collections) {
      const r = normalizeCollection('demo', c, opts);
      if (!r.ok) throw new Error(`collection ${c.handle}: ${JSON.stringify(r.issues)}`);
      expect(r.value.members?.members?.product_ids).toEqual(c.product_ids);
    }
    for (const a of s.articles) expect(normalizeContent('demo', 'article', a, opts).ok).toBe(true);
    for (const p of s.pages) expect(normalizeContent('demo', 'page', p, opts).ok).toBe(true);
    expect(normalizeB2bCatalog('demo', s.b2b.catalog, opts).ok).toBe(true);
  });

  it('every catalog line is accepted by the bulk import (services/catalog/import.ts)', () => {
    const counts: Record<string, number> = {};
    for (const line of catalogLines(s)) {
      const r = recordsForImport('demo', line, opts.now);
      if (!r.ok) throw new Error(`${line.type} ${String(line.id)}: ${JSON.stringify(r.issues)}`);
      for (const rec of r.records) counts[rec.topic] = (counts[rec.topic] ?? 0) + 1;
    }
    expect(counts.products).toBe(s.productCount);
    expect(counts.collections).toBe(s.collections.length * 2); // metadata + ordered membership
    expect(counts.content).toBe(s.articles.length + s.pages.length);
    expect(counts.inventory).toBeGreaterThan(s.productCount);
    expect(counts.pricing).toBeGreaterThan(s.productCount);
  });

  it('every configuration item passes the store-config validators', () => {
    const items: [string, unknown][] = [
      ...s.markets.map((m) => ['market', m] as [string, unknown]),
      ...Object.entries(s.config).flatMap(([kind, list]) =>
        (list as unknown[]).map((v) => [kind, v] as [string, unknown]),
      ),
      ['b2b_company_location', s.b2b.companyLocation],
      ['b2b_customer', s.b2b.customer],
    ];
    for (const [kind, item] of items) {
      const r = validateConfig(kind as never, item);
      if (!r.ok) throw new Error(`${kind}: ${JSON.stringify(r.issues)}`);
    }
  });

  it('every session step is an event POST /beacon accepts, and every purchase an order the importer accepts', () => {
    let events = 0;
    for (const session of s.sessions()) {
      expect(session.steps.length).toBeGreaterThan(0);
      expect(session.steps.length).toBeLessThanOrEqual(100); // one beacon batch per session
      for (const step of session.steps) {
        const r = parseEvent(beaconEvent(session, step, NOW, '01JDDEM0000000000000000A01'));
        if (!r.ok) throw new Error(`${step.type}: ${r.reason}`);
        events++;
        if (step.type === 'purchase') {
          const o = normalizeOrder('demo', orderInput(session, step, NOW), opts);
          if (!o.ok || !o.value) throw new Error(`order ${step.orderId}: ${JSON.stringify(o)}`);
          expect(o.value.session_id).toBe(session.sessionId);
        }
      }
      const ts = session.steps.map((x) => x.t);
      expect([...ts].sort((a, b) => a - b)).toEqual(ts);
      expect(ts.at(-1)).toBeLessThan(0); // every step is in the past of the replay start
    }
    expect(events).toBeGreaterThan(s.sessionCount);
  });
});

describe('ground truth matches the sessions', () => {
  const stores: [string, DemoStore][] = [
    ['small', generateDemoStore({ seed: 'truth', ...SMALL })],
    ['default', generateDemoStore({ seed: 'truth' })],
  ];

  for (const [label, s] of stores) {
    const gt = s.groundTruth;
    const sessions = [...s.sessions()];

    it(`${label}: every pair of every co-view cluster is viewed together in ≥ the planted number of sessions`, () => {
      expect(gt.coViewClusters.length).toBeGreaterThanOrEqual(3);
      const together = new Map<string, number>();
      for (const sess of sessions) {
        const viewed = [...new Set(sess.steps.flatMap((x) => (x.type === 'product_view' ? [x.productId] : [])))].sort();
        for (let i = 0; i < viewed.length; i++)
          for (let j = i + 1; j < viewed.length; j++) {
            const k = `${viewed[i]}|${viewed[j]}`;
            together.set(k, (together.get(k) ?? 0) + 1);
          }
      }
      for (const c of gt.coViewClusters) {
        expect(c.productIds.length).toBeGreaterThanOrEqual(3);
        expect(c.sessions).toBeGreaterThanOrEqual(8);
        const ids = [...c.productIds].sort();
        for (let i = 0; i < ids.length; i++)
          for (let j = i + 1; j < ids.length; j++) {
            expect(together.get(`${ids[i]}|${ids[j]}`) ?? 0).toBeGreaterThanOrEqual(c.sessions);
          }
      }
      // clusters do not share products
      const all = gt.coViewClusters.flatMap((c) => c.productIds);
      expect(new Set(all).size).toBe(all.length);
    });

    it(`${label}: planted queries are searched by their sessions, whose clicks land on relevant products`, () => {
      expect(gt.queries.length).toBeGreaterThanOrEqual(5);
      for (const q of gt.queries) {
        const relevant = new Set(q.relevant);
        expect(q.relevant.length).toBeGreaterThanOrEqual(3);
        for (const id of q.engaged) expect(relevant.has(id)).toBe(true);
        for (const id of q.relevant) {
          const p = s.product(productIndexOf(id));
          expect(p.product_type).toBe(q.productType);
          expect([p.title, ...(p.options?.flatMap((o) => o.values ?? []) ?? [])].join(' ')).toContain(q.attribute);
        }
        const searching = sessions.filter((x) => x.steps.some((st) => st.type === 'search' && st.query === q.query));
        expect(searching.length).toBeGreaterThanOrEqual(q.sessions);
        for (const sess of searching) {
          for (const st of sess.steps)
            if (st.type === 'product_click' && st.query === q.query) expect(relevant.has(st.productId)).toBe(true);
        }
      }
    });

    it(`${label}: learned queries share no word with any product, and their sessions choose the engaged products`, () => {
      expect(gt.learnedQueries.length).toBeGreaterThanOrEqual(1);
      const words = new Set<string>();
      for (const p of s.products()) {
        const text = [p.title, p.body_html, p.vendor, p.product_type, ...(p.tags ?? [])]
          .concat((p.options ?? []).flatMap((o) => o.values ?? []))
          .join(' ');
        for (const w of text.toLowerCase().split(/[^a-z0-9]+/)) if (w) words.add(w);
      }
      for (const q of gt.learnedQueries) {
        for (const w of q.query.split(' ')) expect(words.has(w), `${w} is in product text`).toBe(false);
        const searching = sessions.filter((x) => x.steps.some((st) => st.type === 'search' && st.query === q.query));
        expect(searching.length).toBeGreaterThanOrEqual(q.sessions);
        const engaged = new Set(q.engaged);
        const chosenBySome = new Set<string>();
        for (const sess of searching) {
          const chosen = sess.steps.flatMap((st) =>
            st.type === 'product_view' || st.type === 'add_to_cart' ? [st.productId] : [],
          );
          expect(chosen.length).toBeGreaterThan(0);
          for (const id of chosen) expect(engaged.has(id)).toBe(true);
          for (const id of chosen) chosenBySome.add(id);
        }
        // what the evaluation judges engaged is what shoppers chose
        expect([...chosenBySome].sort()).toEqual([...q.engaged].sort());
      }
    });

    it(`${label}: the search evaluation covers every kind, and its judgements are true of the catalog`, () => {
      const kinds = new Map<string, number>();
      for (const e of gt.searchEval) kinds.set(e.kind, (kinds.get(e.kind) ?? 0) + 1);
      for (const k of ['exact', 'plural', 'misspelled', 'synonym', 'multi_word', 'learned'])
        expect(kinds.get(k) ?? 0, k).toBeGreaterThanOrEqual(k === 'learned' ? 1 : 2);
      for (const e of gt.searchEval) {
        expect(e.relevant.length, e.query).toBeGreaterThanOrEqual(3);
        for (const id of e.engaged) expect(e.relevant).toContain(id);
        if (e.kind === 'learned' || e.kind === 'misspelled' || e.kind === 'synonym') continue;
        // every word of the query names the product (title, type, material or colour option), singular or plural
        for (const id of e.relevant) {
          const p = s.product(productIndexOf(id));
          const m = s.meta(productIndexOf(id));
          const text = [p.title, m.type.plural, ...(p.options ?? []).flatMap((o) => o.values ?? [])]
            .join(' ')
            .toLowerCase();
          for (const w of e.query.split(' ')) expect(text, `${e.query}: ${p.title}`).toContain(w);
        }
      }
    });

    it(`${label}: the trending query is new, and searched by many distinct sessions inside its window`, () => {
      const t = gt.trending;
      const searches = sessions.flatMap((x) =>
        x.steps
          .filter((st) => st.type === 'search' && st.query === t.query)
          .map((st) => ({ session: x.sessionId, at: st.t })),
      );
      expect(new Set(searches.map((x) => x.session)).size).toBeGreaterThanOrEqual(t.sessions);
      expect(t.sessions).toBeGreaterThanOrEqual(25);
      for (const x of searches) expect(x.at).toBeGreaterThanOrEqual(-t.windowMinutes * 60_000);
      // before the window nobody searched it, and during the window it dominates every other query
      const inWindow = new Map<string, Set<string>>();
      for (const x of sessions)
        for (const st of x.steps) {
          if (st.type === 'search' && st.t >= -t.windowMinutes * 60_000) {
            if (!inWindow.has(st.query)) inWindow.set(st.query, new Set());
            inWindow.get(st.query)?.add(x.sessionId);
          }
        }
      const top = [...inWindow.entries()].sort((a, b) => b[1].size - a[1].size)[0];
      expect(top[0]).toBe(t.query);
      for (const id of t.relevant)
        expect(String(s.product(productIndexOf(id)).title).toLowerCase()).toContain(t.query.split(' ')[0]);
    });

    it(`${label}: every bundle is bought together in ≥ the planted number of orders`, () => {
      expect(gt.bundles.length).toBeGreaterThanOrEqual(3);
      const orders = sessions.flatMap((x) =>
        x.steps.flatMap((st) => (st.type === 'purchase' ? [new Set(st.lines.map((l) => l.productId))] : [])),
      );
      for (const b of gt.bundles) {
        expect(b.productIds.length).toBeGreaterThanOrEqual(2);
        expect(orders.filter((o) => b.productIds.every((id) => o.has(id))).length).toBeGreaterThanOrEqual(b.orders);
      }
      const orderIds = sessions.flatMap((x) => x.steps.flatMap((st) => (st.type === 'purchase' ? [st.orderId] : [])));
      expect(new Set(orderIds).size).toBe(orderIds.length);
    });
  }
});
