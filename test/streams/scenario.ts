// A generated stream with a known ground truth: shoppers' visits (searches, views, clicks, carts,
// impressions, purchases) with injected duplicate event_ids, search request events with repeated searches and
// duplicate request ids, and orders that are edited, cancelled and re-sent. The ground truth is computed
// here independently of the processors, from the semantics documented in docs/analytics.md.
import type { EnrichedEvent } from '../../schemas/events.ts';
import type { Order } from '../../schemas/orders.ts';
import type { RequestEvent } from '../../schemas/requests.ts';
import { enrichedEvent, order, rng, searchRequest } from './helpers.ts';

export interface Scenario {
  /** keyed records in production order */
  events: { key: string; value: EnrichedEvent }[];
  requests: { key: string; value: RequestEvent }[];
  orders: { key: string; value: Order }[];
  truth: Truth;
}

export interface Truth {
  /** store → events_raw rows */
  eventsRaw: Record<string, number>;
  /** store|product → views, clicks, add-to-carts, impressions (product_daily_engagement) */
  views: Record<string, number>;
  clicks: Record<string, number>;
  addToCarts: Record<string, number>;
  impressions: Record<string, number>;
  /** store|a|b → sessions */
  coView: Record<string, number>;
  coCart: Record<string, number>;
  /** store|query|product → sessions */
  searchedViewed: Record<string, number>;
  /** store|query|product → sessions that carted it after the query */
  searchedCarted: Record<string, number>;
  /** store|viewed|bought → purchases */
  viewedBought: Record<string, number>;
  /** store|query|product → purchases */
  searchedPurchased: Record<string, number>;
  /** store → sessions (visits) and events */
  sessions: Record<string, number>;
  sessionEvents: Record<string, number>;
  /** store|country|bucket|query → votes */
  trending: Record<string, number>;
  /** store → searches served */
  searches: Record<string, number>;
  /** store|product → units, orders containing it, revenue (6 decimals) (product_daily_sales) */
  units: Record<string, number>;
  orders: Record<string, number>;
  revenue: Record<string, string>;
  /** store|a|b → orders */
  coPurchase: Record<string, number>;
}

const inc = (m: Record<string, number>, k: string, n = 1) => {
  m[k] = (m[k] ?? 0) + n;
};

export function generateScenario(opts: {
  seed: number;
  stores: string[];
  visitsPerStore: number;
  ordersPerStore: number;
  base?: string;
}): Scenario {
  const rand = rng(opts.seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
  const base = Date.parse(opts.base ?? '2026-11-20T10:00:00.000Z');
  const iso = (ms: number) => new Date(ms).toISOString();
  const queries = ['shoes', 'red dress', 'hat', 'wool scarf', 'boots', 'bag'];
  const countries = ['US', 'DE', 'FR'];
  const truth: Truth = {
    eventsRaw: {},
    views: {},
    clicks: {},
    addToCarts: {},
    impressions: {},
    coView: {},
    coCart: {},
    searchedViewed: {},
    searchedCarted: {},
    viewedBought: {},
    searchedPurchased: {},
    sessions: {},
    sessionEvents: {},
    trending: {},
    searches: {},
    units: {},
    orders: {},
    revenue: {},
    coPurchase: {},
  };
  const events: Scenario['events'] = [];
  const requests: Scenario['requests'] = [];
  const orders: Scenario['orders'] = [];
  const lateDuplicates: Scenario['events'] = [];
  const voters = new Map<string, Set<string>>();

  for (const store of opts.stores) {
    for (let v = 0; v < opts.visitsPerStore; v++) {
      const sessionId = `${store}-sess-${v}`;
      const country = pick(countries);
      const key = `${store}:${sessionId}`;
      const visits = rand() < 0.15 ? 2 : 1;
      let t = base + Math.floor(rand() * 50 * 60_000);
      const stream: EnrichedEvent[] = [];
      for (let visit = 0; visit < visits; visit++) {
        if (visit > 0) t += 40 * 60_000; // > 30 minutes of inactivity: a new session
        inc(truth.sessions, store);
        const catalog = Array.from({ length: 12 }, () => String(1000 + Math.floor(rand() * 40)));
        const searched: string[] = [];
        const viewed: string[] = [];
        const carted: string[] = [];
        const sv = new Set<string>();
        const sc = new Set<string>();
        const steps = 3 + Math.floor(rand() * 12);
        for (let s = 0; s < steps; s++) {
          t += 5_000 + Math.floor(rand() * 60_000);
          const ts = iso(t);
          const r = rand();
          let e: EnrichedEvent;
          if (r < 0.2 && searched.length < 3) {
            const q = pick(queries);
            e = enrichedEvent({
              event_type: 'search',
              store_id: store,
              session_id: sessionId,
              timestamp: ts,
              query: q,
              contextual_data: { search_source: 'typed' },
              geo_country: country,
            });
            if (!searched.includes(q)) searched.push(q);
            // the read API served this search: a request event, sometimes twice (a retry) with the same id
            const req = searchRequest({ store_id: store, query: q, session_id: sessionId, country, at: ts });
            requests.push({ key, value: req });
            if (rand() < 0.1) requests.push({ key, value: { ...req } });
            inc(truth.searches, store);
            const bucket = `${ts.slice(0, 13)}:00:00`;
            const vk = `${store}|${country}|${bucket}|${q}`;
            if (!voters.has(vk)) voters.set(vk, new Set());
            voters.get(vk)?.add(sessionId);
          } else if (r < 0.7) {
            const p = pick(catalog);
            const kind = rand();
            const click = kind < 0.25;
            const impression = !click && kind < 0.4;
            e = enrichedEvent({
              event_type: click ? 'product_click' : impression ? 'product_impression' : 'product_view',
              store_id: store,
              session_id: sessionId,
              timestamp: ts,
              product_id: p,
              position: click || impression ? 1 : null,
              geo_country: country,
            });
            if (click) inc(truth.clicks, `${store}|${p}`);
            else if (impression) inc(truth.impressions, `${store}|${p}`);
            else {
              inc(truth.views, `${store}|${p}`);
              if (!viewed.includes(p)) {
                inc(truth.coView, `${store}|${p}|${p}`);
                for (const o of viewed) {
                  inc(truth.coView, `${store}|${p}|${o}`);
                  inc(truth.coView, `${store}|${o}|${p}`);
                }
                viewed.push(p);
              }
            }
            // an impression is not a view: it feeds no journey
            for (const q of impression ? [] : searched) {
              if (!sv.has(`${q}|${p}`)) {
                sv.add(`${q}|${p}`);
                inc(truth.searchedViewed, `${store}|${q}|${p}`);
              }
            }
          } else if (r < 0.85) {
            const p = pick(catalog);
            e = enrichedEvent({
              event_type: 'add_to_cart',
              store_id: store,
              session_id: sessionId,
              timestamp: ts,
              product_id: p,
              quantity: 1,
              price: '9.99',
              currency: 'USD',
              geo_country: country,
            });
            inc(truth.addToCarts, `${store}|${p}`);
            for (const q of searched) {
              if (!sc.has(`${q}|${p}`)) {
                sc.add(`${q}|${p}`);
                inc(truth.searchedCarted, `${store}|${q}|${p}`);
              }
            }
            if (!carted.includes(p)) {
              inc(truth.coCart, `${store}|${p}|${p}`);
              for (const o of carted) {
                inc(truth.coCart, `${store}|${p}|${o}`);
                inc(truth.coCart, `${store}|${o}|${p}`);
              }
              carted.push(p);
            }
          } else if (r < 0.92) {
            const bought = [...new Set([pick(catalog), pick(catalog)])];
            e = enrichedEvent({
              event_type: 'purchase',
              store_id: store,
              session_id: sessionId,
              timestamp: ts,
              currency: 'USD',
              order_id: `${sessionId}-${s}`,
              line_items: bought.map((b) => ({ product_id: b, variant_id: null, quantity: 1, price: '5.00' })),
              geo_country: country,
            });
            for (const b of bought) {
              for (const w of viewed) if (w !== b) inc(truth.viewedBought, `${store}|${w}|${b}`);
              for (const q of searched) inc(truth.searchedPurchased, `${store}|${q}|${b}`);
            }
          } else {
            e = enrichedEvent({
              event_type: 'collection_view',
              store_id: store,
              session_id: sessionId,
              timestamp: ts,
              collection_handle: 'sale',
              geo_country: country,
            });
          }
          stream.push(e);
          inc(truth.eventsRaw, store);
          inc(truth.sessionEvents, store);
        }
      }
      // duplicates: a client retry shortly after, or much later (after everything else)
      const withDups: EnrichedEvent[] = [];
      for (const e of stream) {
        withDups.push(e);
        const d = rand();
        if (d < 0.06) withDups.push({ ...e });
        else if (d < 0.1) lateDuplicates.push({ key, value: { ...e } });
      }
      for (const e of withDups) events.push({ key, value: e });
    }

    // orders: some edited, some cancelled, some re-sent unchanged
    const finals = new Map<string, Order>();
    const lateOrders: Scenario['orders'] = [];
    for (let i = 0; i < opts.ordersPerStore; i++) {
      const id = `${store}-o${i}`;
      const lines = () =>
        Array.from({ length: 1 + Math.floor(rand() * 4) }, () => ({
          product_id: String(1000 + Math.floor(rand() * 40)),
          variant_id: null,
          quantity: 1 + Math.floor(rand() * 3),
          price: `${1 + Math.floor(rand() * 50)}.${String(Math.floor(rand() * 100)).padStart(2, '0')}`,
        }));
      const created = iso(base + i * 60_000);
      let o = order({ store_id: store, order_id: id, created_at: created, line_items: lines() });
      orders.push({ key: `${store}:${id}`, value: o });
      const r = rand();
      if (r < 0.2) {
        o = { ...o, line_items: lines(), updated_at: iso(base + i * 60_000 + 1000) };
        lateOrders.push({ key: `${store}:${id}`, value: o });
      } else if (r < 0.3) {
        o = { ...o, cancelled: true, updated_at: iso(base + i * 60_000 + 2000) };
        lateOrders.push({ key: `${store}:${id}`, value: o });
      } else if (r < 0.4) {
        lateOrders.push({ key: `${store}:${id}`, value: { ...o } });
      }
      finals.set(id, o);
    }
    orders.push(...lateOrders);
    for (const o of finals.values()) {
      if (o.cancelled) continue;
      const paired: string[] = [];
      const revenue = new Map<string, bigint>();
      for (const li of o.line_items) {
        inc(truth.units, `${store}|${li.product_id}`, li.quantity);
        const [a, b = ''] = li.price.split('.');
        const micros = BigInt(a) * 1_000_000n + BigInt((b + '000000').slice(0, 6));
        revenue.set(li.product_id, (revenue.get(li.product_id) ?? 0n) + micros * BigInt(li.quantity));
        if (!paired.includes(li.product_id)) paired.push(li.product_id);
      }
      for (const [p, m] of revenue) {
        const k = `${store}|${p}`;
        const prev = truth.revenue[k] ? BigInt(truth.revenue[k].replace('.', '')) : 0n;
        const sum = prev + m;
        truth.revenue[k] = `${sum / 1_000_000n}.${(sum % 1_000_000n).toString().padStart(6, '0')}`;
      }
      for (const a of paired) {
        inc(truth.orders, `${store}|${a}`);
        for (const b of paired) inc(truth.coPurchase, `${store}|${a}|${b}`);
      }
    }
  }
  events.push(...lateDuplicates);
  for (const [k, set] of voters) truth.trending[k] = set.size;
  return { events, requests, orders, truth };
}
