// The site's discovery documents, each built once per origin and served pre-serialized: the OpenAPI
// document (the storefront API's own, generated from its route declarations, with an absolute server
// URL), llms.txt, sitemap.xml, the RFC 9727 API catalog, the Agent Skills discovery index (v0.2) with its
// SKILL.md files, and the MCP server card.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { ARTICLES, indexablePaths, INTEGRATIONS } from './content.ts';
import { MCP_TOOLS, SITE_MCP_NAME, SITE_MCP_VERSION } from './mcp.ts';

type Json = Record<string, unknown>;

export const STOREFRONT_API_PATH = '/api/storefront/v1';
/** the authenticated store-data MCP server the card points to (OAuth, scope mcp:use) */
export const STORE_MCP_PATH = '/mcp/v1';
/** RFC 9728 §3.1: the protected-resource metadata of `<origin>/mcp/v1` */
export const STORE_MCP_RESOURCE_METADATA_PATH = `/.well-known/oauth-protected-resource${STORE_MCP_PATH}`;
/** RFC 8414 §3: the metadata of the authorization server whose issuer is the site's origin */
export const AUTHORIZATION_SERVER_METADATA_PATH = '/.well-known/oauth-authorization-server';
export const OAUTH_AUTHORIZE_PATH = '/oauth/authorize';
export const OAUTH_TOKEN_PATH = '/oauth/token';
export const STORE_MCP_SCOPE = 'mcp:use';

export interface Served {
  body: Buffer;
  type: string;
  etag: string;
}

/** a document served as is: its bytes, content type and a strong ETag of the bytes */
export function served(body: string | Buffer, type: string): Served {
  const buf = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return { body: buf, type, etag: `"${createHash('sha256').update(buf).digest('base64url').slice(0, 27)}"` };
}

export interface Skill {
  name: string;
  description: string;
  path: string;
  body: Buffer;
}

const SKILLS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'skills');

/** the SKILL.md files under services/site/skills/<name>/, their frontmatter read once */
export function loadSkills(dir = SKILLS_DIR): Skill[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => {
      const body = readFileSync(path.join(dir, d.name, 'SKILL.md'));
      const front = /^---\n([\s\S]*?)\n---\n/.exec(body.toString('utf8'));
      const meta = (front ? YAML.parse(front[1]) : {}) as { name?: string; description?: string };
      if (meta.name !== d.name || !meta.description) throw new Error(`skills/${d.name}/SKILL.md: bad frontmatter`);
      return {
        name: meta.name,
        description: meta.description,
        path: `/.well-known/agent-skills/${d.name}/SKILL.md`,
        body,
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

export interface DiscoveryDocs {
  openapiJson: Served;
  openapiYaml: Served;
  llms: Served;
  sitemap: Served;
  apiCatalog: Served;
  skillsIndex: Served;
  serverCard: Served;
  /** RFC 9728 metadata of the authenticated store-data MCP server */
  storeMcpResource: Served;
  /** RFC 8414 metadata of the authorization server that would issue its tokens */
  authorizationServer: Served;
}

/** the site's copy of the storefront API document: same operations, absolute server URL */
export function siteOpenApi(storefrontDoc: Json, origin: string): Json {
  const doc = structuredClone(storefrontDoc);
  doc.servers = [{ url: `${origin}${STOREFRONT_API_PATH}`, description: 'Storefront Discovery API v1' }];
  doc.info = { ...(doc.info as Json), version: '1.0.0' };
  doc.externalDocs = { description: 'Overview for people and agents', url: `${origin}/llms.txt` };
  return doc;
}

const xmlEscape = (s: string) =>
  s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c] as string);

export function buildDiscovery(origin: string, storefrontDoc: Json, skills: Skill[]): DiscoveryDocs {
  const openapi = siteOpenApi(storefrontDoc, origin);
  const ops = Object.entries(openapi.paths as Record<string, Record<string, Json>>).flatMap(([p, methods]) =>
    Object.entries(methods).map(([m, op]) => `- ${m.toUpperCase()} ${STOREFRONT_API_PATH}${p}: ${op.summary ?? ''}`),
  );

  const llms = [
    '# Storefront Discovery',
    '',
    '> An event-sourced discovery backend for online stores: search, autocomplete, collection browse and recommendation blocks over a Kafka log and ClickHouse aggregates.',
    '',
    'Storefronts call the API with an `X-Storefront-Access-Token`; the site, its MCP server and these files need no authentication.',
    '',
    '## API',
    '',
    `- [OpenAPI 3.1 document (JSON)](${origin}/openapi.json): every storefront operation, version 1.0.0`,
    `- [OpenAPI 3.1 document (YAML)](${origin}/openapi.yaml)`,
    `- [API catalog (RFC 9727)](${origin}/.well-known/api-catalog)`,
    `- [API reference](${origin}/docs)`,
    '',
    '## Operations',
    '',
    ...ops,
    '',
    '## Agents',
    '',
    `- [MCP server card](${origin}/.well-known/mcp): the read-only site MCP server (POST the same URL) and the authenticated store-data server`,
    `- [Agent skills index](${origin}/.well-known/agent-skills/index.json)`,
    ...skills.map((s) => `- [${s.name}](${origin}${s.path}): ${s.description}`),
    '',
    '## Articles',
    '',
    ...ARTICLES.map((a) => `- [${a.title}](${origin}/articles/${a.slug}): ${a.summary}${a.gated ? ' (gated)' : ''}`),
    '',
    '## Integrations',
    '',
    ...INTEGRATIONS.map((i) => `- ${i.name} (${i.category}): ${i.description}`),
    `- [Request an integration or correct one](${origin}/integrations)`,
    '',
    '## Optional',
    '',
    `- [Searches served](${origin}/api/searches-served): the platform-wide counter, refreshed hourly`,
    `- [Sitemap](${origin}/sitemap.xml)`,
    '',
  ].join('\n');

  const lastmod = new Map(ARTICLES.map((a) => [`/articles/${a.slug}`, a.published]));
  const sitemap = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    ...indexablePaths().map((p) => {
      const mod = lastmod.get(p);
      return `  <url><loc>${xmlEscape(origin + p)}</loc>${mod ? `<lastmod>${mod}</lastmod>` : ''}</url>`;
    }),
    '</urlset>',
    '',
  ].join('\n');

  // RFC 9727: a linkset (RFC 9264) whose anchor is the API, with its description, docs and status
  const apiCatalog = {
    linkset: [
      {
        anchor: `${origin}${STOREFRONT_API_PATH}`,
        'service-desc': [
          { href: `${origin}/openapi.json`, type: 'application/vnd.oai.openapi+json;version=3.1' },
          { href: `${origin}/openapi.yaml`, type: 'application/vnd.oai.openapi;version=3.1' },
        ],
        'service-doc': [
          { href: `${origin}/docs`, type: 'text/html' },
          { href: `${origin}/llms.txt`, type: 'text/plain' },
        ],
        'service-meta': [{ href: `${origin}/.well-known/mcp`, type: 'application/json' }],
        status: [{ href: `${origin}/readyz`, type: 'application/json' }],
      },
    ],
  };

  // Agent Skills discovery v0.2: digest = SHA-256 of the bytes served at url
  const skillsIndex = {
    $schema: 'https://schemas.agentskills.io/discovery/0.2.0/schema.json',
    skills: skills.map((s) => ({
      name: s.name,
      type: 'skill-md',
      description: s.description,
      url: s.path,
      digest: `sha256:${createHash('sha256').update(s.body).digest('hex')}`,
    })),
  };

  return {
    openapiJson: served(JSON.stringify(openapi), 'application/json; charset=utf-8'),
    openapiYaml: served(YAML.stringify(openapi, { aliasDuplicateObjects: false }), 'application/yaml; charset=utf-8'),
    llms: served(llms, 'text/plain; charset=utf-8'),
    sitemap: served(sitemap, 'application/xml; charset=utf-8'),
    apiCatalog: served(
      JSON.stringify(apiCatalog),
      'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"',
    ),
    skillsIndex: served(JSON.stringify(skillsIndex), 'application/json; charset=utf-8'),
    serverCard: served(JSON.stringify(serverCard(origin)), 'application/json; charset=utf-8'),
    storeMcpResource: served(JSON.stringify(protectedResourceMetadata(origin)), 'application/json; charset=utf-8'),
    authorizationServer: served(JSON.stringify(authorizationServerMetadata(origin)), 'application/json; charset=utf-8'),
  };
}

/**
 * The card's `name`: reverse-DNS of the host the client addressed, a slash, the server (SEP-2127:
 * `namespace/name`). An IP literal is kept as it is (`127.0.0.1/storefront-discovery-site`).
 */
export function cardName(origin: string): string {
  const host = new URL(origin).hostname.replace(/^\[|\]$/g, '');
  const ip = /^[\d.]+$/.test(host) || host.includes(':');
  const namespace = ip ? host.replaceAll(':', '-') : host.split('.').reverse().join('.');
  return `${namespace}/${SITE_MCP_NAME}`;
}

/**
 * The MCP server card. SEP-2127's identity and connection fields (`$schema`, `name` in reverse-DNS,
 * `version` = the server's version, `description` ≤ 100 characters, `title`, `websiteUrl`, `remotes[]`
 * with the supported protocol versions), SEP-1649's (`protocolVersion`, `serverInfo`, `transport`,
 * `capabilities`, `authentication`, `tools`), and the authenticated store-data server with the OAuth
 * metadata needed to connect to it (`relatedServers`). Every URL of the origin in it resolves: the
 * store-data endpoint answers the 401 of an OAuth-protected MCP server, and both metadata documents are
 * served (`protectedResourceMetadata`, `authorizationServerMetadata`).
 */
export function serverCard(origin: string): Json {
  const endpoint = `${origin}/.well-known/mcp`;
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json',
    name: cardName(origin),
    version: SITE_MCP_VERSION,
    title: 'Storefront Discovery site',
    description: 'Read-only MCP server over the public site: articles, integrations, the searches-served counter.',
    websiteUrl: `${origin}/`,
    protocolVersion: LATEST_PROTOCOL_VERSION,
    supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS],
    serverInfo: { name: SITE_MCP_NAME, title: 'Storefront Discovery site', version: SITE_MCP_VERSION },
    documentationUrl: `${origin}/llms.txt`,
    transport: { type: 'streamable-http', endpoint },
    remotes: [{ type: 'streamable-http', url: endpoint, supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS] }],
    capabilities: { tools: { listChanged: false } },
    authentication: { required: false, schemes: [] },
    tools: MCP_TOOLS.map((t) => ({ name: t.name, title: t.title, description: t.description })),
    relatedServers: [
      {
        name: 'storefront-discovery-store-data',
        description: `A store's data (catalog search, collections, configuration): OAuth 2.1, scope ${STORE_MCP_SCOPE}.`,
        transport: { type: 'streamable-http', endpoint: `${origin}${STORE_MCP_PATH}` },
        remotes: [{ type: 'streamable-http', url: `${origin}${STORE_MCP_PATH}` }],
        authentication: {
          required: true,
          schemes: ['oauth2'],
          scopes: [STORE_MCP_SCOPE],
          protectedResourceMetadata: `${origin}${STORE_MCP_RESOURCE_METADATA_PATH}`,
          authorizationServers: [origin],
          authorizationServerMetadata: `${origin}${AUTHORIZATION_SERVER_METADATA_PATH}`,
        },
      },
    ],
  };
}

/** RFC 9728 protected-resource metadata of the store-data MCP server (`resource` = its URL) */
export function protectedResourceMetadata(origin: string): Json {
  return {
    resource: `${origin}${STORE_MCP_PATH}`,
    authorization_servers: [origin],
    scopes_supported: [STORE_MCP_SCOPE],
    bearer_methods_supported: ['header'],
    resource_name: 'Storefront Discovery store data (MCP)',
    resource_documentation: `${origin}/llms.txt`,
  };
}

/**
 * RFC 8414 metadata of the authorization server (issuer: the site's origin), as the MCP authorization
 * spec has clients use it: authorization code with PKCE (S256), public clients. How tokens are issued is
 * open in the spec and not built: there is no registration endpoint and no client is registered, so the
 * authorization endpoint refuses every client and the token endpoint answers `invalid_client`.
 */
export function authorizationServerMetadata(origin: string): Json {
  return {
    issuer: origin,
    authorization_endpoint: `${origin}${OAUTH_AUTHORIZE_PATH}`,
    token_endpoint: `${origin}${OAUTH_TOKEN_PATH}`,
    scopes_supported: [STORE_MCP_SCOPE],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    service_documentation: `${origin}/llms.txt`,
  };
}
