// The public site as one encapsulated Fastify plugin, mounted at the root of the app (port 3000) by
// module.ts: discovery documents, the read-only MCP server, the searches-served counter, the forms, the
// arcade's scores and leaderboard, the operations dashboard's data, and the pages. No authentication.
//
// Every refusal is an RFC 9457 problem (problem.ts). Each path answers its own methods; any other
// method is a 405 naming them in `Allow`. Forms take application/x-www-form-urlencoded bodies only.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { BlockList } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { newUlid } from '../common/ids.ts';
import type { Db } from '../../clickhouse/client.ts';
import {
  type Acknowledged,
  SITE_FORMS,
  type SiteEvent,
  type SiteEventKind,
  SPAM_TRAP_FIELD,
} from '../../schemas/site.ts';
import { clientIp } from '../common/enrich.ts';
import type { Logger } from '../common/logger.ts';
import { counter } from '../common/metrics.ts';
import { ARTICLES, articleBySlug } from './content.ts';
import type { SearchesServedCounter } from './counter.ts';
import {
  AUTHORIZATION_SERVER_METADATA_PATH,
  buildDiscovery,
  type DiscoveryDocs,
  loadSkills,
  OAUTH_AUTHORIZE_PATH,
  OAUTH_TOKEN_PATH,
  STORE_MCP_PATH,
  STORE_MCP_RESOURCE_METADATA_PATH,
  STORE_MCP_SCOPE,
  type Served,
  served,
  siteOpenApi,
} from './discovery.ts';
import { handleMcp } from './mcp.ts';
import { dashboardData, type OpsSampler } from './ops.ts';
import * as pages from './pages.ts';
import { invalidField, methodNotAllowed, SiteError, StoreUnavailableError, sendProblem } from './problem.ts';
import { leaderboard } from './queries.ts';
import type { Limit, SiteRateLimiter } from './rate-limit.ts';

type Json = Record<string, unknown>;

/** per-IP limits of the forms the spec gives a 429 (subscribe, unlock) and of the arcade's scores */
export const DEFAULT_LIMITS: Partial<Record<SiteEventKind, Limit>> = {
  footer_subscribe: { max: 5, windowMs: 60_000 },
  article_unlock: { max: 10, windowMs: 60_000 },
  arcade_score: { max: 30, windowMs: 60_000 },
};

export interface SitePluginOptions {
  db: Db;
  logger: Logger;
  /** the storefront API's OpenAPI document (generated from its route declarations) */
  storefrontDocument(): Promise<Json>;
  counter: SearchesServedCounter;
  limiter: SiteRateLimiter;
  /** store one submission durably (resolves once the log acknowledged it); throws StoreUnavailableError */
  record(event: SiteEvent): Promise<void>;
  sampler: OpsSampler;
  trustedProxies: BlockList;
  limits?: Partial<Record<SiteEventKind, Limit>>;
  /** form bodies, bytes (default 16 KiB) */
  bodyLimit?: number;
  /** key of the article-unlock cookies (default: random per process) */
  unlockKey?: Buffer;
}

const FORM_TYPE = 'application/x-www-form-urlencoded';
const ALL_METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH'];

const submissions = counter('site_submissions_total', 'Site form submissions by form and outcome', ['form', 'outcome']);

export async function sitePlugin(app: FastifyInstance, opts: SitePluginOptions): Promise<void> {
  const log = opts.logger;
  const limits = { ...DEFAULT_LIMITS, ...opts.limits };
  const unlockKey = opts.unlockKey ?? randomBytes(32);
  const skills = loadSkills();
  const skillByName = new Map(skills.map((s) => [s.name, s]));
  const skillFiles = new Map(skills.map((s) => [s.name, served(s.body, 'text/markdown; charset=utf-8')]));

  // ------------------------------------------------------------------ parsing and errors
  app.addContentTypeParser(
    FORM_TYPE,
    { parseAs: 'string', bodyLimit: opts.bodyLimit ?? 16 * 1024 },
    (_req, body, done) => {
      const out: Record<string, string> = {};
      // the first value of a repeated field counts
      for (const [k, v] of new URLSearchParams(body as string)) if (!Object.hasOwn(out, k)) out[k] = v;
      done(null, out);
    },
  );

  app.setErrorHandler((err: FastifyError | SiteError, req, reply) => {
    if (err instanceof SiteError) return sendProblem(req, reply, err);
    const status = err.statusCode ?? 500;
    if (status === 413)
      return sendProblem(req, reply, new SiteError(413, 'body_too_large', 'The body is too large.', 'Send less.'));
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || err.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH')
      return sendProblem(req, reply, unsupportedMediaType());
    if (status >= 400 && status < 500)
      return sendProblem(
        req,
        reply,
        new SiteError(400, 'malformed_request', err.message, 'Check the request and send it again.'),
      );
    log.error({ err, url: req.url }, 'site: unexpected error');
    return sendProblem(
      req,
      reply,
      new SiteError(500, 'internal_error', 'The site failed to answer.', 'Try again; if it persists, tell us.'),
    );
  });

  app.setNotFoundHandler((req, reply) => {
    if (wantsHtml(req) && (req.method === 'GET' || req.method === 'HEAD'))
      return reply.code(404).type('text/html; charset=utf-8').send(pages.notFoundPage(req.url));
    return sendProblem(
      req,
      reply,
      new SiteError(404, 'not_found', `Nothing at ${req.url.split('?')[0]}.`, 'See /sitemap.xml for the pages.'),
    );
  });

  /** the methods a path answers; every other one is a 405 */
  function onlyMethods(url: string, allowed: HTTPMethods[]) {
    const allow = allowed.includes('GET') ? [...allowed, 'HEAD' as const] : allowed;
    const others = ALL_METHODS.filter((m) => !allow.includes(m));
    app.route({
      method: others,
      url,
      handler: (req, reply) => sendProblem(req, reply, methodNotAllowed(allow as string[])),
    });
  }

  // ------------------------------------------------------------------ discovery documents
  const byOrigin = new Map<string, Promise<DiscoveryDocs>>();
  let storefrontDoc: Promise<Json> | undefined;
  /** the storefront API's document, asked for once (again after a failure) */
  function storefront(): Promise<Json> {
    storefrontDoc ??= opts.storefrontDocument().catch((err: Error) => {
      storefrontDoc = undefined;
      throw err;
    });
    return storefrontDoc;
  }
  function docsFor(req: FastifyRequest): Promise<DiscoveryDocs> {
    const origin = originOf(req);
    let docs = byOrigin.get(origin);
    if (!docs) {
      docs = storefront().then((doc) => buildDiscovery(origin, doc, skills));
      docs.catch(() => byOrigin.delete(origin));
      // a bounded cache: Host headers are client input
      if (byOrigin.size >= 16) byOrigin.delete(byOrigin.keys().next().value as string);
      byOrigin.set(origin, docs);
    }
    return docs;
  }

  /** the documents of an origin once built (the hot path answers from here without a promise) */
  const built = new Map<string, DiscoveryDocs>();
  function send(req: FastifyRequest, reply: FastifyReply, s: Served): FastifyReply {
    reply.header('cache-control', 'public, max-age=300').header('etag', s.etag).type(s.type);
    if (req.headers['if-none-match'] === s.etag) return reply.code(304).send();
    return reply.send(s.body);
  }
  /** `allow` null: the path's other methods are registered elsewhere */
  function serve(url: string, pick: (d: DiscoveryDocs) => Served, allow: HTTPMethods[] | null = ['GET']) {
    app.get(url, (req, reply) => {
      const ready = built.get(originOf(req));
      if (ready) return send(req, reply, pick(ready));
      return docsFor(req).then((docs) => {
        if (built.size >= 16) built.delete(built.keys().next().value as string);
        built.set(originOf(req), docs);
        return send(req, reply, pick(docs));
      });
    });
    if (allow) onlyMethods(url, allow);
  }
  serve('/openapi.json', (d) => d.openapiJson);
  serve('/openapi.yaml', (d) => d.openapiYaml);
  serve('/llms.txt', (d) => d.llms);
  serve('/sitemap.xml', (d) => d.sitemap);
  serve('/.well-known/api-catalog', (d) => d.apiCatalog);
  serve('/.well-known/agent-skills/index.json', (d) => d.skillsIndex);
  // GET /.well-known/mcp is the card; POST the server (below)
  serve('/.well-known/mcp', (d) => d.serverCard, null);

  app.get<{ Params: { name: string } }>('/.well-known/agent-skills/:name/SKILL.md', async (req, reply) => {
    const s = skillByName.get(req.params.name);
    if (!s) throw new SiteError(404, 'skill_not_found', `No skill named ${req.params.name}.`, 'See index.json.');
    return send(req, reply, skillFiles.get(s.name) as Served);
  });
  onlyMethods('/.well-known/agent-skills/:name/SKILL.md', ['GET']);

  // ------------------------------------------------------------------ MCP: the card (GET) and the server (POST)

  await app.register(async (mcp) => {
    // the route parses the body itself: a body that is not JSON is a JSON-RPC -32700, not a Fastify error
    mcp.removeAllContentTypeParsers();
    mcp.addContentTypeParser('*', { parseAs: 'string', bodyLimit: 1024 * 1024 }, (_req, body, done) =>
      done(null, body),
    );
    mcp.post('/.well-known/mcp', async (req, reply) => {
      await handleMcp(req, reply, typeof req.body === 'string' ? req.body : '', {
        origin: originOf(req),
        searchesServed: () => opts.counter.get(),
      });
    });
  });
  onlyMethods('/.well-known/mcp', ['GET', 'POST']);

  // ------------------------------------------------------------------ the authenticated store-data MCP server
  // What the card says about it resolves: its OAuth metadata (RFC 9728, RFC 8414) is served, and its
  // endpoint answers as an OAuth-protected MCP server does before authorization (401 + WWW-Authenticate
  // naming the metadata, MCP authorization spec). No token is issued yet (no client is registered), so
  // every request to it stays a 401. Each answers before the body is read.
  serve(STORE_MCP_RESOURCE_METADATA_PATH, (d) => d.storeMcpResource);
  serve(AUTHORIZATION_SERVER_METADATA_PATH, (d) => d.authorizationServer);
  app.route({
    method: ['GET', 'POST', 'DELETE'],
    url: STORE_MCP_PATH,
    onRequest: (req, reply, done) => {
      const bearer = /^bearer\s/i.test(req.headers.authorization ?? '');
      const challenge = [
        `Bearer resource_metadata="${originOf(req)}${STORE_MCP_RESOURCE_METADATA_PATH}"`,
        `scope="${STORE_MCP_SCOPE}"`,
        ...(bearer ? ['error="invalid_token"', 'error_description="The access token is not valid."'] : []),
      ].join(', ');
      sendProblem(
        req,
        reply,
        new SiteError(
          401,
          bearer ? 'invalid_token' : 'authorization_required',
          bearer ? 'The access token is not valid.' : 'The store-data MCP server needs an OAuth access token.',
          `Follow the resource_metadata of WWW-Authenticate to the authorization server (scope ${STORE_MCP_SCOPE}).`,
          { headers: { 'www-authenticate': challenge } },
        ),
      );
      done();
    },
    handler: () => {},
  });
  onlyMethods(STORE_MCP_PATH, ['GET', 'POST', 'DELETE']);
  // RFC 6749 §4.1.2.1: an unknown client is told so, never redirected
  app.get(OAUTH_AUTHORIZE_PATH, (req, reply) =>
    sendProblem(
      req,
      reply.header('cache-control', 'no-store'),
      new SiteError(
        400,
        'unknown_client',
        'No OAuth client is registered with this authorization server yet.',
        'The store-data MCP server cannot be authorized yet; use the site MCP server (/.well-known/mcp).',
        { field: 'client_id' },
      ),
    ),
  );
  onlyMethods(OAUTH_AUTHORIZE_PATH, ['GET']);
  // RFC 6749 §5.2: the token endpoint's errors are its own JSON shape
  app.route({
    method: 'POST',
    url: OAUTH_TOKEN_PATH,
    onRequest: (_req, reply, done) => {
      reply
        .code(401)
        .header('cache-control', 'no-store')
        .header('www-authenticate', 'Basic realm="oauth"')
        .type('application/json; charset=utf-8')
        .send(
          JSON.stringify({
            error: 'invalid_client',
            error_description: 'No OAuth client is registered with this authorization server yet.',
          }),
        );
      done();
    },
    handler: () => {},
  });
  onlyMethods(OAUTH_TOKEN_PATH, ['POST']);

  // ------------------------------------------------------------------ the counter
  app.get('/api/searches-served', (_req, reply) => {
    const body = opts.counter.body();
    if (body === null)
      return sendProblem(
        _req,
        reply,
        new SiteError(503, 'counter_not_loaded', 'The counter has not been read yet.', 'Retry in a few seconds.', {
          headers: { 'retry-after': '10' },
        }),
      );
    reply.header('cache-control', `public, max-age=${opts.counter.maxAgeSeconds()}`);
    return reply.type('application/json; charset=utf-8').send(body);
  });
  onlyMethods('/api/searches-served', ['GET']);

  // ------------------------------------------------------------------ forms
  function ipOf(req: FastifyRequest): string {
    return clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], opts.trustedProxies) ?? 'unknown';
  }

  async function submit<K extends SiteEventKind>(
    kind: K,
    req: FastifyRequest,
  ): Promise<{ event: SiteEvent; form: Json; trapped: boolean }> {
    const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (type !== FORM_TYPE) throw unsupportedMediaType();
    const ip = ipOf(req);
    const limit = limits[kind];
    if (limit) {
      const r = await opts.limiter.take(kind, ip, limit);
      if (!r.allowed) {
        submissions.inc({ form: kind, outcome: 'rate_limited' });
        throw new SiteError(
          429,
          'rate_limited',
          `Too many submissions from your address; try again in ${r.retryAfterSeconds} s.`,
          `Wait ${r.retryAfterSeconds} seconds before sending this form again.`,
          { headers: { 'retry-after': String(r.retryAfterSeconds) } },
        );
      }
    }
    const raw = (req.body ?? {}) as Record<string, string>;
    const parsed = SITE_FORMS[kind].safeParse(raw);
    if (!parsed.success) {
      submissions.inc({ form: kind, outcome: 'invalid' });
      throw invalidField(parsed.error, raw);
    }
    const form = { ...(parsed.data as Json) };
    const trapped = typeof raw[SPAM_TRAP_FIELD] === 'string' && raw[SPAM_TRAP_FIELD].trim() !== '';
    delete form[SPAM_TRAP_FIELD];
    const event: SiteEvent = {
      event_id: newUlid(),
      kind,
      received_at: new Date().toISOString(),
      email: typeof form.email === 'string' ? form.email : null,
      fields_json: JSON.stringify(form),
      player: kind === 'arcade_score' ? String(form.player) : null,
      score: kind === 'arcade_score' ? Number(form.score) : null,
      client_ip_hash: createHash('sha256').update(ip).digest('hex').slice(0, 16),
      user_agent: typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'].slice(0, 512) : null,
    };
    return { event, form, trapped };
  }

  /** store the event (unless the spam trap caught it): what the 200 acknowledges is in the log */
  async function store(kind: SiteEventKind, event: SiteEvent, trapped: boolean, storeFailure: 'gateway' | 'internal') {
    if (trapped) {
      // answered like a success, so a bot learns nothing; nothing is stored
      submissions.inc({ form: kind, outcome: 'spam_trap' });
      return;
    }
    try {
      await opts.record(event);
      submissions.inc({ form: kind, outcome: 'stored' });
    } catch (err) {
      submissions.inc({ form: kind, outcome: 'store_failed' });
      log.error({ err: (err as Error).message, form: kind }, 'site: submission not stored');
      const hint = 'Nothing was saved; send the form again in a minute.';
      if (storeFailure === 'internal')
        throw new SiteError(500, 'store_failed', 'The submission could not be saved.', hint);
      if (err instanceof StoreUnavailableError && !err.unreachable)
        throw new SiteError(502, 'store_rejected', 'The submission store refused the submission.', hint);
      throw new SiteError(503, 'store_unavailable', 'The submission store is unavailable.', hint, {
        headers: { 'retry-after': '30' },
      });
    }
  }

  const ack = (id: string, status: Acknowledged['status'], message: string): Acknowledged => ({
    ok: true,
    id,
    status,
    message,
  });

  app.post('/api/footer-subscribe', async (req) => {
    const { event, form, trapped } = await submit('footer_subscribe', req);
    await store('footer_subscribe', event, trapped, 'gateway');
    return ack(event.event_id, 'subscribed', `Subscribed ${form.email} to the ${form.source}.`);
  });
  onlyMethods('/api/footer-subscribe', ['POST']);

  app.post('/api/article-unlock', async (req, reply) => {
    const { event, form, trapped } = await submit('article_unlock', req);
    const article = articleBySlug(String(form.slug));
    if (!article)
      throw new SiteError(404, 'article_not_found', `No article with slug ${form.slug}.`, 'See /sitemap.xml.', {
        field: 'slug',
      });
    await store('article_unlock', event, trapped, 'internal');
    const path = `/articles/${article.slug}`;
    if (!trapped)
      reply.header(
        'set-cookie',
        `${unlockCookieName(article.slug)}=${unlockToken(unlockKey, article.slug)}; Path=${path}; Max-Age=31536000; HttpOnly; SameSite=Lax`,
      );
    return {
      ...ack(event.event_id, 'unlocked', `Unlocked “${article.title}” and subscribed ${form.email}.`),
      articleUrl: `${originOf(req)}${path}`,
      emailSent: false,
    };
  });
  onlyMethods('/api/article-unlock', ['POST']);

  app.post('/api/integration-request', async (req) => {
    const { event, form, trapped } = await submit('integration_request', req);
    await store('integration_request', event, trapped, 'gateway');
    return ack(event.event_id, 'received', `Thanks — we recorded your request for ${form.service_name}.`);
  });
  onlyMethods('/api/integration-request', ['POST']);

  app.post('/api/integration-correction', async (req) => {
    const { event, form, trapped } = await submit('integration_correction', req);
    await store('integration_correction', event, trapped, 'gateway');
    return ack(event.event_id, 'received', `Thanks — we recorded your correction to ${form.integration_name}.`);
  });
  onlyMethods('/api/integration-correction', ['POST']);

  // ------------------------------------------------------------------ the arcade
  app.post('/api/arcade/scores', async (req) => {
    const { event, form, trapped } = await submit('arcade_score', req);
    await store('arcade_score', event, trapped, 'gateway');
    return ack(event.event_id, 'recorded', `Recorded ${form.score} points for ${form.player}.`);
  });
  onlyMethods('/api/arcade/scores', ['POST']);

  // ClickHouse is read at most once a second for the leaderboard, every 2 s per store for the dashboard,
  // however many browsers poll (the pages are public)
  const board = ttlCache(1_000, 1, () => leaderboard(opts.db).then((entries) => ({ entries })));
  app.get('/api/arcade/leaderboard', async (_req, reply) => {
    reply.header('cache-control', 'no-store');
    return board('');
  });
  onlyMethods('/api/arcade/leaderboard', ['GET']);

  // ------------------------------------------------------------------ operations dashboard data
  const dashboard = ttlCache(2_000, 64, (store: string) => dashboardData(opts.db, opts.sampler, opts.counter, store));
  app.get<{ Querystring: { store?: string } }>('/api/ops/dashboard', async (req, reply) => {
    const store = typeof req.query.store === 'string' ? req.query.store.slice(0, 64) : '';
    reply.header('cache-control', 'no-store');
    return dashboard(store);
  });
  onlyMethods('/api/ops/dashboard', ['GET']);

  // ------------------------------------------------------------------ pages and their assets
  const html = (reply: FastifyReply, body: string) =>
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(body);

  // RFC 9727 §3: the site's home page links its API catalog
  app.get('/', (_req, reply) =>
    html(reply.header('link', '</.well-known/api-catalog>; rel="api-catalog"'), pages.landingPage(opts.counter.get())),
  );
  onlyMethods('/', ['GET']);
  app.get('/integrations', (_req, reply) => html(reply, pages.integrationsPage()));
  onlyMethods('/integrations', ['GET']);
  app.get('/docs', async (req, reply) => {
    return html(reply, pages.docsPage(siteOpenApi(await storefront(), originOf(req))));
  });
  onlyMethods('/docs', ['GET']);
  app.get('/ops', (_req, reply) => html(reply, pages.opsPage()));
  onlyMethods('/ops', ['GET']);
  app.get<{ Params: { slug: string } }>('/articles/:slug', (req, reply) => {
    const article = articleBySlug(req.params.slug);
    if (!article) return reply.code(404).type('text/html; charset=utf-8').send(pages.notFoundPage(req.url));
    const cookie = cookieValue(req.headers.cookie, unlockCookieName(article.slug));
    const unlocked = !article.gated || (cookie !== null && verifyUnlock(unlockKey, article.slug, cookie));
    return html(reply, pages.articlePage(article, unlocked));
  });
  onlyMethods('/articles/:slug', ['GET']);
  app.get('/articles', (_req, reply) => reply.redirect(`/#articles`));

  const assets = pages.loadAssets();
  app.get<{ Params: { file: string } }>('/assets/:file', (req, reply) => {
    const a = assets.get(req.params.file);
    if (!a) throw new SiteError(404, 'not_found', `No asset ${req.params.file}.`, 'Reload the page.');
    reply.header('cache-control', 'public, max-age=300').header('etag', a.etag).type(a.type);
    if (req.headers['if-none-match'] === a.etag) return reply.code(304).send();
    return reply.send(a.body);
  });
  onlyMethods('/assets/:file', ['GET']);
  log.info({ articles: ARTICLES.length, skills: skills.length }, 'site: routes registered');
}

/** memoizes `load(key)` for `ttlMs` (a failed load is not kept), at most `max` keys */
function ttlCache<T>(ttlMs: number, max: number, load: (key: string) => Promise<T>): (key: string) => Promise<T> {
  const entries = new Map<string, { at: number; value: Promise<T> }>();
  return (key) => {
    const now = Date.now();
    const hit = entries.get(key);
    if (hit && now - hit.at < ttlMs) return hit.value;
    if (entries.size >= max) entries.clear();
    const value = load(key);
    entries.set(key, { at: now, value });
    value.catch(() => entries.delete(key));
    return value;
  };
}

function unsupportedMediaType(): SiteError {
  return new SiteError(
    400,
    'unsupported_media_type',
    `Forms are sent as ${FORM_TYPE}.`,
    `Send the fields URL-encoded with Content-Type: ${FORM_TYPE}.`,
  );
}

function wantsHtml(req: FastifyRequest): boolean {
  const accept = req.headers.accept ?? '';
  return accept.includes('text/html');
}

/** scheme://host[:port] of the request, as the client addressed the site */
export function originOf(req: FastifyRequest): string {
  return `${req.protocol}://${req.host}`;
}

export function unlockCookieName(slug: string): string {
  return `unlock_${slug.replaceAll('-', '_')}`;
}

function unlockToken(key: Buffer, slug: string): string {
  return createHmac('sha256', key).update(`unlock:${slug}`).digest('base64url');
}

function verifyUnlock(key: Buffer, slug: string, token: string): boolean {
  const want = Buffer.from(unlockToken(key, slug));
  const got = Buffer.from(token);
  return got.length === want.length && timingSafeEqual(got, want);
}

function cookieValue(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return null;
}
