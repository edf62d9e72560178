// Text search against the running stack: prepare / execute / feedback, relevance (keyword, plural,
// misspelled, synonym, multi-word, learned from the stream), intent modifiers, search rules, ranking
// rules, redirects, request events. Expectations come from the generated demo data and the test's own
// configuration, never from the engine.
// Every configuration write is waited for on its own: items are keyed by (store, kind, id), so two writes
// may land on different partitions, and the app having applied the second says nothing of the first.
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { productIndexOf } from '../../services/demo/generator/model.ts';
import { SearchState } from '../../services/storefront/search/prepared.ts';
import { type DemoStack, demoStack } from '../helpers/demo-stack.ts';
import { sql, stack } from '../helpers/stack.ts';
import { testStoreWriter, waitForApp } from '../helpers/stores.ts';

type Rec = { id: number; title: string; product_type: string; variants: { price: string }[] } & Record<string, unknown>;
interface Envelope {
  results: Rec[];
  totalResults: number;
  attributionToken: string;
  _meta: Record<string, any>;
  _workflow: { type: string; payload: any }[];
  error?: { code: string; fields: { path: string }[] };
}

let d: DemoStack;
const search = (q: string, body: unknown = {}, headers: Record<string, string> = {}) =>
  d.post<Envelope>(`/search/${encodeURIComponent(q)}/execute`, body, headers);
const workflow = (e: Envelope, type: string) => e._workflow.find((w) => w.type === type)?.payload;

/** a shopper's browser: bot traffic feeds no behavioural signal */
const BROWSER_UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15';
/** `sessions` shoppers search `query`, then view and cart `productId` (through POST /beacon) */
async function shoppersChoose(query: string, productId: string, sessions: number): Promise<void> {
  const now = Date.now();
  const events = [];
  for (let s = 0; s < sessions; s++) {
    const session = `choose-${newUlid()}`;
    const at = (ms: number) => new Date(now + ms).toISOString();
    events.push(
      {
        event_id: newUlid(),
        event_type: 'search',
        session_id: session,
        timestamp: at(0),
        query,
        contextual_data: { search_source: 'typed' },
      },
      {
        event_id: newUlid(),
        event_type: 'product_view',
        session_id: session,
        timestamp: at(1000),
        product_id: Number(productId),
      },
      {
        event_id: newUlid(),
        event_type: 'add_to_cart',
        session_id: session,
        timestamp: at(2000),
        product_id: Number(productId),
      },
    );
  }
  const res = await fetch(`${stack().httpUrl}/beacon`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-storefront-access-token': d.token, 'user-agent': BROWSER_UA },
    body: JSON.stringify({ events }),
  });
  expect(res.status).toBeLessThan(300);
  expect(await res.json()).toMatchObject({ accepted: events.length, rejected: 0 });
}
/** a lowercase word of letters only, new to the store (no stem shared with another such word) */
const freshWord = () =>
  `q${Array.from({ length: 9 }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join('')}`;

/** active and published by now (the newest products' publications may be scheduled up to 3 days ahead) */
const onStorefront = (m: ReturnType<DemoStack['demo']['meta']>) =>
  m.status === 'active' && m.publishedMs !== null && m.publishedMs <= Date.now();

/** demo products by type and material (from the generator's own description of each product) */
function productsWhere(pred: (m: ReturnType<DemoStack['demo']['meta']>) => boolean): string[] {
  const out: string[] = [];
  for (let i = 0; i < d.demo.productCount; i++) {
    const m = d.demo.meta(i);
    if (onStorefront(m) && pred(m)) out.push(m.productId);
  }
  return out;
}
/** the most common (type, material) pair of the store: a query with many relevant products */
let pair: { type: string; plural: string; material: string; ids: string[] };

beforeAll(async () => {
  d = await demoStack({ name: 'search-test', products: 400 });
  const counts = new Map<string, { type: string; plural: string; material: string; ids: string[] }>();
  for (let i = 0; i < d.demo.productCount; i++) {
    const m = d.demo.meta(i);
    if (!onStorefront(m) || m.type.name.includes('-') || m.material.includes(' ')) continue;
    const k = `${m.material}|${m.type.name}`;
    const e = counts.get(k) ?? { type: m.type.name, plural: m.type.plural, material: m.material, ids: [] };
    e.ids.push(m.productId);
    counts.set(k, e);
  }
  pair = [...counts.values()].sort((a, b) => b.ids.length - a.ids.length)[0];
  await vi.waitFor(
    async () => expect((await search(`${pair.material} ${pair.type}`)).body.totalResults).toBeGreaterThan(0),
    { timeout: 30_000, interval: 250 },
  );
}, 180_000);

afterAll(async () => {
  await d?.close();
});

describe('search: relevance', () => {
  it('ranks the products matching every word first: exact, plural and multi-word queries', async () => {
    const q = `${pair.material} ${pair.type}`.toLowerCase();
    const r = await search(q, { pagination: { limit: pair.ids.length } });
    expect(r.res.status).toBe(200);
    expect(r.body.attributionToken).toBe(r.res.headers.get('x-request-id'));
    const top = r.body.results.map((x) => String(x.id));
    expect(new Set(top)).toEqual(new Set(pair.ids));
    // the plural finds the same products (stemming collapses singular and plural)
    const plural = await search(`${pair.material} ${pair.plural}`.toLowerCase(), {
      pagination: { limit: pair.ids.length },
    });
    expect(new Set(plural.body.results.map((x) => String(x.id)))).toEqual(new Set(pair.ids));
    // three words: a colour narrows it (colours are option values)
    const m = d.demo.meta(productIndexOf(pair.ids[0]));
    const colour = m.colors[0].name;
    const three = productsWhere(
      (x) => x.type.name === pair.type && x.material === pair.material && x.colors.some((c) => c.name === colour),
    );
    const r3 = await search(`${colour} ${pair.material} ${pair.type}`.toLowerCase(), {
      pagination: { limit: three.length },
    });
    expect(new Set(r3.body.results.map((x) => String(x.id)))).toEqual(new Set(three));
  });

  it('corrects a misspelled word to the catalog word and reports the replacement', async () => {
    const word = pair.material.toLowerCase();
    // one edit: a doubled letter
    const typo = `${word.slice(0, 2)}${word[2]}${word.slice(2)}`;
    const r = await search(`${typo} ${pair.type}`, { pagination: { limit: pair.ids.length } });
    expect(workflow(r.body, 'query-replacement')).toBe(`${word} ${pair.type.toLowerCase()}`);
    expect(new Set(r.body.results.map((x) => String(x.id)))).toEqual(new Set(pair.ids));
    expect(workflow(r.body, 'query-interpretation').corrections).toEqual([{ from: typo, to: word }]);
  });

  it('expands two-way and one-way synonyms from the configuration', async () => {
    const w = testStoreWriter();
    await waitForApp(
      await w.putConfig(d.storeId, 'synonym', { id: 'zz-two', type: 'two_way', terms: ['quibble', pair.type] }),
    );
    const one = await w.putConfig(d.storeId, 'synonym', {
      id: 'zz-one',
      type: 'one_way',
      term: 'wobblewear',
      synonyms: [pair.material],
    });
    await waitForApp(one);
    const r = await search(`${pair.material} quibble`, { pagination: { limit: pair.ids.length } });
    expect(workflow(r.body, 'query-expansion')).toContain(`${pair.material} ${pair.type}`.toLowerCase());
    expect(new Set(r.body.results.map((x) => String(x.id)))).toEqual(new Set(pair.ids));
    // one way: the term finds its synonyms' products, a synonym does not expand back to the term
    const fwd = await search('wobblewear');
    expect(workflow(fwd.body, 'query-expansion')).toEqual([pair.material.toLowerCase()]);
    expect(fwd.body.totalResults).toBeGreaterThan(0);
    const back = await search(pair.material);
    expect(workflow(back.body, 'query-expansion') ?? []).not.toContain('wobblewear');
  });

  it('learns from shoppers: a query no product text matches finds what sessions viewed and carted after it', async () => {
    const query = `zorblax picnic ${Date.now() % 1000}`;
    const before = await search(query);
    expect(before.body.totalResults).toBe(0);
    const chosen = pair.ids[pair.ids.length - 1];
    const now = Date.now();
    const events = [];
    for (let s = 0; s < 6; s++) {
      const session = `learn-${newUlid()}`;
      events.push(
        {
          event_id: newUlid(),
          event_type: 'search',
          session_id: session,
          timestamp: new Date(now).toISOString(),
          query,
          contextual_data: { search_source: 'typed' },
        },
        {
          event_id: newUlid(),
          event_type: 'product_view',
          session_id: session,
          timestamp: new Date(now + 1000).toISOString(),
          product_id: Number(chosen),
        },
        {
          event_id: newUlid(),
          event_type: 'add_to_cart',
          session_id: session,
          timestamp: new Date(now + 2000).toISOString(),
          product_id: Number(chosen),
        },
      );
    }
    const res = await fetch(`${stack().httpUrl}/beacon`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-storefront-access-token': d.token,
        // a shopper's browser: bot traffic feeds no behavioural signal
        'user-agent':
          'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
      },
      body: JSON.stringify({ events }),
    });
    expect(res.status).toBeLessThan(300);
    // every event accepted (a dropped one would make this test wait for nothing)
    expect(await res.json()).toMatchObject({ accepted: events.length, rejected: 0 });
    const started = Date.now();
    await expect
      .poll(async () => (await search(query)).body.results[0]?.id, { timeout: 15_000, interval: 100 })
      .toBe(Number(chosen));
    expect(Date.now() - started).toBeLessThan(15_000);
    const r = await search(query);
    expect(workflow(r.body, 'query-interpretation').classification).toBe('keyword+learned');
  });
});

describe('search: intent modifiers', () => {
  it('reads a price ceiling out of the query and filters on it', async () => {
    // a ceiling half of the type's products are under (the seed sets the prices: a fixed one can exclude all)
    const lowest = (i: number) => Math.min(...(d.demo.product(i).variants ?? []).map((v) => Number(v.price)));
    const prices: number[] = [];
    for (let i = 0; i < d.demo.productCount; i++)
      if (onStorefront(d.demo.meta(i)) && d.demo.meta(i).type.name === pair.type) prices.push(lowest(i));
    prices.sort((a, b) => a - b);
    const ceiling = Math.ceil(prices[prices.length >> 1]);
    const r = await search(`${pair.type} under ${ceiling}`, { pagination: { limit: 100 } });
    expect(workflow(r.body, 'intent-modifiers')).toEqual([
      expect.objectContaining({ type: 'price_max', value: ceiling }),
    ]);
    expect(r.body.results.length).toBeGreaterThan(0);
    for (const x of r.body.results)
      expect(Math.min(...x.variants.map((v) => Number(v.price)))).toBeLessThanOrEqual(ceiling);
  });

  it('ranks cheaper products higher for a price-sensitive query', async () => {
    const plain = await search(pair.type, { pagination: { limit: 10 } });
    const cheap = await search(`cheap ${pair.type}`, { pagination: { limit: 10 } });
    expect(workflow(cheap.body, 'intent-modifiers')).toEqual([
      expect.objectContaining({ type: 'price_sensitivity', direction: 'lower' }),
    ]);
    const avg = (e: Envelope) =>
      e.results.reduce((s, x) => s + Math.min(...x.variants.map((v) => Number(v.price))), 0) / e.results.length;
    expect(avg(cheap.body)).toBeLessThan(avg(plain.body));
  });
});

describe('search: prepare and execute', () => {
  it('prepares in the background, and execute uses the prepared understanding', async () => {
    const q = `${pair.material} ${pair.plural}`;
    const p = await d.post<{ search_id: string }>(`/search/${encodeURIComponent(q)}/prepare`, {});
    expect(p.res.status).toBe(202);
    expect(p.body.search_id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    const state = new SearchState(d.redis);
    await vi.waitFor(async () => expect((await state.get(d.storeId, p.body.search_id))?.state).toBe('ready'));
    const r = await search(q, { search_id: p.body.search_id });
    expect(r.res.status).toBe(200);
    expect(r.body.totalResults).toBeGreaterThan(0);
    // both requests are recorded, with the prepared id
    await expect
      .poll(
        async () =>
          (
            await sql<{ kind: string }>(
              `SELECT kind FROM requests_raw WHERE store_id = '${d.storeId}' AND search_id = '${p.body.search_id}' ORDER BY kind`,
            )
          ).map((x) => x.kind),
        { timeout: 15_000 },
      )
      .toEqual(['prepare', 'search']);
  });

  it('answers 425 with Retry-After to an SDK client ≥ 1.0.0 while the prepared search is not ready', async () => {
    const id = newUlid();
    await new SearchState(d.redis).start(d.storeId, id, 'linen');
    const r = await search('linen', { search_id: id }, { 'x-sdk-client': 'storefront-sdk/1.2.0' });
    expect(r.res.status).toBe(425);
    expect(r.res.headers.get('retry-after')).toBe('1');
    expect(r.body.error?.code).toBe('search_not_ready');
    // an older client waits briefly, then gets the normal answer
    const old = await search('linen', { search_id: id }, { 'x-sdk-client': 'storefront-sdk/0.9.1' });
    expect(old.res.status).toBe(200);
    // an unknown (or expired) id is normal processing
    const unknown = await search('linen', { search_id: newUlid() }, { 'x-sdk-client': 'storefront-sdk/1.2.0' });
    expect(unknown.res.status).toBe(200);
  });

  it('rejects an empty query and a bad search_id with 422 naming the field', async () => {
    const bad = await search('linen', { search_id: 'nope' });
    expect(bad.res.status).toBe(422);
    expect(bad.body.error?.fields.map((f) => f.path)).toContain('search_id');
    const blank = await search(' ');
    expect(blank.res.status).toBe(422);
    expect(blank.body.error?.fields.map((f) => f.path)).toContain('searchQuery');
  });

  it('counts served searches in the searches-served aggregate and as trending votes', async () => {
    const n = async () =>
      Number(
        (
          await sql<{ n: string }>(
            `SELECT toString(sum(searches)) AS n FROM searches_served_daily WHERE store_id = '${d.storeId}'`,
          )
        )[0]?.n ?? 0,
      );
    const before = await n();
    await search(pair.type);
    await expect.poll(n, { timeout: 15_000 }).toBeGreaterThan(before);
    // a shopper's served search is a trending vote too (the served-search half of trending)
    const query = `trendy ${newUlid().slice(-8).toLowerCase()}`;
    await search(
      query,
      {},
      {
        'user-agent':
          'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36',
      },
    );
    await expect
      .poll(
        async () =>
          (
            await sql<{ n: string }>(
              `SELECT toString(sum(searches)) AS n FROM trending_queries_hourly WHERE store_id = '${d.storeId}' AND query = '${query}'`,
            )
          )[0]?.n,
        { timeout: 15_000 },
      )
      .toBe('1');
  });
});

describe('search: rules, ranking rules and redirects', () => {
  it('applies every search-rule action type and reports each, with unknown types unsupported', async () => {
    const w = testStoreWriter();
    const pinned = pair.ids[3] ?? pair.ids[0];
    const ruleId = newUlid();
    const put = await w.putConfig(d.storeId, 'search_rule', {
      id: ruleId,
      name: 'rules test',
      targeting: { query_match: 'exact', queries: ['rulesquery'] },
      actions: [
        { type: 'replace_query', query: `${pair.material} ${pair.type}` },
        { type: 'expand_query', queries: [pair.type] },
        { type: 'pin_products', product_ids: [pinned] },
        { type: 'teleport_results' },
      ],
    });
    await waitForApp(put);
    const r = await search('rulesquery', { pagination: { limit: 5 } });
    expect(r.body._meta.appliedSearchRules).toEqual([ruleId]);
    expect(r.body._meta.appliedSearchRuleActions).toEqual([
      { rule_id: ruleId, type: 'replace_query', changed: true },
      { rule_id: ruleId, type: 'expand_query', changed: true },
      { rule_id: ruleId, type: 'pin_products', changed: expect.any(Boolean) },
      { rule_id: ruleId, type: 'teleport_results', changed: false, reason: 'unsupported_action_type' },
    ]);
    expect(String(r.body.results[0].id)).toBe(pinned);
    expect(workflow(r.body, 'query-replacement')).toBe(`${pair.material} ${pair.type}`.toLowerCase());
    // a query the rule does not target: no rule applied
    const other = await search(pair.type);
    expect(other.body._meta.appliedSearchRules).toEqual([]);
  });

  it('applies filter, bury and sort-order actions', async () => {
    const w = testStoreWriter();
    const ruleId = newUlid();
    const put = await w.putConfig(d.storeId, 'search_rule', {
      id: ruleId,
      name: 'filter test',
      targeting: { query_match: 'contains', queries: ['filterme'] },
      actions: [
        {
          type: 'apply_filter',
          filter_group: { expressions: [{ property: 'product_type', operator: 'eq', values: [pair.type] }] },
        },
        { type: 'set_sort_order', sort_order_code: 'price_asc' },
      ],
    });
    await waitForApp(put);
    // a colour spans product types: the filter to one type removes results
    const colour = d.demo.meta(productIndexOf(pair.ids[0])).colors[0].name.toLowerCase();
    const r = await search(`filterme ${colour}`, { pagination: { limit: 100 } });
    expect(r.body.results.every((x) => x.product_type === pair.type)).toBe(true);
    expect(r.body._meta.sortOrderCode).toBe('price_asc');
    const actions = r.body._meta.appliedSearchRuleActions as { type: string; changed: boolean }[];
    expect(actions.map((a) => [a.type, a.changed])).toEqual([
      ['apply_filter', true],
      ['set_sort_order', true],
    ]);
    // the shopper's own sort wins over the rule's
    const own = await search(`filterme ${colour}`, { sort_order_code: 'price_desc' });
    expect(own.body._meta.sortOrderCode).toBe('price_desc');
  });

  it('boosts and buries with rule actions, and redirects with a rule', async () => {
    const w = testStoreWriter();
    const q = `${pair.type} ${pair.material}`.toLowerCase();
    const plain = (await search(q, { pagination: { limit: 100 } })).body.results.map((x) => String(x.id));
    const top = plain[0];
    const middle = plain[Math.floor(plain.length / 2)];
    const ruleId = newUlid();
    await waitForApp(
      await w.putConfig(d.storeId, 'search_rule', {
        id: ruleId,
        name: 'boost and bury',
        targeting: { query_match: 'exact', queries: [q] },
        actions: [
          {
            type: 'boost',
            match: { expressions: [{ property: 'id', operator: 'eq', values: [Number(middle)] }] },
            factor: 10,
          },
          {
            type: 'bury',
            match: { expressions: [{ property: 'id', operator: 'eq', values: [Number(top)] }] },
            factor: 0,
          },
        ],
      }),
    );
    const redirectRule = newUlid();
    const put = await w.putConfig(d.storeId, 'search_rule', {
      id: redirectRule,
      name: 'redirect',
      targeting: { query_match: 'starts_with', queries: ['sale on'] },
      actions: [{ type: 'redirect', url: '/collections/sale' }],
    });
    await waitForApp(put);
    const r = await search(q, { pagination: { limit: 100 } });
    const ids = r.body.results.map((x) => String(x.id));
    // the rank score of the middle product (about 0.5) times 11 leads; the first one times 0 trails
    expect(ids[0]).toBe(middle);
    expect(ids[ids.length - 1]).toBe(top);
    expect(r.body._meta.appliedSearchRuleActions).toEqual([
      { rule_id: ruleId, type: 'boost', changed: true },
      { rule_id: ruleId, type: 'bury', changed: true },
    ]);
    const red = await search('sale on shirts');
    expect(red.body._meta.redirect).toEqual({ url: '/collections/sale' });
    expect(red.body._meta.appliedSearchRules).toEqual([redirectRule]);
    expect(red.body.results).toEqual([]);
  });

  it('promotes with a ranking rule, and redirects on a semantic term by its stems', async () => {
    const w = testStoreWriter();
    // a query no other test's rule targets (for Jeans, Shorts, … the plural is the type: "<plural> <material>"
    // would be the boost-and-bury rule's exact query)
    const q = pair.plural.toLowerCase();
    const plain = (await search(q, { pagination: { limit: 100 } })).body.results.map((x) => String(x.id));
    const target = plain[1];
    await waitForApp(
      await w.putConfig(d.storeId, 'ranking_rule', {
        id: newUlid(),
        name: 'promote',
        queries: [q],
        type: 'promote',
        match: { expressions: [{ property: 'id', operator: 'eq', values: [Number(target)] }] },
        magnitude: 1,
        status: 'published',
      }),
    );
    const put = await w.putConfig(d.storeId, 'redirect_term', {
      term: 'gift cards',
      url: '/pages/gift-cards',
      match: 'semantic',
    });
    await waitForApp(put);
    const ids = (await search(q, { pagination: { limit: 100 } })).body.results.map((x) => String(x.id));
    // promoted by magnitude 1: its rank score doubles (1 − 1/n → about 2), so it leads
    expect(ids.indexOf(target)).toBeLessThan(plain.indexOf(target));
    expect(ids[0]).toBe(target);
    // "gift card" is not the term, but has its stems
    expect((await search('Gift Card')).body._meta.redirect).toEqual({ url: '/pages/gift-cards' });
    expect((await search('gift')).body._meta.redirect).toBeUndefined();
  });

  it('redirects on a semantic term sharing no stem with the query once shoppers chose the same products after both', async () => {
    const query = `${freshWord()} ${freshWord()}`;
    const term = freshWord();
    const url = `/pages/${term}`;
    const put = await testStoreWriter().putConfig(d.storeId, 'redirect_term', { term, url, match: 'semantic' });
    await waitForApp(put);
    // no behaviour yet: the words alone share nothing
    expect((await search(query)).body._meta.redirect).toBeUndefined();
    const chosen = pair.ids[0];
    await shoppersChoose(query, chosen, 4);
    await shoppersChoose(term, chosen, 4);
    await expect
      .poll(async () => (await search(query)).body._meta.redirect, { timeout: 15_000, interval: 200 })
      .toEqual({ url });
    const r = await search(query);
    expect(r.body._workflow).toEqual([{ type: 'semantic-redirect', payload: url }]);
    expect(r.body.results).toEqual([]);
    // a query shoppers took to another product is not redirected
    const elsewhere = `${freshWord()} ${freshWord()}`;
    await shoppersChoose(elsewhere, pair.ids[1], 4);
    await expect
      .poll(async () => (await search(elsewhere)).body.results[0]?.id, { timeout: 15_000, interval: 200 })
      .toBe(Number(pair.ids[1]));
    expect((await search(elsewhere)).body._meta.redirect).toBeUndefined();
  });

  it('pins, promotes and demotes with ranking rules for their queries', async () => {
    const w = testStoreWriter();
    const q = `${pair.material} ${pair.type}`.toLowerCase();
    const plain = await search(q, { pagination: { limit: pair.ids.length } });
    const order = plain.body.results.map((x) => String(x.id));
    const last = order[order.length - 1];
    const first = order[0];
    await waitForApp(
      await w.putConfig(d.storeId, 'ranking_rule', {
        id: newUlid(),
        name: 'demote the first',
        queries: [q],
        type: 'demote',
        match: { expressions: [{ property: 'id', operator: 'eq', values: [Number(first)] }] },
        magnitude: 1,
        status: 'published',
      }),
    );
    const pin = await w.putConfig(d.storeId, 'ranking_rule', {
      id: newUlid(),
      name: 'pin the last',
      queries: [q],
      type: 'pin',
      product_ids: [last],
      status: 'published',
    });
    await waitForApp(pin);
    const r = await search(q, { pagination: { limit: 100 } });
    expect(r.body.totalResults).toBeLessThanOrEqual(100);
    const ids = r.body.results.map((x) => String(x.id));
    expect(ids[0]).toBe(last);
    // demoted by magnitude 1: below every other match, partial matches included
    expect(ids.indexOf(first)).toBe(ids.length - 1);
    expect((workflow(r.body, 'ranking-rules') as { type: string }[]).map((x) => x.type).sort()).toEqual([
      'demote',
      'pin',
    ]);
  });

  it('redirects on a redirect term (results empty), and serves a collection redirect inline when enabled', async () => {
    const w = testStoreWriter();
    const coll = d.demo.collections[0];
    await waitForApp(
      await w.putConfig(d.storeId, 'redirect_term', { term: 'goto returns', url: '/pages/returns', match: 'exact' }),
    );
    const put = await w.putConfig(d.storeId, 'redirect_term', {
      term: 'goto collection',
      url: `/collections/${coll.handle}`,
      match: 'exact',
    });
    await waitForApp(put);
    const r = await search('Goto Returns');
    expect(r.body.results).toEqual([]);
    expect(r.body.totalResults).toBe(0);
    expect(r.body._meta.redirect).toEqual({ url: '/pages/returns' });
    expect(workflow(r.body, 'semantic-redirect')).toBe('/pages/returns');
    // inline collection redirects are off by default: a plain redirect
    expect((await search('goto collection')).body._meta.redirect).toEqual({ url: `/collections/${coll.handle}` });
    await waitForApp(await w.updateStore(d.storeId, { inline_collection_redirects: true }));
    const inline = await search('goto collection', { pagination: { limit: 5 } });
    expect(inline.body._meta.redirect).toBeUndefined();
    expect(inline.body._meta.collection).toMatchObject({ handle: coll.handle });
    expect(inline.body._meta.query).toBe('goto collection');
    expect(inline.body.results.length).toBeGreaterThan(0);
    // the collection's merchandising rule applies to the inline results, reported after the redirect
    const ruleId = newUlid();
    const pinned = coll.product_ids[coll.product_ids.length - 1];
    await waitForApp(
      await w.putConfig(d.storeId, 'merch_rule', {
        id: ruleId,
        name: 'inline pin',
        collection_handle: coll.handle,
        pins: [{ product_id: pinned, position: 1 }],
      }),
    );
    const ruled = await search('goto collection', { pagination: { limit: 5 } });
    expect(ruled.body._workflow).toEqual([
      { type: 'semantic-redirect', payload: `/collections/${coll.handle}` },
      { type: 'rule-applied', payload: ruleId },
    ]);
    expect(String(ruled.body.results[0].id)).toBe(pinned);
  });
});

describe('search: feedback', () => {
  it('records feedback with the search context within 15 minutes, through the log into ClickHouse', async () => {
    await waitForApp(
      await testStoreWriter().putConfig(d.storeId, 'synonym', {
        id: 'zz-two',
        type: 'two_way',
        terms: ['quibble', pair.type],
      }),
    );
    const q = `${pair.material} quibble`;
    const p = await d.post<{ search_id: string }>(`/search/${encodeURIComponent(q)}/prepare`, {});
    const state = new SearchState(d.redis);
    await vi.waitFor(async () => expect((await state.get(d.storeId, p.body.search_id))?.state).toBe('ready'));
    const f = await d.post<{ id: string; search_id: string; recorded: boolean }>('/search/feedback', {
      search_id: p.body.search_id,
      rating: 'negative',
      text_feedback: 'not what I meant',
      product_feedback: [{ product_id: Number(pair.ids[0]), rating: 'positive', feedback: 'this one' }],
      identity: { sessionId: 'fb-session' },
    });
    expect(f.res.status).toBe(201);
    expect(f.body).toEqual({
      id: expect.stringMatching(/^[0-9A-Z]{26}$/),
      search_id: p.body.search_id,
      recorded: true,
    });
    await expect
      .poll(
        async () =>
          (
            await sql<Record<string, unknown>>(
              `SELECT rating, text_feedback, has_search_context, query, expanded_queries, session_id
               FROM search_feedback WHERE store_id = '${d.storeId}' AND feedback_id = '${f.body.id}'`,
            )
          )[0],
        { timeout: 15_000 },
      )
      .toMatchObject({
        rating: 'negative',
        text_feedback: 'not what I meant',
        has_search_context: true,
        query: q,
        expanded_queries: [`${pair.material} ${pair.type}`.toLowerCase()],
        session_id: 'fb-session',
      });
    // an unknown search: recorded without context
    const g = await d.post<{ id: string }>('/search/feedback', { search_id: newUlid(), rating: 'positive' });
    expect(g.res.status).toBe(201);
    await expect
      .poll(
        async () =>
          (
            await sql<{ c: number }>(
              `SELECT has_search_context AS c FROM search_feedback WHERE store_id = '${d.storeId}' AND feedback_id = '${g.body.id}'`,
            )
          )[0]?.c,
        { timeout: 15_000 },
      )
      .toBe(false);
  });

  it('feedback sent the moment concurrent searches answer finds each search’s own context (attributionToken)', async () => {
    // the searches' contexts go to Redis in one pipeline after the turn that answered them
    const queries = Array.from({ length: 8 }, (_, i) => `${pair.material} ${pair.type} ${freshWord()}${i}`);
    const answers = await Promise.all(queries.map((q) => search(q)));
    const feedback = await Promise.all(
      answers.map((a) =>
        d.post<{ id: string }>('/search/feedback', { search_id: a.body.attributionToken, rating: 'positive' }),
      ),
    );
    for (const f of feedback) expect(f.res.status).toBe(201);
    const ids = feedback.map((f) => `'${f.body.id}'`).join(',');
    await expect
      .poll(
        async () =>
          (
            await sql<{ feedback_id: string; query: string; has_search_context: boolean }>(
              `SELECT feedback_id, query, has_search_context FROM search_feedback
               WHERE store_id = '${d.storeId}' AND feedback_id IN (${ids})`,
            )
          )
            .sort((a, b) => ids.indexOf(a.feedback_id) - ids.indexOf(b.feedback_id))
            .map((r) => [r.has_search_context, r.query]),
        { timeout: 15_000 },
      )
      .toEqual(queries.map((q) => [true, q]));
  });

  it("stores the prepared search's intent modifiers and the shopper's customer id with the feedback", async () => {
    const q = `cheap ${pair.type} under 50`;
    const p = await d.post<{ search_id: string }>(`/search/${encodeURIComponent(q)}/prepare`, {});
    const state = new SearchState(d.redis);
    await vi.waitFor(async () => expect((await state.get(d.storeId, p.body.search_id))?.state).toBe('ready'));
    const f = await d.post<{ id: string }>('/search/feedback', {
      search_id: p.body.search_id,
      rating: 'positive',
      identity: { sessionId: 'fb-intents', customerId: 'cust-4242' },
    });
    expect(f.res.status).toBe(201);
    const row = await vi.waitFor(
      async () => {
        const rows = await sql<Record<string, string | null>>(
          `SELECT query, normalized_query, intent_modifiers_json, customer_id, session_id
           FROM search_feedback WHERE store_id = '${d.storeId}' AND feedback_id = '${f.body.id}'`,
        );
        expect(rows).toHaveLength(1);
        return rows[0];
      },
      { timeout: 15_000, interval: 200 },
    );
    expect(row).toMatchObject({
      query: q,
      normalized_query: q.toLowerCase(),
      customer_id: 'cust-4242',
      session_id: 'fb-intents',
    });
    expect(JSON.parse(row.intent_modifiers_json as string)).toEqual([
      { type: 'price_max', value: 50, text: 'under 50' },
      { type: 'price_sensitivity', direction: 'lower', text: 'cheap' },
    ]);
  });

  it('rejects feedback breaking a field rule with 422 naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ rating: 'positive' }, 'search_id'],
      [{ search_id: 'x', rating: 'positive' }, 'search_id'],
      [{ search_id: newUlid(), rating: 'meh' }, 'rating'],
      [{ search_id: newUlid(), text_feedback: 'x'.repeat(2001) }, 'text_feedback'],
      [{ search_id: newUlid(), product_feedback: [{ rating: 'positive' }] }, 'product_feedback[0].product_id'],
      [
        { search_id: newUlid(), product_feedback: [{ product_id: 1, feedback: 'y'.repeat(501) }] },
        'product_feedback[0].feedback',
      ],
      [{ search_id: newUlid(), product_feedback: [{ product_id: 1, rating: 'great' }] }, 'product_feedback[0].rating'],
      [{ search_id: newUlid(), product_feedback: [{ product_id: 1.5 }] }, 'product_feedback[0].product_id'],
      [{ search_id: newUlid(), product_feedback: [{ product_id: '12' }] }, 'product_feedback[0].product_id'],
      [{ search_id: newUlid(), product_feedback: [{ product_id: 0 }] }, 'product_feedback[0].product_id'],
    ];
    for (const [body, field] of cases) {
      const r = await d.post<Envelope>('/search/feedback', body);
      expect(r.res.status, JSON.stringify(body)).toBe(422);
      expect(r.body.error?.fields.map((f) => f.path)).toContain(field);
    }
  });
});
