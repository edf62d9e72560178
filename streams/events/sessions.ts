// Sessionization and the session-scoped pair signals, as a pure state machine over one session's events
// in log order. The `events` processor keeps one SessionState per (store, session_id) in Redis; this
// file decides what each event emits.
//
// - Session: a client session_id inactive for 30 minutes (event time) starts a new session (seq + 1),
//   which forgets everything below.
// - Co-view: a product viewed for the first time in the session pairs with each of the session's 20 most
//   recent distinct viewed products (both directions) and adds 1 to its diagonal (sessions that viewed
//   it). A product seen again while still among the 20 most recent emits nothing, so each pair counts at
//   most once per session for sessions of ≤ 21 distinct products; cost per event is O(20).
// - Co-cart (relaxed co-purchase): the same over add_to_cart events, pairing only carts of the same UTC day.
// - Searched-then-viewed: a product_view/product_click after a search pairs with each of the session's
//   10 most recent queries, once per (query, product) per session (bounded set of 400 emitted keys).
// - Searched-then-carted: an add_to_cart after a search, the same way (its own bounded set).
// - Viewed-then-bought / searched-then-purchased: a `purchase` event pairs each bought product (first 20
//   distinct of the order) with the 20 most recent viewed products (≠ it) and the 10 most recent queries.
import type { EnrichedEvent } from '../../schemas/events.ts';
import { normalizeOptionalQuery } from '../../schemas/fields.ts';
import { touchRecent, utcDay } from '../runtime/util.ts';

export const SESSION_GAP_MS = 30 * 60 * 1000;
export const PAIR_WINDOW = 20;
export const QUERY_WINDOW = 10;
export const EMITTED_SV_MAX = 400;

export interface SessionState {
  /** partition and offset of the last event applied (replay idempotence) */
  p: number;
  o: string;
  seq: number;
  /** first and last event time of the current session, ms */
  first: number;
  last: number;
  views: string[];
  carts: { id: string; day: string }[];
  queries: string[];
  sv: string[];
  /** searched-then-carted keys emitted this session (absent in states saved before it existed) */
  sc?: string[];
}

export interface SessionOutputs {
  sessions: (sessionRow: {
    seq: number;
    ts: string;
    views: number;
    carts: number;
    searches: number;
    country: string;
  }) => void;
  coView: (a: string, b: string, day: string) => void;
  coCart: (a: string, b: string, day: string) => void;
  searchedViewed: (query: string, product: string, day: string) => void;
  searchedCarted: (query: string, product: string, day: string) => void;
  viewedBought: (viewed: string, bought: string, day: string) => void;
  searchedPurchased: (query: string, product: string, day: string) => void;
}

export function newSession(): SessionState {
  return { p: -1, o: '-1', seq: 0, first: 0, last: 0, views: [], carts: [], queries: [], sv: [], sc: [] };
}

/** Was the event at (partition, offset) already applied to this state? */
export function alreadyApplied(s: SessionState, partition: number, offset: bigint): boolean {
  return s.p === partition && BigInt(s.o) >= offset;
}

/** emit (query, product) for each recent query, once per session (the bounded set of emitted keys) */
function emitOnce(emitted: string[], queries: readonly string[], pid: string, emit: (q: string) => void): void {
  for (const q of queries) {
    const k = `${q}\u0000${pid}`;
    if (emitted.includes(k)) continue;
    emit(q);
    emitted.push(k);
    if (emitted.length > EMITTED_SV_MAX) emitted.splice(0, emitted.length - EMITTED_SV_MAX);
  }
}

export function applyEvent(
  s: SessionState,
  e: EnrichedEvent,
  partition: number,
  offset: bigint,
  out: SessionOutputs,
): void {
  const t = Date.parse(e.timestamp);
  if (s.seq === 0 || t - s.last > SESSION_GAP_MS) {
    s.seq = s.seq + 1;
    s.first = t;
    s.last = t;
    s.views = [];
    s.carts = [];
    s.queries = [];
    s.sv = [];
    s.sc = [];
  }
  s.first = Math.min(s.first, t);
  s.last = Math.max(s.last, t);
  s.p = partition;
  s.o = offset.toString();
  const day = utcDay(e.timestamp);
  let views = 0;
  let carts = 0;
  let searches = 0;
  const pid = e.product_id;

  switch (e.event_type) {
    case 'product_view':
    case 'product_click': {
      if (!pid) break;
      if (e.event_type === 'product_view') {
        views = 1;
        const prior = s.views.filter((v) => v !== pid);
        if (touchRecent(s.views, pid, PAIR_WINDOW)) {
          out.coView(pid, pid, day);
          for (const q of prior.slice(-PAIR_WINDOW)) {
            out.coView(pid, q, day);
            out.coView(q, pid, day);
          }
        }
      }
      emitOnce(s.sv, s.queries, pid, (q) => out.searchedViewed(q, pid, day));
      break;
    }
    case 'add_to_cart': {
      if (!pid) break;
      carts = 1;
      s.sc ??= [];
      emitOnce(s.sc, s.queries, pid, (q) => out.searchedCarted(q, pid, day));
      const same = s.carts.filter((c) => c.day === day && c.id !== pid);
      if (touchRecent(s.carts, { id: pid, day }, PAIR_WINDOW, (a, b) => a.id === b.id && a.day === b.day)) {
        out.coCart(pid, pid, day);
        for (const c of same) {
          out.coCart(pid, c.id, day);
          out.coCart(c.id, pid, day);
        }
      }
      break;
    }
    case 'search': {
      const q = normalizeOptionalQuery(e.query);
      searches = 1;
      if (q) touchRecent(s.queries, q, QUERY_WINDOW);
      break;
    }
    case 'purchase': {
      const bought: string[] = [];
      for (const li of e.line_items) {
        if (!bought.includes(li.product_id)) bought.push(li.product_id);
        if (bought.length >= PAIR_WINDOW) break;
      }
      for (const b of bought) {
        for (const v of s.views) if (v !== b) out.viewedBought(v, b, day);
        for (const q of s.queries) out.searchedPurchased(q, b, day);
      }
      break;
    }
    default:
      break;
  }
  out.sessions({ seq: s.seq, ts: e.timestamp, views, carts, searches, country: e.geo_country ?? '' });
}
