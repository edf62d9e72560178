// The demo store loader: creates the demo store through the store-config writer, writes its
// configuration and catalog, then replays the simulated shopper sessions through the running app —
// POST /beacon for the engagement events, the storefront read API for autocomplete and searches (so the
// API emits its request events), and the orders to commerce.orders.v1 — so events flow and the
// aggregates fill the way they would for a real store.
//
// Every phase is idempotent and its progress is persisted in DATA_DIR/demo-store.json (mode 0600, with
// the store's access token): configuration and catalog records are keyed and compacted, events carry
// deterministic event ids that the beacon deduplicates, orders are re-sent with the same id. A start
// that finds the file reuses the store and the SAME token and resumes where the last run stopped.
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { Logger } from '../../common/logger.ts';
import type { ConfigWriter } from '../../store-config/writer.ts';
import type { ImportLine, TopicCatalogSink } from './catalog-sink.ts';
import { beaconEvent } from './events.ts';
import { type DemoStore, orderInput, type SimSession } from './generator.ts';

export const DEMO_STORE_NAME = 'Demo Store';
export const DEMO_STATE_FILE = 'demo-store.json';

// ------------------------------------------------------------------------------------------------
// state

export const DemoStateSchema = z.object({
  version: z.literal(1),
  storeId: z.string().min(1),
  token: z.string().min(1),
  tokenId: z.string().min(1),
  createdAt: z.string(),
  /** generator inputs: the same inputs regenerate the same store */
  seed: z.string(),
  products: z.number().int(),
  imageBaseUrl: z.string(),
  sessions: z.number().int(),
  anchorMs: z.number().int(),
  progress: z.object({
    config: z.boolean().default(false),
    catalog: z.boolean().default(false),
    /** catalog import lines [0, catalogLines) are acknowledged by Kafka */
    catalogLines: z.number().int().min(0).default(0),
    /** when the session replay started (session times are relative to it); null = not started */
    replayStartMs: z.number().int().nullable().default(null),
    /** sessions [0, replayed) are fully delivered */
    replayed: z.number().int().min(0).default(0),
    done: z.boolean().default(false),
  }),
});
export type DemoState = z.infer<typeof DemoStateSchema>;

export function demoStatePath(dataDir: string): string {
  return path.join(dataDir, DEMO_STATE_FILE);
}

/** The saved demo state, or undefined when there is none (a malformed file is an error, never overwritten silently). */
export async function readDemoState(dataDir: string): Promise<DemoState | undefined> {
  let text: string;
  try {
    text = await readFile(demoStatePath(dataDir), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const parsed = DemoStateSchema.safeParse(JSON.parse(text));
  if (!parsed.success)
    throw new Error(`${demoStatePath(dataDir)} is not a demo state file: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

let writes: Promise<void> = Promise.resolve();
let writeSeq = 0;

/**
 * Write the state atomically (temp file + rename), readable by the owner only (it holds a token).
 * Writes of one thread are serialized, so the file always holds the latest complete state.
 */
export function writeDemoState(dataDir: string, state: DemoState): Promise<void> {
  const text = `${JSON.stringify(state, null, 2)}\n`; // the state as of the call
  const next = writes.then(async () => {
    await mkdir(dataDir, { recursive: true });
    const file = demoStatePath(dataDir);
    const tmp = `${file}.${process.pid}.${++writeSeq}.tmp`;
    await writeFile(tmp, text, { mode: 0o600 });
    await chmod(tmp, 0o600);
    await rename(tmp, file);
  });
  writes = next.catch(() => undefined);
  return next;
}

// ------------------------------------------------------------------------------------------------
// phases

/** Markets, store settings, sort orders, blocks, redirects, synonyms and the B2B location/customer. */
export async function applyDemoConfig(writer: ConfigWriter, storeId: string, store: DemoStore): Promise<number> {
  let n = 0;
  for (const m of store.markets) {
    await writer.putConfig(storeId, 'market', m);
    n++;
  }
  await writer.updateStore(storeId, {
    primary_market: 'us',
    market_mode: 'pricing_only',
    autocomplete_mode: 'per_region',
  });
  for (const kind of ['sort_order', 'block', 'redirect_term', 'synonym', 'merch_rule', 'variant_breakout'] as const) {
    // blocks are listed with the fallback targets first, so references always resolve
    for (const item of store.config[kind]) {
      await writer.putConfig(storeId, kind, item);
      n++;
    }
  }
  await writer.putConfig(storeId, 'b2b_company_location', store.b2b.companyLocation);
  await writer.putConfig(storeId, 'b2b_customer', store.b2b.customer);
  return n + 3;
}

/**
 * Every catalog import line of the store, products (with their prices) first. The swatch metaobjects come
 * last (products reference them by GID, which needs no order), so a load resumed from a state written
 * before they existed still reaches them.
 */
export function* catalogLines(store: DemoStore): Generator<ImportLine> {
  for (const p of store.products()) {
    yield { type: 'product', ...p };
    for (const price of store.pricesOf(p)) yield { type: 'price', ...price };
  }
  for (const c of store.collections) yield { type: 'collection', ...c };
  for (const a of store.articles) yield { type: 'article', ...a };
  for (const p of store.pages) yield { type: 'page', ...p };
  yield { type: 'b2b_catalog', ...store.b2b.catalog };
  // an import line's `type` names the line: the metaobject's own type travels as metaobject_type
  for (const m of store.metaobjects) yield { ...m, type: 'metaobject', metaobject_type: m.type };
}

export async function loadCatalog(
  sink: TopicCatalogSink,
  storeId: string,
  store: DemoStore,
  opts: {
    batch?: number;
    concurrency?: number;
    /** lines already written by an earlier run (skipped) */
    skip?: number;
    signal?: AbortSignal;
    /** the number of lines from the start that Kafka acknowledged (contiguous), after each batch */
    onProgress?: (committed: number) => void | Promise<void>;
  } = {},
): Promise<number> {
  const size = opts.batch ?? 1_000;
  const concurrency = Math.max(1, opts.concurrency ?? 1);
  const skip = Math.max(0, opts.skip ?? 0);
  // up to `concurrency` batches in flight (different keys: the writer serializes only same-key records);
  // progress is the contiguous prefix of acknowledged batches, so a restart may skip exactly that much
  const inflight = new Set<Promise<void>>();
  const acked = new Map<number, number>(); // batch start line → end line
  let committed = skip;
  let failure: unknown;
  const submit = async (start: number, batch: ImportLine[]) => {
    while (inflight.size >= concurrency) await Promise.race(inflight);
    if (failure) throw failure;
    opts.signal?.throwIfAborted();
    const p: Promise<void> = sink.write(storeId, batch).then(
      async () => {
        acked.set(start, start + batch.length);
        let moved = false;
        while (acked.has(committed)) {
          const end = acked.get(committed) as number;
          acked.delete(committed);
          committed = end;
          moved = true;
        }
        if (moved) await opts.onProgress?.(committed);
      },
      (err) => {
        failure ??= err;
      },
    );
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  };
  let batch: ImportLine[] = [];
  let line = 0;
  let batchStart = skip;
  try {
    for (const l of catalogLines(store)) {
      if (line++ < skip) continue;
      batch.push(l);
      if (batch.length >= size) {
        await submit(batchStart, batch);
        batchStart += batch.length;
        batch = [];
      }
    }
    if (batch.length) await submit(batchStart, batch);
  } finally {
    // stopped (aborted) or failed: let the batches in flight finish before the caller closes the sink,
    // whose producer would otherwise be disconnected under them (kafkajs logs that as an error)
    await Promise.allSettled(inflight);
  }
  if (failure) throw failure;
  return committed;
}

// ------------------------------------------------------------------------------------------------
// session replay

export interface ReplayOptions {
  /** the app, e.g. http://127.0.0.1:3000 */
  baseUrl: string;
  token: string;
  storeId: string;
  store: DemoStore;
  sink: TopicCatalogSink;
  replayStartMs: number;
  from: number;
  concurrency: number;
  signal?: AbortSignal;
  logger: Logger;
  /** called with the number of sessions fully delivered from the start (contiguous), now and then */
  onProgress?: (replayed: number) => Promise<void> | void;
}

export interface ReplayStats {
  sessions: number;
  events: number;
  duplicates: number;
  rejected: number;
  searches: number;
  autocompletes: number;
  orders: number;
  /** read-API endpoints that answered 404 (not served by this build) */
  unavailable: number;
  /** read-API calls that answered another error (reported in the log, not fatal) */
  readErrors: number;
}

class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });

/** fetch with retries on 429/503 (Retry-After) and connection errors; other statuses are returned */
async function call(url: string, init: RequestInit, signal?: AbortSignal): Promise<Response> {
  let delay = 200;
  for (let attempt = 0; ; attempt++) {
    signal?.throwIfAborted();
    try {
      const res = await fetch(url, { ...init, signal });
      if ((res.status === 429 || res.status === 503) && attempt < 30) {
        const ra = Number(res.headers.get('retry-after'));
        await res.arrayBuffer();
        await sleep(Number.isFinite(ra) && ra > 0 ? Math.min(ra * 1000, 10_000) : delay, signal);
        delay = Math.min(delay * 2, 5_000);
        continue;
      }
      return res;
    } catch (err) {
      if (signal?.aborted || attempt >= 10) throw err;
      await sleep(delay, signal);
      delay = Math.min(delay * 2, 5_000);
    }
  }
}

export async function replaySessions(o: ReplayOptions): Promise<ReplayStats> {
  const stats: ReplayStats = {
    sessions: 0,
    events: 0,
    duplicates: 0,
    rejected: 0,
    searches: 0,
    autocompletes: 0,
    orders: 0,
    unavailable: 0,
    readErrors: 0,
  };
  const api = `${o.baseUrl}/api/storefront/v1`;
  const unavailable = new Set<string>();
  const reported = new Set<string>();
  const marketIds = new Map(o.store.markets.map((m) => [m.code, m.market_id ?? m.code]));

  const headersFor = (s: SimSession) => ({
    'x-storefront-access-token': o.token,
    'x-forwarded-for': s.ip,
    'user-agent': s.userAgent,
    accept: 'application/json',
  });
  const readApi = async (kind: string, url: string, init: RequestInit): Promise<Record<string, unknown> | null> => {
    if (unavailable.has(kind)) return null;
    const res = await call(url, init, o.signal);
    const text = await res.text();
    if (res.status === 404 && !text.includes('"results"')) {
      // the route is not served by this build (yet): note it once and stop calling it
      if (!unavailable.has(kind)) {
        unavailable.add(kind);
        stats.unavailable++;
        o.logger.info(
          { kind, status: res.status },
          'demo replay: read-API endpoint not available; replaying events only',
        );
      }
      return null;
    }
    if (!res.ok) {
      // the read calls make the traffic realistic (request events, attribution); the events are what
      // must land, so an answer the replay did not expect is reported once per kind and status, not fatal
      const key = `${kind}:${res.status}`;
      if (!reported.has(key)) {
        reported.add(key);
        o.logger.warn(
          { kind, status: res.status, body: text.slice(0, 300) },
          'demo replay: unexpected read-API answer; continuing',
        );
      }
      stats.readErrors++;
      return null;
    }
    try {
      return { ...(JSON.parse(text) as Record<string, unknown>), __requestId: res.headers.get('x-request-id') };
    } catch {
      return {};
    }
  };

  const replayOne = async (s: SimSession) => {
    const headers = headersFor(s);
    const events: unknown[] = [];
    const orders: ImportLine[] = [];
    let attribution: string | null = null;
    const identity = {
      sessionId: s.sessionId,
      deviceId: s.deviceId,
      ...(s.customerId ? { customerId: s.customerId } : {}),
    };
    for (const step of s.steps) {
      if (step.type === 'autocomplete') {
        stats.autocompletes++;
        await readApi('autocomplete', `${api}/search/complete?query=${encodeURIComponent(step.typed)}`, { headers });
      } else if (step.type === 'search') {
        stats.searches++;
        const r = await readApi('search', `${api}/search/${encodeURIComponent(step.query)}/execute`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({
            identity,
            context: { market: marketIds.get(s.market) },
            pagination: { page: 1, limit: 24 },
          }),
        });
        attribution = r ? String(r.attributionToken ?? r.__requestId ?? '') || null : null;
      } else if (step.type === 'collection_view' || step.type === 'content_view') {
        attribution = null;
      } else if (step.type === 'purchase') {
        orders.push({ type: 'order', ...orderInput(s, step, o.replayStartMs) });
      }
      const attributed = step.type === 'product_click' || step.type === 'product_view' || step.type === 'add_to_cart';
      events.push(beaconEvent(s, step, o.replayStartMs, attributed ? attribution : null));
    }
    if (orders.length) {
      await o.sink.write(o.storeId, orders);
      stats.orders += orders.length;
    }
    // one beacon batch per session (≤ 100 events): answered 201 only after Kafka acknowledged it
    for (let i = 0; i < events.length; i += 100) {
      const res = await call(
        `${o.baseUrl}/beacon`,
        {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ events: events.slice(i, i + 100) }),
        },
        o.signal,
      );
      const body = (await res.json().catch(() => ({}))) as {
        accepted?: number;
        duplicates?: number;
        rejected?: number;
        rejections?: unknown[];
      };
      if (res.status !== 201 && res.status !== 200 && res.status !== 202)
        throw new HttpError(res.status, `beacon answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      stats.events += body.accepted ?? 0;
      stats.duplicates += body.duplicates ?? 0;
      stats.rejected += body.rejected ?? 0;
      if (body.rejected)
        o.logger.warn(
          { session: s.index, rejections: body.rejections },
          'demo replay: beacon rejected generated events',
        );
    }
    stats.sessions++;
  };

  // a small worker pool; progress = the contiguous prefix of finished sessions (what a restart may skip)
  let next = o.from;
  let contiguous = o.from;
  const finished = new Set<number>();
  let lastReport = Date.now();
  let failed = false;
  const worker = async () => {
    while (next < o.store.sessionCount && !failed) {
      o.signal?.throwIfAborted();
      const i = next++;
      try {
        await replayOne(o.store.session(i));
      } catch (err) {
        failed = true; // the other workers stop too; a restart resumes at the contiguous prefix
        throw err;
      }
      finished.add(i);
      while (finished.has(contiguous)) finished.delete(contiguous++);
      if (Date.now() - lastReport > 2_000 || contiguous === o.store.sessionCount) {
        lastReport = Date.now();
        await o.onProgress?.(contiguous);
      }
    }
  };
  // every worker ends before this returns or throws: the caller closes the sink (its producer) afterwards
  const ended = await Promise.allSettled(Array.from({ length: Math.max(1, o.concurrency) }, () => worker()));
  const stopped = ended.find((r) => r.status === 'rejected');
  if (stopped) throw stopped.reason;
  await o.onProgress?.(contiguous);
  return stats;
}
