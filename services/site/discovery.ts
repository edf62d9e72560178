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

export interface Served {
  body: Buffer;
  type: string;
  etag: string;
}

function served(body: string | Buffer, type: string): Served {
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
  };
}

/**
 * The MCP server card (SEP-1649 shape: `$schema`, `version`, `protocolVersion`, `serverInfo`, `transport`,
 * `capabilities`, `authentication`, `tools`; plus SEP-2127's `name`/`remotes` with the supported protocol
 * versions), and the authenticated store-data server with the OAuth metadata needed to connect to it.
 */
export function serverCard(origin: string): Json {
  const endpoint = `${origin}/.well-known/mcp`;
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/mcp-server-card/v1.json',
    version: '1.0',
    name: SITE_MCP_NAME,
    protocolVersion: LATEST_PROTOCOL_VERSION,
    supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS],
    serverInfo: { name: SITE_MCP_NAME, title: 'Storefront Discovery site', version: SITE_MCP_VERSION },
    description:
      'Read-only MCP server over the public site: articles, integrations and the searches-served counter. No authentication. Store data is on the authenticated server below.',
    documentationUrl: `${origin}/llms.txt`,
    transport: { type: 'streamable-http', endpoint },
    remotes: [{ type: 'streamable-http', url: endpoint, supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS] }],
    capabilities: { tools: { listChanged: false } },
    authentication: { required: false, schemes: [] },
    tools: MCP_TOOLS.map((t) => ({ name: t.name, title: t.title, description: t.description })),
    relatedServers: [
      {
        name: 'storefront-discovery-store-data',
        description: "A store's data (catalog search, collections, configuration): OAuth 2.1, scope mcp:use.",
        transport: { type: 'streamable-http', endpoint: `${origin}${STORE_MCP_PATH}` },
        authentication: {
          required: true,
          schemes: ['oauth2'],
          scopes: ['mcp:use'],
          protectedResourceMetadata: `${origin}/.well-known/oauth-protected-resource${STORE_MCP_PATH}`,
          authorizationServers: [origin],
          authorizationServerMetadata: `${origin}/.well-known/oauth-authorization-server`,
        },
      },
    ],
  };
}
