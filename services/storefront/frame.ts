// The storefront API frame: everything every endpoint under /api/storefront/v1 shares.
//
//   onRequest   token → store (StoreDirectory, constant-time hash compare): 401 missing/invalid, 402
//               suspended; then the per-store / per-IP rate limit (429 + Retry-After)
//   preHandler  `identity` and `context` (from a JSON body; GET endpoints have none) validated (422 with
//               field paths) and normalized once into `req.storefront.context` (403 for B2B scope
//               without a customer of the location's company)
//   onResponse  one request event per request through the emitter (never delays the response)
//   errors      one JSON body for every 4xx/5xx: { error: { code, message, fields: [{ path, message }] } }
//
// Endpoints declare `config: { kind }` (the request event kind, schemas/requests.ts) or
// `config: { public: true }` (no token: the OpenAPI document), and fill `req.storefront.event` with what
// the event should carry (query, result ids and counts, …).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BlockList } from 'node:net';
import { type RequestEvent, type RequestKind, requestEvent } from '../../schemas/requests.ts';
import { ContextSchema, IdentitySchema } from '../../schemas/storefront.ts';
import { clientIp, type DeviceType, deviceTypeFromUserAgent, geoFromIp, normalizeIp } from '../common/enrich.ts';
import type { Logger } from '../common/logger.ts';
import { counter, histogram } from '../common/metrics.ts';
import type { StoreDirectory, StoreRecord } from '../store-config/api.ts';
import { contextForEvent, normalizeContext, type RequestContext } from './context.ts';
import { errorBody, fromFastifyError, sendError, StorefrontError, validationError } from './errors.ts';
import type { RateLimiter } from './rate-limit.ts';
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
      if (typeof v === 'string' && /^[A-Za-z]{2}$/.test(v.trim()) && v.trim().toUpperCase() !== 'XX') return v.trim().toUpperCase();
    }
  }
  return ip ? geoFromIp(ip).country : null;
}

function header(req: FastifyRequest, name: string): string | null {
  const v = req.headers[name];
  return typeof v === 'string' ? v : Array.isArray(v) ? (v[0] ?? null) : null;
}

const requestSeconds = histogram('storefront_request_duration_seconds', 'Storefront API requests by route and status', ['route', 'status']);
const refusals = counter('storefront_refused_total', 'Storefront requests refused before the handler, by error code', ['code']);

/** Install the frame on an encapsulated Fastify instance (the storefront plugin). */
export function installFrame(app: FastifyInstance, opts: FrameOptions): void {
  const { directory, views, rateLimiter, trustedProxies, logger } = opts;
  app.decorateRequest('storefront', null);

  app.addHook('onRoute', (route) => {
    route.bodyLimit ??= opts.bodyLimit;
  });

  app.addHook('onRequest', async (req, reply) => {
    if (req.routeOptions.config?.public) return;
    const auth = directory.authenticate(header(req, 'x-storefront-access-token'));
    if (!auth.ok) {
      refusals.inc({ code: auth.code });
      return sendError(reply, new StorefrontError(auth.status, auth.code, auth.message));
    }
    const store = auth.store;
    const ip = clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], trustedProxies);
    const limit = await rateLimiter.take(store.storeId, ip);
    if (!limit.allowed) {
      const seconds = Math.max(1, Math.ceil(limit.retryAfterMs / 1000));
      refusals.inc({ code: 'rate_limited' });
      return sendError(
        reply,
        new StorefrontError(429, 'rate_limited', `Too many requests for this ${limit.scope === 'store' ? 'store' : 'client'}; retry after ${seconds} s.`, [], {
          'retry-after': String(seconds),
        }),
      );
    }
    const view = views.get(store);
    req.storefront = {
      store,
      view,
      clientIp: ip,
      deviceType: deviceTypeFromUserAgent(header(req, 'user-agent')),
      // placeholder until preHandler resolves it (hooks that run before it must not read it)
      context: null as unknown as RequestContext,
      event: {},
      receivedAt: Date.now(),
      startedNs: process.hrtime.bigint(),
    };
  });

  app.addHook('preHandler', async (req, reply) => {
    const sf = req.storefront;
    if (!sf) return;
    const body = req.body && typeof req.body === 'object' && !Array.isArray(req.body) ? (req.body as Record<string, unknown>) : {};
    const fields: { path: string; message: string }[] = [];
    const identity = body.identity === undefined ? { success: true as const, data: undefined } : IdentitySchema.safeParse(body.identity);
    if (!identity.success) fields.push(...validationError(identity.error, 'identity').fields);
    const context = body.context === undefined ? { success: true as const, data: undefined } : ContextSchema.safeParse(body.context);
    if (!context.success) fields.push(...validationError(context.error, 'context').fields);
    if (fields.length > 0) return sendError(reply, new StorefrontError(422, 'validation_failed', 'The request is invalid; see error.fields.', fields));
    const result = normalizeContext(sf.view, identity.data, context.data, {
      requestedWith: header(req, 'x-requested-with'),
      userAgent: header(req, 'user-agent'),
      detectedCountry: context.data?.geo?.country ? null : detectCountry(req, sf.clientIp, trustedProxies),
      deviceType: sf.deviceType,
    });
    if (!result.ok) return sendError(reply, new StorefrontError(403, result.code, result.message, [{ path: result.path, message: result.message }]));
    sf.context = result.context;
  });

  app.addHook('onResponse', async (req, reply) => {
    requestSeconds.observe({ route: req.routeOptions.url ?? 'unknown', status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    const sf = req.storefront;
    const kind = req.routeOptions.config?.kind;
    if (!sf || !kind || !opts.emit) return;
    try {
      opts.emit(buildRequestEvent(req, reply, sf, kind));
    } catch (err) {
      logger.warn({ err: (err as Error).message, reqId: req.id }, 'request event not emitted');
    }
  });

  app.setErrorHandler((err: FastifyError | StorefrontError, req, reply) => {
    const e = err instanceof StorefrontError ? err : fromFastifyError(err as FastifyError);
    if (e.status >= 500) logger.error({ err, reqId: req.id, url: req.url }, 'storefront request failed');
    return sendError(reply, e);
  });

  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send(errorBody('not_found', `No storefront endpoint ${req.method} ${req.url.split('?')[0]}.`));
  });
}

function buildRequestEvent(req: FastifyRequest, reply: FastifyReply, sf: StorefrontRequestState, kind: RequestKind): RequestEvent {
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
    context_json: rc ? JSON.stringify(contextForEvent(rc)) : '{}',
    ...sf.event,
  });
}
