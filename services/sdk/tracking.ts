// The tracking script: session and device ids, the shopper's context (products viewed, prior searches),
// and engagement events to POST /beacon — batched, persisted until acknowledged, flushed when the page
// is hidden. Event shapes are derived from schemas/events.ts (EVENT_SCHEMAS). Runs in browsers (local
// storage, cookies, sendBeacon, page lifecycle) and in Node (in-memory storage, fetch).
import type { z } from 'zod';
import type { EVENT_SCHEMAS, EventType } from '../../schemas/events.ts';
import type { Context, Identity, TrackerLink } from './client.ts';
import { ulid } from './ulid.ts';

type Common =
  | 'event_type'
  | 'event_id'
  | 'timestamp'
  | 'session_id'
  | 'device_id'
  | 'customer_id'
  | 'shopping_channel'
  | `marketing_${string}`;
type Out<T extends EventType> = z.output<(typeof EVENT_SCHEMAS)[T]>;
/**
 * The type-specific fields of an event, from the beacon's schema (its normalized output: ids are strings
 * there, and numbers are accepted as sent). Every field is optional here; the beacon names a missing one.
 */
export type EventFields<T extends EventType> = {
  [K in Exclude<keyof Out<T>, Common>]?: Out<T>[K] | (Out<T>[K] extends string | null ? number : never);
};
/** an event as the beacon receives it */
export type BeaconEvent = { event_id: string; event_type: EventType; timestamp: number; session_id: string } & Record<
  string,
  unknown
>;

export interface Storage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

export interface TrackerOptions {
  token: string;
  /** the app's origin; events go to `<baseUrl>/beacon` */
  baseUrl: string;
  fetch?: typeof fetch;
  /** default: localStorage in a browser, memory elsewhere */
  storage?: Storage;
  /** cookies whose value, when present, is the session id (a platform's own session), first wins */
  sessionCookies?: string[];
  /** inactivity window of a generated session, default 30 minutes */
  sessionTimeoutMs?: number;
  /** delay before a partial batch is sent, default 1000 ms */
  flushDelayMs?: number;
  customerId?: string;
  /** the landing URL (default: location.href in a browser): utm_products and utm_* are read from it */
  landingUrl?: string;
}

/** the browser globals the tracker uses, typed here (the repository's TypeScript has no DOM library) */
interface BrowserGlobals {
  document?: {
    cookie: string;
    visibilityState: string;
    addEventListener(type: string, fn: () => void): void;
  };
  location?: { href: string };
  history?: { pushState(...args: unknown[]): void; replaceState(...args: unknown[]): void };
  localStorage?: Storage;
  navigator?: { onLine?: boolean; sendBeacon?(url: string, body: string): boolean };
  addEventListener?(type: string, fn: () => void): void;
}
const g = globalThis as unknown as BrowserGlobals;

const PREFIX = 'sfsdk:';
const MAX_VIEWED = 20;
const MAX_SEARCHES = 10;
const MAX_QUEUE = 1000;
const BATCH = 100;
const UTM = ['source', 'medium', 'campaign', 'term', 'content'] as const;

interface Session {
  id: string;
  last: number;
  /** platform cookie, not expired by us */
  cookie?: boolean;
}

function memoryStorage(): Storage {
  const m = new Map<string, string>();
  return { getItem: (k) => m.get(k) ?? null, setItem: (k, v) => void m.set(k, v) };
}

function readCookie(name: string): string | undefined {
  if (!g.document) return undefined;
  for (const part of g.document.cookie.split(';')) {
    const i = part.indexOf('=');
    if (part.slice(0, i).trim() === name) return decodeURIComponent(part.slice(i + 1).trim()) || undefined;
  }
  return undefined;
}

export function createTracker(opts: TrackerOptions) {
  const doc = g.document;
  const browser = doc !== undefined && g.addEventListener !== undefined;
  const store: Storage = opts.storage ?? g.localStorage ?? memoryStorage();
  const doFetch = opts.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a));
  const intake = `${opts.baseUrl.replace(/\/+$/, '')}/beacon`;
  const timeout = opts.sessionTimeoutMs ?? 30 * 60 * 1000;
  const cookies = opts.sessionCookies ?? ['_shopify_s', 'sf_session'];

  const get = <T>(k: string, d: T): T => {
    try {
      const v = store.getItem(PREFIX + k);
      return v === null ? d : (JSON.parse(v) as T);
    } catch {
      return d;
    }
  };
  const put = (k: string, v: unknown) => {
    try {
      store.setItem(PREFIX + k, JSON.stringify(v));
    } catch {
      // storage full or denied: the in-memory state still serves this page
    }
  };

  let deviceId = get<string>('device', '');
  if (!deviceId) put('device', (deviceId = ulid()));

  /** the session id: a platform cookie when present, else ours, renewed after `timeout` without activity */
  function session(now = Date.now()): string {
    for (const name of cookies) {
      const v = readCookie(name);
      if (v) {
        put('session', { id: v, last: now, cookie: true } satisfies Session);
        return v;
      }
    }
    const s = get<Session | null>('session', null);
    const id = s && !s.cookie && now - s.last < timeout ? s.id : ulid(now);
    if (id !== s?.id) {
      // a new session starts without the previous one's attribution and landing parameters
      put('attribution', null);
    }
    put('session', { id, last: now } satisfies Session);
    return id;
  }

  // landing parameters: utm_products → dynamicLinking on browse (this page view); utm_* → marketing fields
  const landing = opts.landingUrl ?? g.location?.href;
  let linked: string[] | undefined;
  let sessionId = session();
  if (landing) {
    const params = new URL(landing, 'http://x').searchParams;
    // handles joined by underscores (utm_products=a_b_c; handles have hyphens, never underscores); commas too
    const products = params.get('utm_products');
    if (products)
      linked = products
        .split(/[_,]/)
        .map((s) => s.trim())
        .filter(Boolean)
        .slice(0, 50);
    if (UTM.some((k) => params.has(`utm_${k}`)))
      put('marketing', Object.fromEntries(UTM.map((k) => [`marketing_${k}`, params.get(`utm_${k}`) ?? null])));
  }

  let queue = get<BeaconEvent[]>('queue', []);
  const inflight = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let backoff = 0;
  const listeners = new Set<(e: { sent: number; status: number }) => void>();

  const saveQueue = () => put('queue', queue);

  function schedule(delay = opts.flushDelayMs ?? 1000) {
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      void flush();
    }, delay);
    // in Node a pending flush does not keep the process alive (call flush() before exiting)
    (timer as { unref?: () => void }).unref?.();
  }

  /** sends what is queued (batches of 100) with fetch(keepalive); kept for later on a network failure */
  async function flush(): Promise<void> {
    if (g.navigator?.onLine === false) return;
    const batch = queue.filter((e) => !inflight.has(e.event_id)).slice(0, BATCH);
    if (!batch.length) return;
    for (const e of batch) inflight.add(e.event_id);
    let status = 0;
    try {
      const res = await doFetch(intake, {
        method: 'POST',
        keepalive: true,
        headers: { 'content-type': 'application/json', 'x-storefront-access-token': opts.token },
        body: JSON.stringify({ events: batch }),
      });
      status = res.status;
    } catch {
      status = 0;
    }
    for (const e of batch) inflight.delete(e.event_id);
    // 201: stored (duplicates of earlier sends included); another 4xx will not pass on a retry either
    const done = status === 201 || (status >= 400 && status < 500 && status !== 408 && status !== 429);
    if (done) {
      const ids = new Set(batch.map((e) => e.event_id));
      queue = get<BeaconEvent[]>('queue', queue).filter((e) => !ids.has(e.event_id));
      saveQueue();
      backoff = 0;
      for (const l of listeners) l({ sent: batch.length, status });
      if (queue.length) schedule(0);
    } else {
      backoff = Math.min(30_000, backoff ? backoff * 2 : 1000);
      schedule(backoff);
    }
  }

  /**
   * The page is going away: everything queued goes out with sendBeacon (token in the query string). The
   * events stay queued until a later page's fetch sees them acknowledged: a beacon that never arrived is
   * sent again, one that did is answered as a duplicate (same event_id) and not counted twice.
   */
  function flushOnHide() {
    if (!queue.length) return;
    saveQueue();
    const nav = g.navigator;
    const send = nav?.sendBeacon ? nav.sendBeacon.bind(nav) : undefined;
    for (let i = 0; i < queue.length; i += BATCH) {
      const body = JSON.stringify({ events: queue.slice(i, i + BATCH) });
      if (send) send(`${intake}?token=${encodeURIComponent(opts.token)}`, body);
      else void flush();
    }
  }

  if (browser && g.addEventListener) {
    g.addEventListener('pagehide', flushOnHide);
    doc.addEventListener('visibilitychange', () => {
      if (doc.visibilityState === 'hidden') flushOnHide();
    });
    g.addEventListener('online', () => void flush());
    g.addEventListener('popstate', () => routeChange());
    // a single-page storefront's navigations: history.pushState / replaceState are route changes too
    const history = g.history;
    if (history)
      for (const name of ['pushState', 'replaceState'] as const) {
        const original = history[name];
        if (typeof original !== 'function') continue;
        history[name] = function (this: unknown, ...args: unknown[]) {
          const out = original.apply(this, args);
          routeChange();
          return out;
        };
      }
  }
  if (queue.length) schedule(0);

  /** a route change in a single-page storefront (popstate, pushState, replaceState are hooked; a router
   * that changes routes otherwise calls it): the session's inactivity window is refreshed */
  function routeChange() {
    sessionId = session();
  }

  function track<T extends EventType>(type: T, fields: EventFields<T> = {}): BeaconEvent {
    const now = Date.now();
    sessionId = session(now);
    const attribution = get<string | null>('attribution', null);
    const event: BeaconEvent = {
      event_id: ulid(now),
      event_type: type,
      timestamp: now,
      session_id: sessionId,
      device_id: deviceId,
      ...(opts.customerId ? { customer_id: opts.customerId } : {}),
      ...(attribution ? { attribution_token: attribution } : {}),
      ...get<Record<string, string | null>>('marketing', {}),
      ...fields,
    };
    queue.push(event);
    if (queue.length > MAX_QUEUE) queue = queue.slice(-MAX_QUEUE);
    saveQueue();
    if (queue.length - inflight.size >= BATCH) void flush();
    else schedule();
    return event;
  }

  const tracker = {
    /** the session id now (refreshing the inactivity window) */
    get sessionId() {
      return sessionId;
    },
    deviceId,
    track,
    flush,
    flushOnHide,
    routeChange,
    /** events not yet acknowledged by the beacon */
    pending: () => queue.length,
    onSent(fn: (e: { sent: number; status: number }) => void) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    /** product_view, and the product joins productsViewed (20 most recent) */
    productView(productId: number, fields: EventFields<'product_view'> = {}) {
      const viewed = get<{ productId: number; at: number }[]>('viewed', []).filter((v) => v.productId !== productId);
      viewed.unshift({ productId, at: Date.now() });
      put('viewed', viewed.slice(0, MAX_VIEWED));
      return track('product_view', { product_id: productId, ...fields } as EventFields<'product_view'>);
    },
    /** a search event, and the query joins priorSearches */
    search(query: string, source: 'typed' | 'autocomplete', results?: number) {
      noteSearch(query, { hasResults: (results ?? 0) > 0 });
      return track('search', { query, contextual_data: { search_source: source, results } } as EventFields<'search'>);
    },
    /** a click on a result: product_click (and the last prior search had a click) */
    productClick(productId: number, position: number, fields: EventFields<'product_click'> = {}) {
      if (fields.query) noteSearch(String(fields.query), { hadClick: true });
      return track('product_click', { product_id: productId, position, ...fields } as EventFields<'product_click'>);
    },

    // --- TrackerLink: what a client (createClient({ tracker })) reads and reports -------------------------
    identity(): Identity {
      return { sessionId, deviceId, ...(opts.customerId ? { customerId: opts.customerId } : {}) };
    },
    context(): Context {
      const viewed = get<{ productId: number; at: number }[]>('viewed', []);
      const searches = get<{ searchQuery: string; hasResults?: boolean; hadClick?: boolean }[]>('searches', []);
      const c: Context = {};
      if (viewed.length) c.productsViewed = viewed;
      if (searches.length) c.priorSearches = searches;
      return c;
    },
    attributed(token: string, _source?: { kind: string; query?: string; results?: number }) {
      put('attribution', token);
    },
    /** the attribution token the next events carry */
    get attributionToken() {
      return get<string | null>('attribution', null);
    },
    dynamicLinking: () => linked,
  } satisfies TrackerLink & Record<string, unknown>;

  function noteSearch(searchQuery: string, patch: { hasResults?: boolean; hadClick?: boolean }) {
    const list = get<{ searchQuery: string; hasResults?: boolean; hadClick?: boolean }[]>('searches', []);
    const prev = list.find((s) => s.searchQuery === searchQuery);
    const next = { ...prev, searchQuery, ...patch };
    put('searches', [next, ...list.filter((s) => s !== prev)].slice(0, MAX_SEARCHES));
  }

  return tracker;
}

export type Tracker = ReturnType<typeof createTracker>;
