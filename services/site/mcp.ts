// The site's read-only MCP server (POST /.well-known/mcp): JSON-RPC 2.0 over the Streamable HTTP transport
// of the official SDK, stateless (a server and a transport per request, JSON responses, no session).
// Before the SDK sees a request the route answers the spec's two 400s itself, each a JSON-RPC error with a
// null id: -32700 for a body that is not JSON, -32600 for an MCP-Protocol-Version header the server does not
// support (the SDK would answer -32000). Notifications are answered 202 by the SDK.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ARTICLES, articleBySlug, INTEGRATIONS, searchContent } from './content.ts';

export const SITE_MCP_NAME = 'storefront-discovery-site';
export const SITE_MCP_VERSION = '1.0.0';

export interface McpDeps {
  /** the cached searches-served counter */
  searchesServed(): { count: string; label: string } | null;
  /** the site's origin (absolute links in tool results) */
  origin: string;
}

interface ToolDef {
  name: string;
  title: string;
  description: string;
  input: z.ZodRawShape;
  run(args: Record<string, unknown>, deps: McpDeps): unknown;
}

export const MCP_TOOLS: readonly ToolDef[] = [
  {
    name: 'list_articles',
    title: 'List articles',
    description: 'Every article of the site: slug, title, summary, publication date, whether it is gated, URL.',
    input: {},
    run: (_a, deps) =>
      ARTICLES.map((a) => ({
        slug: a.slug,
        title: a.title,
        summary: a.summary,
        published: a.published,
        gated: a.gated,
        url: `${deps.origin}/articles/${a.slug}`,
      })),
  },
  {
    name: 'get_article',
    title: 'Read an article',
    description: 'One article by slug. A gated article returns its lead only, with the URL where a reader unlocks it.',
    input: { slug: z.string().min(1).max(120).describe('the article slug, as in /articles/{slug}') },
    run: (args, deps) => {
      const a = articleBySlug(String(args.slug));
      if (!a) throw new Error(`no article with slug ${JSON.stringify(args.slug)}; list_articles names them`);
      return {
        slug: a.slug,
        title: a.title,
        published: a.published,
        gated: a.gated,
        url: `${deps.origin}/articles/${a.slug}`,
        text: [...a.lead, ...(a.gated ? [] : a.body)].join('\n\n'),
        ...(a.gated ? { unlock: 'The full text is unlocked for a reader with the form on the article page.' } : {}),
      };
    },
  },
  {
    name: 'search_site',
    title: 'Search the site',
    description: 'Keyword search over the public articles and the integration catalog.',
    input: { query: z.string().min(1).max(255).describe('words to look for') },
    run: (args, deps) => searchContent(String(args.query)).map((r) => ({ ...r, url: `${deps.origin}${r.path}` })),
  },
  {
    name: 'list_integrations',
    title: 'List integrations',
    description: 'The integration catalog: name, slug, category, description.',
    input: {},
    run: () => INTEGRATIONS,
  },
  {
    name: 'get_searches_served',
    title: 'Searches served',
    description:
      'The platform-wide searches-served counter (count in billions, as a decimal string), refreshed hourly.',
    input: {},
    run: (_a, deps) => deps.searchesServed() ?? { count: null, label: 'not loaded yet' },
  },
];

function createServer(deps: McpDeps): McpServer {
  const server = new McpServer(
    { name: SITE_MCP_NAME, title: 'Storefront Discovery site', version: SITE_MCP_VERSION },
    { capabilities: { tools: { listChanged: false } } },
  );
  for (const t of MCP_TOOLS) {
    server.registerTool(
      t.name,
      {
        title: t.title,
        description: t.description,
        inputSchema: t.input,
        annotations: { readOnlyHint: true, openWorldHint: false, idempotentHint: true },
      },
      async (args: Record<string, unknown>) => {
        try {
          return { content: [{ type: 'text' as const, text: JSON.stringify(t.run(args, deps), null, 2) }] };
        } catch (err) {
          return { content: [{ type: 'text' as const, text: (err as Error).message }], isError: true };
        }
      },
    );
  }
  return server;
}

function rpcError(reply: FastifyReply, code: number, message: string): FastifyReply {
  return reply
    .code(400)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** POST /.well-known/mcp; `raw` is the body as received (the route parses it itself) */
export async function handleMcp(req: FastifyRequest, reply: FastifyReply, raw: string, deps: McpDeps) {
  const version = req.headers['mcp-protocol-version'];
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(String(version)))
    return rpcError(
      reply,
      -32600,
      `Unsupported MCP-Protocol-Version: ${String(version)} (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
    );
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return rpcError(reply, -32700, 'Parse error: the body is not valid JSON');
  }
  const server = createServer(deps);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  reply.hijack();
  reply.raw.on('close', () => {
    void transport.close();
    void server.close();
  });
  await transport.handleRequest(req.raw, reply.raw, body);
}
