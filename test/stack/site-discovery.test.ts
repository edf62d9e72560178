// The public site's discovery surface against the real app: the OpenAPI document (the storefront API's
// own operations, valid OpenAPI 3.1 by a standard validator, JSON and YAML), llms.txt, sitemap.xml, the
// RFC 9727 API catalog, the Agent Skills index (digests of the served bytes), the MCP server card, and the
// read-only MCP server driven by the official SDK's client (plus the spec's raw 202 / 400 / 405 answers).
import { createHash } from 'node:crypto';
import { discoverOAuthServerInfo, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { Validator } from '@seriousme/openapi-schema-validator';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { ARTICLES } from '../../services/site/content.ts';
import { stack } from '../helpers/stack.ts';

let base: string;
const json = (r: Response): Promise<any> => r.json();
const clients: Client[] = [];

beforeAll(() => {
  base = stack().httpUrl;
});
afterAll(async () => {
  for (const c of clients) await c.close();
});

async function mcpClient(fetchImpl?: typeof fetch): Promise<Client> {
  const client = new Client({ name: 'site-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/.well-known/mcp`), fetchImpl ? { fetch: fetchImpl } : {}),
  );
  clients.push(client);
  return client;
}

const rpc = (body: string, headers: Record<string, string> = {}) =>
  fetch(`${base}/.well-known/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
  });

describe('OpenAPI document', () => {
  it('is valid OpenAPI 3.1, version 1.0.0, with exactly the storefront API document’s operations', async () => {
    const r = await fetch(`${base}/openapi.json`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const doc = await json(r);
    const validator = new Validator();
    const res = await validator.validate(structuredClone(doc));
    expect(res.errors ?? []).toEqual([]);
    expect(validator.version).toBe('3.1');
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.servers).toEqual([{ url: `${base}/api/storefront/v1`, description: expect.any(String) }]);

    const own = await json(await fetch(`${base}/api/storefront/v1/openapi.json`));
    const ops = (d: { paths: Record<string, Record<string, { operationId: string }>> }) =>
      Object.entries(d.paths)
        .flatMap(([p, m]) => Object.entries(m).map(([method, op]) => `${method} ${p} ${op.operationId}`))
        .sort();
    expect(ops(doc)).toEqual(ops(own));
    expect(ops(doc)).toContain('post /search/{searchQuery}/execute executeSearch');
    expect(doc.paths).toEqual(own.paths);
    expect(doc.components).toEqual(own.components);
  });

  it('is served as YAML with the same content', async () => {
    const r = await fetch(`${base}/openapi.yaml`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/yaml/);
    const fromYaml = YAML.parse(await r.text());
    const fromJson = await json(await fetch(`${base}/openapi.json`));
    expect(fromYaml).toEqual(fromJson);
  });

  it('answers 304 to a matching If-None-Match and 405 to other methods', async () => {
    const first = await fetch(`${base}/openapi.json`);
    const etag = first.headers.get('etag') as string;
    expect(etag).toMatch(/^".+"$/);
    expect((await fetch(`${base}/openapi.json`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    const r = await fetch(`${base}/openapi.json`, { method: 'POST' });
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('GET, HEAD');
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = await json(r);
    expect(body).toMatchObject({ status: 405, title: 'Method Not Allowed', error: { code: 'method_not_allowed' } });
    expect(body.error.hint).toEqual(expect.any(String));
  });
});

describe('llms.txt, sitemap, API catalog, agent skills', () => {
  it('llms.txt is a plain-text overview linking the API documents, MCP and every article', async () => {
    const r = await fetch(`${base}/llms.txt`);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await r.text();
    expect(text.startsWith('# Storefront Discovery\n')).toBe(true);
    for (const link of ['/openapi.json', '/.well-known/mcp', '/.well-known/agent-skills/index.json'])
      expect(text).toContain(`(${base}${link})`);
    for (const a of ARTICLES) expect(text).toContain(`${base}/articles/${a.slug}`);
    expect(text).toContain('POST /api/storefront/v1/search/{searchQuery}/execute');
  });

  it('sitemap.xml is well-formed XML: a sitemaps.org urlset of absolute URLs (landing page, pages, every article), each reachable', async () => {
    const r = await fetch(`${base}/sitemap.xml`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/xml/);
    const xml = await r.text();
    expect(XMLValidator.validate(xml)).toBe(true);
    const doc = new XMLParser({
      ignoreAttributes: false,
      parseTagValue: false,
      isArray: (name) => name === 'url',
    }).parse(xml);
    expect(doc['?xml']).toMatchObject({ '@_version': '1.0', '@_encoding': 'UTF-8' });
    expect(Object.keys(doc).filter((k) => k !== '?xml')).toEqual(['urlset']);
    const { urlset } = doc;
    expect(urlset['@_xmlns']).toBe('http://www.sitemaps.org/schemas/sitemap/0.9');
    expect(Object.keys(urlset).filter((k) => !k.startsWith('@_'))).toEqual(['url']);
    const urls: { loc: string; lastmod?: string }[] = urlset.url;
    expect(urls.length).toBeGreaterThan(0);
    expect(urls.length).toBeLessThanOrEqual(50_000);
    for (const u of urls) {
      // only the protocol's child elements; loc absolute, on this site, at most 2048 characters
      for (const k of Object.keys(u)) expect(['loc', 'lastmod', 'changefreq', 'priority']).toContain(k);
      expect(typeof u.loc).toBe('string');
      expect(u.loc.length).toBeLessThanOrEqual(2048);
      const url = new URL(u.loc);
      expect(url.href, u.loc).toBe(u.loc);
      expect(url.origin).toBe(base);
      if (u.lastmod !== undefined) {
        // W3C Datetime (a date, or a date and time with a zone)
        expect(u.lastmod).toMatch(/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/);
        expect(Number.isNaN(Date.parse(u.lastmod)), u.lastmod).toBe(false);
      }
    }
    const locs = urls.map((u) => u.loc);
    expect(new Set(locs).size).toBe(locs.length);
    expect(locs).toContain(`${base}/`);
    for (const a of ARTICLES) expect(urls).toContainEqual({ loc: `${base}/articles/${a.slug}`, lastmod: a.published });
    for (const loc of locs) expect((await fetch(loc)).status, loc).toBe(200);
  });

  it('the API catalog is an RFC 9727 linkset naming the service description, the docs and the OpenAPI document', async () => {
    const r = await fetch(`${base}/.well-known/api-catalog`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe(
      'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"',
    );
    const { linkset } = await json(r);
    expect(linkset).toHaveLength(1);
    expect(linkset[0].anchor).toBe(`${base}/api/storefront/v1`);
    expect(linkset[0]['service-desc'].map((l: { href: string }) => l.href)).toEqual([
      `${base}/openapi.json`,
      `${base}/openapi.yaml`,
    ]);
    expect(linkset[0]['service-doc'][0]).toEqual({ href: `${base}/docs`, type: 'text/html' });
    expect(linkset[0]['service-meta']).toEqual([{ href: `${base}/.well-known/mcp`, type: 'application/json' }]);
    // every link of the catalog resolves
    const rels = Object.keys(linkset[0]).filter((k) => k !== 'anchor');
    expect(rels.sort()).toEqual(['service-desc', 'service-doc', 'service-meta', 'status']);
    for (const rel of rels)
      for (const l of linkset[0][rel]) {
        const res = await fetch(l.href);
        // the status link reports readiness: 503 while a part of the stack is not ready is an answer too
        if (rel === 'status') {
          expect([200, 503], l.href).toContain(res.status);
          expect(res.headers.get('content-type'), l.href).toMatch(/^application\/json/);
        } else expect(res.status, l.href).toBe(200);
        await res.body?.cancel();
      }
    expect((await fetch(`${base}/.well-known/api-catalog`, { method: 'HEAD' })).status).toBe(200);
    // the home page links it (RFC 9727 §3)
    expect((await fetch(`${base}/`)).headers.get('link')).toBe('</.well-known/api-catalog>; rel="api-catalog"');
  });

  it('the agent-skills index lists each SKILL.md with the SHA-256 of the bytes served at its URL', async () => {
    const r = await fetch(`${base}/.well-known/agent-skills/index.json`);
    const index = await json(r);
    expect(index.$schema).toBe('https://schemas.agentskills.io/discovery/0.2.0/schema.json');
    expect(index.skills.length).toBeGreaterThanOrEqual(2);
    for (const s of index.skills) {
      expect(s).toEqual({
        name: expect.stringMatching(/^[a-z0-9-]+$/),
        type: 'skill-md',
        description: expect.any(String),
        url: `/.well-known/agent-skills/${s.name}/SKILL.md`,
        digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      });
      const file = await fetch(new URL(s.url, `${base}/`));
      expect(file.status).toBe(200);
      const bytes = Buffer.from(await file.arrayBuffer());
      expect(`sha256:${createHash('sha256').update(bytes).digest('hex')}`).toBe(s.digest);
      expect(bytes.toString('utf8')).toContain(`name: ${s.name}\n`);
    }
    const missing = await fetch(`${base}/.well-known/agent-skills/nope/SKILL.md`);
    expect(missing.status).toBe(404);
    expect((await json(missing)).error.code).toBe('skill_not_found');
  });
});

describe('methods', () => {
  it('every discovery document carries an ETag (304 on If-None-Match) and Cache-Control', async () => {
    const index = await json(await fetch(`${base}/.well-known/agent-skills/index.json`));
    for (const path of [
      '/openapi.json',
      '/openapi.yaml',
      '/llms.txt',
      '/sitemap.xml',
      '/.well-known/api-catalog',
      '/.well-known/agent-skills/index.json',
      ...index.skills.map((s: { url: string }) => s.url),
      '/.well-known/mcp',
      '/.well-known/oauth-protected-resource/mcp/v1',
      '/.well-known/oauth-authorization-server',
    ]) {
      const r = await fetch(`${base}${path}`);
      expect(r.status, path).toBe(200);
      await r.body?.cancel();
      expect(r.headers.get('cache-control'), path).toBe('public, max-age=300');
      const etag = r.headers.get('etag') as string;
      expect(etag, path).toMatch(/^"[\w-]+"$/);
      const again = await fetch(`${base}${path}`, { headers: { 'if-none-match': etag } });
      expect(again.status, path).toBe(304);
      expect(await again.text()).toBe('');
    }
  });

  it('the discovery documents answer GET and HEAD only: other methods are 405 with Allow and a problem body', async () => {
    const index = await json(await fetch(`${base}/.well-known/agent-skills/index.json`));
    const paths = [
      '/llms.txt',
      '/sitemap.xml',
      '/.well-known/api-catalog',
      '/.well-known/agent-skills/index.json',
      index.skills[0].url,
      '/.well-known/oauth-protected-resource/mcp/v1',
      '/.well-known/oauth-authorization-server',
    ];
    for (const path of paths) {
      expect((await fetch(`${base}${path}`, { method: 'HEAD' })).status, `HEAD ${path}`).toBe(200);
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
        const r = await fetch(`${base}${path}`, { method });
        expect(r.status, `${method} ${path}`).toBe(405);
        expect(r.headers.get('allow'), `${method} ${path}`).toBe('GET, HEAD');
        expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(await json(r)).toMatchObject({
          status: 405,
          instance: path,
          error: { code: 'method_not_allowed', hint: expect.any(String) },
        });
      }
    }
  });
});

describe('MCP', () => {
  it('the server card names the server, transport, endpoint, versions, capabilities, tools and the OAuth server', async () => {
    const r = await fetch(`${base}/.well-known/mcp`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const card = await json(r);
    const host = new URL(base).hostname;
    expect(card).toMatchObject({
      $schema: 'https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json',
      // SEP-2127: reverse-DNS namespace (here the addressed host), one slash, the server
      name: `${/^[\d.]+$/.test(host) ? host : host.split('.').reverse().join('.')}/storefront-discovery-site`,
      version: '1.0.0',
      title: 'Storefront Discovery site',
      description: expect.stringMatching(/^Read-only MCP server over the public site/),
      websiteUrl: `${base}/`,
      protocolVersion: LATEST_PROTOCOL_VERSION,
      serverInfo: { name: 'storefront-discovery-site', version: '1.0.0' },
      transport: { type: 'streamable-http', endpoint: `${base}/.well-known/mcp` },
      remotes: [{ type: 'streamable-http', url: `${base}/.well-known/mcp` }],
      capabilities: { tools: { listChanged: false } },
      authentication: { required: false },
    });
    expect(card.name).toMatch(/^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/);
    expect(card.description.length).toBeLessThanOrEqual(100);
    expect(card.supportedProtocolVersions).toContain(LATEST_PROTOCOL_VERSION);
    expect(card.remotes[0].supportedProtocolVersions).toEqual(card.supportedProtocolVersions);
    expect(card.tools.map((t: { name: string }) => t.name)).toContain('get_article');
    const store = card.relatedServers[0];
    expect(store.transport).toEqual({ type: 'streamable-http', endpoint: `${base}/mcp/v1` });
    expect(store.authentication).toEqual({
      required: true,
      schemes: ['oauth2'],
      scopes: ['mcp:use'],
      protectedResourceMetadata: `${base}/.well-known/oauth-protected-resource/mcp/v1`,
      authorizationServers: [base],
      authorizationServerMetadata: `${base}/.well-known/oauth-authorization-server`,
    });
  });

  it('every URL in the card resolves (only $schema is external), and the store-data server’s OAuth discovery works with the SDK', async () => {
    const card = await json(await fetch(`${base}/.well-known/mcp`));
    const urls = new Map<string, string>();
    const walk = (v: unknown, at: string): void => {
      if (typeof v === 'string' && /^https?:\/\//.test(v)) urls.set(at, v);
      else if (Array.isArray(v)) for (const [i, x] of v.entries()) walk(x, `${at}[${i}]`);
      else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, at ? `${at}.${k}` : k);
    };
    walk(card, '');
    const external = new Map([['$schema', card.$schema]]);
    const storeEndpoint = `${base}/mcp/v1`;
    expect(urls.size).toBeGreaterThanOrEqual(8);
    for (const [at, url] of urls) {
      if (external.get(at) === url) continue;
      expect(new URL(url).origin, at).toBe(base);
      const r = await fetch(url);
      // the store-data endpoint is OAuth-protected: before authorization it is a 401, never a 404
      expect(r.status, `${at}: ${url}`).toBe(url === storeEndpoint ? 401 : 200);
      await r.body?.cancel();
    }

    // the discovery an MCP client makes (MCP authorization spec): 401 + WWW-Authenticate → RFC 9728 → RFC 8414
    const denied = await fetch(storeEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
    });
    expect(denied.status).toBe(401);
    expect(await json(denied)).toMatchObject({ status: 401, error: { code: 'authorization_required' } });
    const challenge = extractWWWAuthenticateParams(denied);
    expect(challenge.resourceMetadataUrl?.href).toBe(card.relatedServers[0].authentication.protectedResourceMetadata);
    expect(challenge.scope).toBe('mcp:use');
    const withToken = await fetch(storeEndpoint, { headers: { authorization: 'Bearer not-a-token' } });
    expect(withToken.status).toBe(401);
    expect(extractWWWAuthenticateParams(withToken).error).toBe('invalid_token');

    const info = await discoverOAuthServerInfo(storeEndpoint, { resourceMetadataUrl: challenge.resourceMetadataUrl });
    expect(info.resourceMetadata).toMatchObject({
      resource: storeEndpoint,
      authorization_servers: [base],
      scopes_supported: ['mcp:use'],
      bearer_methods_supported: ['header'],
    });
    expect(info.authorizationServerUrl).toBe(base);
    const as = info.authorizationServerMetadata as Record<string, unknown>;
    expect(as).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      scopes_supported: ['mcp:use'],
    });
    // its endpoints answer (no client is registered yet): RFC 6749 errors, not 404s
    const authorize = await fetch(`${as.authorization_endpoint}?response_type=code&client_id=unknown`);
    expect(authorize.status).toBe(400);
    expect(await json(authorize)).toMatchObject({ error: { code: 'unknown_client', field: 'client_id' } });
    const token = await fetch(as.token_endpoint as string, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=authorization_code&code=x&client_id=unknown',
    });
    expect(token.status).toBe(401);
    expect(await json(token)).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
  });

  it('the SDK client initializes, lists the tools and calls them over public site content', async () => {
    const client = await mcpClient();
    expect(client.getServerVersion()).toMatchObject({ name: 'storefront-discovery-site', version: '1.0.0' });
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'get_article',
      'get_searches_served',
      'list_articles',
      'list_integrations',
      'search_site',
    ]);
    for (const t of tools) expect(t.annotations?.readOnlyHint).toBe(true);
    // a notification from the client: accepted (202) without an answer
    await expect(client.notification({ method: 'notifications/initialized' })).resolves.toBeUndefined();

    const listed = await client.callTool({ name: 'list_articles', arguments: {} });
    const articles = JSON.parse((listed.content as { text: string }[])[0].text);
    expect(articles.map((a: { slug: string }) => a.slug)).toEqual(ARTICLES.map((a) => a.slug));

    const open = ARTICLES.find((a) => !a.gated) as (typeof ARTICLES)[number];
    const got = await client.callTool({ name: 'get_article', arguments: { slug: open.slug } });
    const article = JSON.parse((got.content as { text: string }[])[0].text);
    expect(article.text).toContain(open.body[0]);

    const gated = ARTICLES.find((a) => a.gated) as (typeof ARTICLES)[number];
    const lead = JSON.parse(
      (
        (await client.callTool({ name: 'get_article', arguments: { slug: gated.slug } })).content as { text: string }[]
      )[0].text,
    );
    expect(lead.text).toContain(gated.lead[0]);
    expect(lead.text).not.toContain(gated.body[0]);

    const found = await client.callTool({ name: 'search_site', arguments: { query: 'ClickHouse SIGKILL' } });
    expect(JSON.parse((found.content as { text: string }[])[0].text)[0].path).toBe(
      '/articles/exactly-once-into-clickhouse',
    );
    const unknown = await client.callTool({ name: 'get_article', arguments: { slug: 'no-such-article' } });
    expect(unknown.isError).toBe(true);
  });

  it('an unsupported MCP-Protocol-Version is a 400 with a null-id JSON-RPC error -32600 (SDK client and raw)', async () => {
    // the client sends the negotiated version from its first request after initialize (the initialized
    // notification): the server refuses it
    const connecting = mcpClient((url, init) => {
      const headers = new Headers(init?.headers);
      if (headers.has('mcp-protocol-version')) headers.set('mcp-protocol-version', '1999-01-01');
      return fetch(url, { ...init, headers });
    });
    await expect(connecting).rejects.toThrow(/-32600.*Unsupported MCP-Protocol-Version: 1999-01-01/);

    const r = await rpc(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), {
      'mcp-protocol-version': '1999-01-01',
    });
    expect(r.status).toBe(400);
    const body = await json(r);
    expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
  });

  it('invalid JSON is a 400 with a null-id -32700; a notification is 202; other methods are 405', async () => {
    const bad = await rpc('{"jsonrpc": "2.0", "id": 1, "method": ');
    expect(bad.status).toBe(400);
    expect(await json(bad)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });

    const note = await rpc(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), {
      'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
    });
    expect(note.status).toBe(202);

    const call = await rpc(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'get_searches_served', arguments: {} },
      }),
      { 'mcp-protocol-version': LATEST_PROTOCOL_VERSION },
    );
    expect(call.status).toBe(200);
    const answer = await json(call);
    expect(answer.id).toBe(7);
    expect(JSON.parse(answer.result.content[0].text)).toMatchObject({ count: expect.stringMatching(/^\d+(\.\d+)?$/) });

    for (const method of ['PUT', 'DELETE', 'PATCH']) {
      const r = await fetch(`${base}/.well-known/mcp`, { method });
      expect(r.status, method).toBe(405);
      expect(r.headers.get('allow')).toBe('GET, POST, HEAD');
    }
  });
});
