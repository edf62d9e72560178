// The `events` processor: storefront.events.v1 → events_raw (and through its materialized views
// product_daily_engagement and trending_search_events_hourly, whose changed cells it publishes on
// `agg:trending`), sessions, co-view / co-cart pairs, searched-then-viewed / -carted / -purchased
// (whose changed queries it publishes on `agg:search`) and viewed-then-bought.
//
// Duplicates by event_id are removed by the runtime before this code runs. Session state lives in Redis
// per (store, session_id) and records the last applied log position; it is saved after the writes and
// before the commit, so a chunk re-read after a crash either finds the state untouched (same rows, same
// dedup token → dropped by ClickHouse) or already advanced (events skipped → the rows of the lost attempt
// were written already).
import { type EnrichedEvent, EnrichedEventSchema } from '../../schemas/events.ts';
import { normalizeOptionalQuery } from '../../schemas/fields.ts';
import type { Decoded, ProcessContext, Processor, ProcessResult } from '../runtime/types.ts';
import { chTime, RowSummer, zodParse } from '../runtime/util.ts';
import { TrendingKeys } from '../trending/notify.ts';
import { LearnedQueries } from './learned-notify.ts';
import { RelatedProducts } from '../related/notify.ts';
import { alreadyApplied, applyEvent, newSession, type SessionState } from './sessions.ts';

/** session state outlives the 30-minute gap comfortably, so a lagging processor still sees it */
const SESSION_STATE_TTL_S = 24 * 60 * 60;

type PairRow = { store_id: string; product_a: string; product_b: string; day: string; sessions: number };
type QueryProductRow = { store_id: string; query: string; product_id: string; day: string; sessions: number };
type SessionRow = {
  store_id: string;
  session_id: string;
  seq: number;
  started_at: string;
  ended_at: string;
  events: number;
  product_views: number;
  add_to_carts: number;
  searches: number;
  country: string;
};

export const eventsProcessor: Processor<EnrichedEvent> = {
  name: 'events',
  topic: 'events',
  tables: {
    written: [
      'events_raw',
      'sessions',
      'co_view_pairs',
      'co_cart_pairs',
      'searched_then_viewed',
      'searched_then_carted',
      'viewed_then_bought',
      'searched_then_purchased',
    ],
    views: [
      { view: 'product_daily_engagement_mv', target: 'product_daily_engagement' },
      { view: 'trending_search_events_hourly_mv', target: 'trending_search_events_hourly' },
    ],
    compare: {
      events_raw: { day: 'ts', measure: 'count()' },
      sessions: { day: 'started_at', measure: 'sum(events)' },
      co_view_pairs: { day: 'day', measure: 'sum(sessions)' },
      co_cart_pairs: { day: 'day', measure: 'sum(sessions)' },
      searched_then_viewed: { day: 'day', measure: 'sum(sessions)' },
      searched_then_carted: { day: 'day', measure: 'sum(sessions)' },
      viewed_then_bought: { day: 'day', measure: 'sum(purchases)' },
      searched_then_purchased: { day: 'day', measure: 'sum(purchases)' },
      product_daily_engagement: { day: 'day', measure: 'sum(views + clicks + add_to_carts + impressions)' },
      trending_search_events_hourly: { day: 'bucket', measure: 'uniqExactMerge(voters)' },
    },
  },
  parse: (value) => zodParse(EnrichedEventSchema, value),
  dedupKey: (e) => `${e.store_id}:${e.event_id}`,
  ledger: { table: 'events_raw', idColumn: 'event_id', timeColumn: 'ts' },
  async process(batch: Decoded<EnrichedEvent>[], ctx: ProcessContext): Promise<ProcessResult> {
    const raw = batch.map((d) => rawRow(d));
    // the trending cells this chunk may feed (its search events'; the view's filter, 0120, decides which
    // count): the read-back publishes only cells that exist, and an unchanged one is harmless
    // (streams/trending/notify.ts)
    const trending = new TrendingKeys();
    for (const r of raw) trending.add(r.event_type, r.store_id, r.geo_country, r.query, r.ts);

    // load the state of every session in the chunk
    const keyOf = (e: EnrichedEvent) => ctx.stateKey('s', e.store_id, e.session_id);
    const keys = [...new Set(batch.map((d) => keyOf(d.value)))];
    const loaded = keys.length ? await ctx.redis.mget(...keys) : [];
    const states = new Map<string, SessionState>();
    keys.forEach((k, i) => {
      const v = loaded[i];
      states.set(k, v ? (JSON.parse(v) as SessionState) : newSession());
    });
    const changed = new Set<string>();

    const coView = new RowSummer<PairRow>(['sessions']);
    const coCart = new RowSummer<PairRow>(['sessions']);
    const sv = new RowSummer<QueryProductRow>(['sessions']);
    const sc = new RowSummer<QueryProductRow>(['sessions']);
    const learned = new LearnedQueries();
    const related = new RelatedProducts();
    const vtb = new RowSummer<{
      store_id: string;
      viewed_id: string;
      bought_id: string;
      day: string;
      purchases: number;
    }>(['purchases']);
    const stp = new RowSummer<{ store_id: string; query: string; product_id: string; day: string; purchases: number }>([
      'purchases',
    ]);
    const sessionRows = new Map<string, SessionRow>();

    for (const d of batch) {
      const pause = ctx.slice();
      if (pause) await pause;
      const e = d.value;
      const key = keyOf(e);
      const s = states.get(key) as SessionState;
      // bots stay in events_raw but feed no behavioural signal
      if (e.is_bot || alreadyApplied(s, d.position.partition, d.position.offset)) continue;
      const store = e.store_id;
      applyEvent(s, e, d.position.partition, d.position.offset, {
        sessions: (r) => {
          const k = `${store}\u0000${e.session_id}\u0000${r.seq}`;
          const prev = sessionRows.get(k);
          const ts = chTime(r.ts);
          if (!prev) {
            sessionRows.set(k, {
              store_id: store,
              session_id: e.session_id,
              seq: r.seq,
              started_at: ts,
              ended_at: ts,
              events: 1,
              product_views: r.views,
              add_to_carts: r.carts,
              searches: r.searches,
              country: r.country,
            });
          } else {
            if (ts < prev.started_at) prev.started_at = ts;
            if (ts > prev.ended_at) prev.ended_at = ts;
            prev.events += 1;
            prev.product_views += r.views;
            prev.add_to_carts += r.carts;
            prev.searches += r.searches;
            if (r.country > prev.country) prev.country = r.country;
          }
        },
        coView: (a, b, day) => {
          coView.add(`${store}|${a}|${b}|${day}`, { store_id: store, product_a: a, product_b: b, day, sessions: 1 });
          related.add(store, a, b);
        },
        coCart: (a, b, day) => {
          coCart.add(`${store}|${a}|${b}|${day}`, { store_id: store, product_a: a, product_b: b, day, sessions: 1 });
          related.add(store, a, b);
        },
        searchedViewed: (q, p, day) => {
          sv.add(`${store}|${q}|${p}|${day}`, { store_id: store, query: q, product_id: p, day, sessions: 1 });
          learned.add(store, q);
        },
        searchedCarted: (q, p, day) => {
          sc.add(`${store}|${q}|${p}|${day}`, { store_id: store, query: q, product_id: p, day, sessions: 1 });
          learned.add(store, q);
        },
        viewedBought: (v, b, day) => {
          vtb.add(`${store}|${v}|${b}|${day}`, { store_id: store, viewed_id: v, bought_id: b, day, purchases: 1 });
          related.add(store, v, b);
        },
        searchedPurchased: (q, p, day) => {
          stp.add(`${store}|${q}|${p}|${day}`, { store_id: store, query: q, product_id: p, day, purchases: 1 });
          learned.add(store, q);
        },
      });
      changed.add(key);
    }

    return {
      writes: [
        { table: 'events_raw', rows: raw },
        { table: 'sessions', rows: [...sessionRows.values()] },
        { table: 'co_view_pairs', rows: coView.values() },
        { table: 'co_cart_pairs', rows: coCart.values() },
        { table: 'searched_then_viewed', rows: sv.values() },
        { table: 'searched_then_carted', rows: sc.values() },
        { table: 'viewed_then_bought', rows: vtb.values() },
        { table: 'searched_then_purchased', rows: stp.values() },
      ],
      afterWrite: async () => {
        if (changed.size) {
          const tx = ctx.redis.multi();
          for (const k of changed) tx.set(k, JSON.stringify(states.get(k)), 'EX', SESSION_STATE_TTL_S);
          await tx.exec();
        }
        await trending.notify(ctx);
        await learned.notify(ctx);
        await related.notify(ctx);
      },
    };
  },
};

/** the events_raw row of an event (every column; also the pipeline bench's full-width baseline) */
export function rawRow(d: Decoded<EnrichedEvent>) {
  const e = d.value;
  return {
    store_id: e.store_id,
    ts: chTime(e.timestamp),
    event_id: e.event_id,
    event_type: e.event_type,
    session_id: e.session_id,
    customer_id: e.customer_id,
    device_id: e.device_id,
    attribution_token: e.attribution_token,
    shopping_channel: e.shopping_channel,
    product_id: e.product_id,
    variant_id: e.variant_id,
    position: e.position,
    block_id: e.block_id,
    query: e.event_type === 'search' ? (normalizeOptionalQuery(e.query) ?? '') : (e.query ?? ''),
    collection_handle: e.collection_handle,
    content_type: e.content_type,
    content_id: e.content_id,
    content_handle: e.content_handle,
    banner_id: e.banner_id,
    rule_id: e.rule_id,
    banner_type: e.banner_type,
    banner_mode: e.banner_mode,
    web_position: e.web_position,
    mobile_position: e.mobile_position,
    quantity: e.quantity,
    price: e.price,
    currency: e.currency,
    order_id: e.order_id,
    total_price: e.total_price,
    line_items_json: JSON.stringify(e.line_items),
    marketing_source: e.marketing_source,
    marketing_medium: e.marketing_medium,
    marketing_campaign: e.marketing_campaign,
    marketing_term: e.marketing_term,
    marketing_content: e.marketing_content,
    contextual_data: JSON.stringify(e.contextual_data ?? {}),
    geo_country: e.geo_country ?? '',
    geo_region: e.geo_region ?? '',
    geo_city: e.geo_city ?? '',
    device_type: e.device_type,
    browser: e.browser ?? '',
    os: e.os ?? '',
    is_bot: e.is_bot ? 1 : 0,
    timestamp_clamped: e.timestamp_clamped ? 1 : 0,
    received_at: chTime(e.received_at),
    _partition: d.position.partition,
    _offset: d.position.offset.toString(),
  };
}
