// The storefront API frame: everything every endpoint under /api/storefront/v1 shares.
//
//   request id  a ULID on every request (the host's id when it already is one, as in the app; else the
//               frame's own), so the frame is correct when mounted alone
//   onRequest   `x-request-id` (= the request event's `request_id`) and `x-service-build` first, so
//               every response the frame produces carries them, errors included; then
//               token → store (StoreDirectory, constant-time hash compare): 401 missing/invalid, 402
//               suspended; then the per-store / per-IP rate limit (429 + Retry-After)
//   validation  the route's declared zod schemas (querystring, params, body; plugin.ts), a 422 with field
//               paths through the error handler below
//   preHandler  `identity` and `context` (from a JSON body; GET endpoints have none) validated (422 with
//               field paths; by the route's body schema when it declares one) and normalized once into
//               `req.storefront.context` (403 for B2B scope without a customer of the location's company)
//   onResponse  one request event per request through the emitter (never delays the response)
//   errors      one error handler renders every refusal (the frame's own, raised as StorefrontError
//               through the hooks' `done`; the routes' schema validation; what handlers throw; Fastify's
//               parser errors) as one JSON body: { error: { code, message, fields: [{ path, message }] } }
//
// Endpoints declare `config: { kind }` (the request event kind, schemas/requests.ts) or
// `config: { public: true }` (no token: the OpenAPI document), and fill `req.storefront.event` with what
// the event should carry (query, result ids and counts, …).
import { hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { BlockList } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { newUlid } from '../common/ids.ts';
import { ULID_RE } from '../../schemas/fields.ts';
import { type RequestEvent, type RequestKind, requestEvent } from '../../schemas/requests.ts';
import { type ContextInput, ContextSchema, type IdentityInput, IdentitySchema } from '../../schemas/storefront.ts';
import { clientIp, type DeviceType, deviceTypeFromUserAgent, geoFromIp, normalizeIp } from '../common/enrich.ts';
import type { Logger } from '../common/logger.ts';
import { counter, histogram } from '../common/metrics.ts';
import type { AuthResult, StoreDirectory, StoreRecord } from '../store-config/api.ts';
import { contextForEvent, normalizeContext, type RequestContext } from './context.ts';
import { errorBody, fromFastifyError, sendError, StorefrontError, validationError } from './errors.ts';
import type { RateLimiter, RateLimitResult } from './rate-limit.ts';
import type { StorefrontStoreView, StoreViews } from './store-view.ts';

export interface StorefrontRequestState {
  store: StoreRecord;
  view: StorefrontStoreView;
  clientIp: string | null;
  deviceType: DeviceType;
  /** identity + context, normalized; set before the handler runs */
  context: RequestContext;
  /** request-event fields the handler contributes (query, results, …) */
  event: Partial<RequestEvent>;
  /** no request event for this request (merchandising previews) */
  noEvent?: boolean;
  /** no `identity` and no `context` were sent: the context is the store's default for the signals */
  bodyless: boolean;
  /** the preHandler ran (false when the route's schema validation refused the request before it) */
  preHandled: boolean;
  receivedAt: number;
  startedNs: bigint;
}

declare module 'fastify' {
  interface FastifyRequest {
    storefront: StorefrontRequestState | null;
  }
  interface FastifyContextConfig {
    /** the request event kind of this endpoint; omitted = no request event */
    kind?: RequestKind;
    /** no token needed (documentation) */
    public?: boolean;
  }
}

export interface FrameOptions {
  directory: StoreDirectory;
  views: StoreViews;
  rateLimiter: RateLimiter;
  trustedProxies: BlockList;
  bodyLimit: number;
  logger: Logger;
  /** the serving build, sent as `x-service-build` on every response */
  build: string;
  /** the request-event emitter's emit (never throws, never waits) */
  emit?: (event: RequestEvent) => void;
}

/** country headers set by CDN edges; believed only when the direct peer is a trusted proxy */
const EDGE_COUNTRY_HEADERS = ['cf-ipcountry', 'cloudfront-viewer-country', 'x-vercel-ip-country', 'x-country-code'];

function detectCountry(req: FastifyRequest, ip: string | null, trusted: BlockList): string | null {
  const peer = normalizeIp(req.socket.remoteAddress);
  if (peer && trusted.check(peer, peer.includes(':') ? 'ipv6' : 'ipv4')) {
    for (const h of EDGE_COUNTRY_HEADERS) {
      const v = req.headers[h];
      if (typeof v === 'string' && /^[A-Za-z]{2}$/.test(v.trim()) && v.trim().toUpperCase() !== 'XX')
        return v.trim().toUpperCase();
    }
  }
  return ip ? geoFromIp(ip).country : null;
}

function header(req: FastifyRequest, name: string): string | null {
  const v = req.headers[name];
  return typeof v === 'string' ? v : Array.isArray(v) ? (v[0] ?? null) : null;
}

const requestSeconds = histogram('storefront_request_duration_seconds', 'Storefront API requests by route and status', [
  'route',
  'status',
]);
/** the histogram's child per route and status (prom-client hashes the label object on every observe) */
const requestSecondsBy = new Map<string, { observe(v: number): void }>();
function observeRequest(route: string, status: number, seconds: number): void {
  const key = `${status} ${route}`;
  let child = requestSecondsBy.get(key);
  if (!child) {
    child = requestSeconds.labels({ route, status: String(status) });
    requestSecondsBy.set(key, child);
  }
  child.observe(seconds);
}

/**
 * Request ids are ULIDs: the host's generator is kept when it produces them (the app's pooled-random
 * ULIDs), anything else (Fastify's default `req-1`, …) is replaced by a fresh ULID. Fastify asks the
 * generator of the context that owns the route, so this covers the frame's routes and its 404s.
 */
function installRequestIds(app: FastifyInstance): void {
  const inherited = (app as unknown as { genReqId?: (raw: IncomingMessage) => string }).genReqId;
  app.setGenReqId((raw) => {
    const id = inherited?.call(app, raw);
    return typeof id === 'string' && id.length === 26 && ULID_RE.test(id) ? id : newUlid();
  });
}

/** the two headers every response carries; a no-op when the onRequest hook already set them */
function ensureHeaders(req: FastifyRequest, reply: FastifyReply, build: string): void {
  if (!reply.hasHeader('x-request-id')) reply.header('x-request-id', req.id);
  if (!reply.hasHeader('x-service-build')) reply.header('x-service-build', build);
}

/**
 * token → store for tokens that authenticated, keyed by the token's SHA-256 (computed once per request;
 * no plaintext token is kept; a lookup by digest reveals nothing usable about a token, so the map's
 * non-constant-time compare is no timing oracle). Emptied on any store-configuration change, so suspensions and revocations apply at
 * once. A miss (first use, or after a change) asks the directory, which hashes and compares itself.
 */
export class AuthCache {
  static readonly MAX_ENTRIES = 10_000;
  private readonly entries = new Map<string, StoreRecord>();
  private readonly directory: StoreDirectory;
  readonly close: () => void;

  constructor(directory: StoreDirectory) {
    this.directory = directory;
    const unsubscribe = directory.onChange(() => this.entries.clear());
    this.close = () => {
      unsubscribe();
      this.entries.clear();
    };
  }

  authenticate(token: string | null): AuthResult {
    // missing, blank or over-long (the directory refuses > 512): its own answer, nothing hashed or cached
    if (token === null || token.length > 512 || token.trim() === '') return this.directory.authenticate(token);
    const key = hash('sha256', token, 'base64');
    const hit = this.entries.get(key);
    if (hit) return { ok: true, store: hit };
    const auth = this.directory.authenticate(token);
    if (auth.ok) {
      if (this.entries.size >= AuthCache.MAX_ENTRIES) this.entries.clear();
      this.entries.set(key, auth.store);
    }
    return auth;
  }

  /** the cache keys (base64 SHA-256 digests), for inspection */
  keys(): string[] {
    return [...this.entries.keys()];
  }
}

/** context JSON of bodyless requests per store view and signals (it depends on nothing else) */
const bodylessContextJson = new WeakMap<StorefrontStoreView, Map<string, string>>();
const refusals = counter('storefront_refused_total', 'Storefront requests refused before the handler, by error code', [
  'code',
]);

/** Install the frame on an encapsulated Fastify instance (the storefront plugin). */
export function installFrame(app: FastifyInstance, opts: FrameOptions): void {
  const { directory, views, rateLimiter, trustedProxies, logger, build } = opts;
  app.decorateRequest('storefront', null);
  installRequestIds(app);
  // the API takes JSON bodies only: a text/plain body is a 415 like any other non-JSON type (Fastify's
  // default text parser would otherwise hand the frame a string)
  app.removeContentTypeParser('text/plain');

  const auth = new AuthCache(directory);
  app.addHook('onClose', (_app, done) => {
    auth.close();
    done();
  });

  app.addHook('onRoute', (route) => {
    route.bodyLimit ??= opts.bodyLimit;
  });

  // Hooks in callback style: a request that needs no I/O (the common case: the rate-limit buckets are
  // warm, a GET has no body) runs through the frame without a promise.
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    reply.header('x-service-build', build);
    if (req.routeOptions.config?.public) return done();
    const result = auth.authenticate(header(req, 'x-storefront-access-token'));
    if (!result.ok) {
      refusals.inc({ code: result.code });
      done(new StorefrontError(result.status, result.code, result.message));
      return;
    }
    const store = result.store;
    const ip = clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], trustedProxies);
    const receivedAt = Date.now();
    const startedNs = process.hrtime.bigint();
    const limit = rateLimiter.take(store.storeId, ip);
    if (limit instanceof Promise) {
      limit.then(
        (l) => admit(req, done, store, ip, l, receivedAt, startedNs),
        (err: Error) => done(err),
      );
    } else {
      admit(req, done, store, ip, limit, receivedAt, startedNs);
    }
  });

  function admit(
    req: FastifyRequest,
    done: (err?: Error) => void,
    store: StoreRecord,
    ip: string | null,
    limit: RateLimitResult,
    receivedAt: number,
    startedNs: bigint,
  ): void {
    if (!limit.allowed) {
      const seconds = Math.max(1, Math.ceil(limit.retryAfterMs / 1000));
      refusals.inc({ code: 'rate_limited' });
      done(
        new StorefrontError(
          429,
          'rate_limited',
          `Too many requests for this ${limit.scope === 'store' ? 'store' : 'client'}; retry after ${seconds} s.`,
          [],
          {
            'retry-after': String(seconds),
          },
        ),
      );
      return;
    }
    req.storefront = {
      store,
      view: views.get(store),
      clientIp: ip,
      deviceType: deviceTypeFromUserAgent(header(req, 'user-agent')),
      // placeholder until preHandler resolves it (hooks that run before it must not read it)
      context: null as unknown as RequestContext,
      event: {},
      bodyless: true,
      preHandled: false,
      receivedAt,
      startedNs,
    };
    done();
  }

  function resolveContext(
    req: FastifyRequest,
    sf: StorefrontRequestState,
    identity: IdentityInput | undefined,
    context: ContextInput | undefined,
  ) {
    return normalizeContext(sf.view, identity, context, {
      requestedWith: header(req, 'x-requested-with'),
      userAgent: header(req, 'user-agent'),
      detectedCountry: context?.geo?.country ? null : detectCountry(req, sf.clientIp, trustedProxies),
      deviceType: sf.deviceType,
    });
  }

  app.addHook('preHandler', (req, _reply, done) => {
    const sf = req.storefront;
    if (!sf) return done();
    sf.preHandled = true;
    // GET endpoints have no body (undefined); a JSON body must be an object
    const raw = req.body;
    if (raw !== undefined && (raw === null || typeof raw !== 'object' || Array.isArray(raw))) {
      const got = raw === null ? 'null' : Array.isArray(raw) ? 'array' : typeof raw;
      done(
        new StorefrontError(422, 'validation_failed', 'The request is invalid; see error.fields.', [
          { path: '', message: `expected a JSON object, received ${got}` },
        ]),
      );
      return;
    }
    const body = (raw ?? {}) as Record<string, unknown>;
    const fields: { path: string; message: string }[] = [];
    // a route that declares its body (StorefrontBodySchema extended) had identity and context validated
    // with it already; the frame parses them itself for routes that do not
    const declared = req.routeOptions.schema?.body !== undefined;
    const identity =
      body.identity === undefined || declared
        ? { success: true as const, data: body.identity as IdentityInput | undefined }
        : IdentitySchema.safeParse(body.identity);
    if (!identity.success) fields.push(...validationError(identity.error, 'identity').fields);
    const context =
      body.context === undefined || declared
        ? { success: true as const, data: body.context as ContextInput | undefined }
        : ContextSchema.safeParse(body.context);
    if (!context.success) fields.push(...validationError(context.error, 'context').fields);
    if (fields.length > 0) {
      done(new StorefrontError(422, 'validation_failed', 'The request is invalid; see error.fields.', fields));
      return;
    }
    const result = resolveContext(req, sf, identity.data, context.data);
    if (!result.ok) {
      done(new StorefrontError(403, result.code, result.message, [{ path: result.path, message: result.message }]));
      return;
    }
    sf.context = result.context;
    sf.bodyless = identity.data === undefined && context.data === undefined;
    done();
  });

  app.addHook('onResponse', (req, reply, done) => {
    observeRequest(req.routeOptions.url ?? 'unknown', reply.statusCode, reply.elapsedTime / 1000);
    const sf = req.storefront;
    const kind = req.routeOptions.config?.kind;
    if (sf && kind && opts.emit && !sf.noEvent) {
      // refused by the route's schema before the preHandler: the event carries the context the request's
      // signals give (geo, channel, device), as a bodyless request's would
      if (!sf.preHandled) {
        const r = resolveContext(req, sf, undefined, undefined);
        if (r.ok) sf.context = r.context;
      }
      try {
        opts.emit(buildRequestEvent(req, reply, sf, kind));
      } catch (err) {
        logger.warn({ err: (err as Error).message, reqId: req.id }, 'request event not emitted');
      }
    }
    done();
  });

  app.setErrorHandler((err: FastifyError | StorefrontError, req, reply) => {
    const e = err instanceof StorefrontError ? err : fromFastifyError(err as FastifyError);
    ensureHeaders(req, reply, build);
    if (e.status >= 500) logger.error({ err, reqId: req.id, url: req.url }, 'storefront request failed');
    return sendError(reply, e);
  });

  app.setNotFoundHandler((req, reply) => {
    ensureHeaders(req, reply, build);
    reply.code(404).send(errorBody('not_found', `No storefront endpoint ${req.method} ${req.url.split('?')[0]}.`));
  });
}

function buildRequestEvent(
  req: FastifyRequest,
  reply: FastifyReply,
  sf: StorefrontRequestState,
  kind: RequestKind,
): RequestEvent {
  const rc = sf.context as RequestContext | null;
  const sdk = header(req, 'x-sdk-client');
  return requestEvent({
    request_id: req.id,
    store_id: sf.store.storeId,
    kind,
    occurred_at: new Date(sf.receivedAt).toISOString(),
    device_type: sf.deviceType,
    status_code: reply.statusCode,
    latency_ms: Number(process.hrtime.bigint() - sf.startedNs) / 1e6,
    session_id: rc?.identity.sessionId ?? null,
    device_id: rc?.identity.deviceId ?? null,
    customer_id: rc?.identity.customerId ?? null,
    geo_country: rc ? (rc.geo.country ?? rc.detectedCountry) : null,
    geo_region: rc?.geo.province ?? null,
    market: rc?.market?.code ?? null,
    shopping_channel: rc?.shoppingChannel ?? null,
    sdk_client: sdk ? sdk.slice(0, 100) : null,
    context_json: rc ? contextJson(sf, rc) : '{}',
    ...sf.event,
  });
}

function contextJson(sf: StorefrontRequestState, rc: RequestContext): string {
  if (!sf.bodyless) return JSON.stringify(contextForEvent(rc));
  // everything a bodyless context holds follows from the store view and these two signals
  const key = `${rc.detectedCountry ?? ''} ${rc.shoppingChannel}`;
  let byKey = bodylessContextJson.get(sf.view);
  if (!byKey) bodylessContextJson.set(sf.view, (byKey = new Map()));
  let json = byKey.get(key);
  if (json === undefined) {
    json = JSON.stringify(contextForEvent(rc));
    if (byKey.size < 1_000) byKey.set(key, json);
  }
  return json;
}
