// The storefront API's OpenAPI 3.1 document, generated from the registered routes: @fastify/swagger
// collects every route of the storefront plugin, fastify-type-provider-zod's `jsonSchemaTransform` turns
// each route's zod schemas into JSON Schema (draft 2020-12, OpenAPI 3.1's dialect) and schemas carrying
// `.meta({ id })` into `components/schemas/<id>` references. What every route shares is added here, once,
// from what the frame guarantees: the error responses with the error body, `x-request-id` and
// `x-service-build` on every response, `Retry-After` on 429, the token (none on `config.public` routes).
// A route declares the OpenAPI links of its responses next to it (`config.links`: where a value of the
// response feeds another operation's request); they are emitted on those responses (stateful clients and
// schemathesis' stateful phase follow them).
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ContextSchema, ErrorBodySchema, IdentitySchema, PaginationSchema } from '../../schemas/storefront.ts';

type Json = Record<string, unknown>;
type Transform = typeof jsonSchemaTransform;
type TransformObject = typeof jsonSchemaTransformObject;

const STANDARD_HEADERS: Json = {
  'x-request-id': {
    type: 'string',
    description: 'ULID of the request (= attributionToken where the response has one).',
  },
  'x-service-build': { type: 'string', description: 'Build version that served the request.' },
};
const RETRY_AFTER: Json = { 'retry-after': { type: 'integer', description: 'Seconds to wait.' } };

/** the frame's refusals, by status; 403/413/415 only concern endpoints with a body */
const ERROR_RESPONSES: Record<number, { description: string; bodyOnly?: boolean }> = {
  401: { description: 'Missing or invalid X-Storefront-Access-Token.' },
  402: { description: 'The store is suspended.' },
  403: { description: 'B2B location without a customer of its company.', bodyOnly: true },
  413: { description: 'Body larger than the limit.', bodyOnly: true },
  415: { description: 'Body not sent as application/json.', bodyOnly: true },
  422: { description: 'Invalid request; error.fields names the offending fields.' },
  429: { description: 'Rate limit exceeded; see Retry-After.' },
};

/** the shared request objects every body endpoint uses and the error body, documented even when unused */
const SHARED_COMPONENTS = {
  output: [ErrorBodySchema],
  input: [IdentitySchema, ContextSchema, PaginationSchema],
};

const json = (schema: unknown) => ({ 'application/json': { schema } });

/**
 * An OpenAPI link from one response of a route to another operation: what the target's request takes
 * from this exchange, as runtime expressions (`$response.body#/search_id`, `$request.path.searchQuery`).
 */
export interface ResponseLink {
  /** the target operation */
  operationId: string;
  description: string;
  /** target parameter (`searchQuery`, or located: `path.searchQuery`) → expression */
  parameters?: Record<string, string>;
  /** target body fields → expressions (merged into the target's body) */
  requestBody?: Record<string, string>;
}
/** a route's links: response status → link name → link */
export type RouteLinks = Partial<Record<number, Record<string, ResponseLink>>>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** the OpenAPI links of this route's responses (emitted on them in the document) */
    links?: RouteLinks;
  }
}

/** carries a route's links from `transform` (which sees the route) to `transformObject` (which places them) */
const LINKS = 'x-route-links';

/** One route: the frame's shared responses and headers around the route's own declaration. */
const transform: Transform = (doc) => {
  const schema = (doc.schema ?? {}) as Json;
  const isPublic = doc.route.config?.public === true;
  const declared = (schema.response ?? {}) as Record<string, unknown>;
  const response: Record<string, unknown> = {};
  for (const [status, s] of Object.entries(declared)) {
    // a bare zod schema: its description (else "OK") describes the response
    response[status] = s instanceof z.ZodType ? { description: s.description ?? 'OK', content: json(s) } : (s as Json);
  }
  if (!isPublic) {
    for (const [status, e] of Object.entries(ERROR_RESPONSES)) {
      if (e.bodyOnly && !schema.body) continue;
      response[status] ??= { description: e.description, content: json(ErrorBodySchema) };
    }
  }
  const out = jsonSchemaTransform({ ...doc, schema: { ...schema, response } });
  const result = out.schema as Json;
  const responses = result.response as Record<string, Json>;
  if (Object.keys(responses).length === 0) responses['200'] = { description: 'OK' };
  for (const [status, r] of Object.entries(responses))
    r.headers = status === '429' ? { ...STANDARD_HEADERS, ...RETRY_AFTER } : STANDARD_HEADERS;
  // @fastify/swagger copies `x-` keys of the schema onto the operation; transformObject moves them onto
  // the responses (it does not carry a response's `links` itself)
  if (doc.route.config?.links) result[LINKS] = doc.route.config.links;
  if (isPublic) result.security = [];
  else
    result.headers ??= {
      type: 'object',
      properties: { Accept: { type: 'string', default: 'application/json' } },
    };
  return out;
};

function walk(node: unknown, visit: (obj: Json) => void): void {
  if (Array.isArray(node)) for (const n of node) walk(n, visit);
  else if (node && typeof node === 'object') {
    visit(node as Json);
    for (const v of Object.values(node as Json)) walk(v, visit);
  }
}

const REF = '#/components/schemas/';

/**
 * The document: the components the paths reference (and the shared ones), nothing else from zod's global
 * registry (which holds every module's schemas); an input-side component (`<id>Input`, the type
 * provider's name) keeps its plain `<id>` when no output-side component of that name is in the document.
 */
const transformObject: TransformObject = (input) => {
  const doc = jsonSchemaTransformObject(input) as unknown as Json & { components: { schemas: Record<string, Json> } };
  const all = doc.components.schemas;
  const idOf = (s: z.ZodType) => z.globalRegistry.get(s)?.id as string;
  const pending = [...SHARED_COMPONENTS.output.map(idOf), ...SHARED_COMPONENTS.input.map((s) => `${idOf(s)}Input`)];
  walk(doc.paths, (o) => {
    if (typeof o.$ref === 'string' && o.$ref.startsWith(REF)) pending.push(o.$ref.slice(REF.length));
  });
  const kept = new Set<string>();
  while (pending.length > 0) {
    const name = pending.pop() as string;
    if (kept.has(name) || !all[name]) continue;
    kept.add(name);
    walk(all[name], (o) => {
      if (typeof o.$ref === 'string' && o.$ref.startsWith(REF)) pending.push(o.$ref.slice(REF.length));
    });
  }
  const rename = (name: string) =>
    name.endsWith('Input') && !kept.has(name.slice(0, -'Input'.length)) ? name.slice(0, -'Input'.length) : name;
  const schemas: Record<string, Json> = {};
  for (const name of [...kept].sort()) schemas[rename(name)] = all[name];
  placeLinks(doc.paths as Record<string, Record<string, Json>>);
  const out = { ...doc, jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema' } as Json & {
    components: Json;
  };
  out.components = { ...doc.components, schemas };
  walk([out.paths, schemas], (o) => {
    if (typeof o.$ref === 'string' && o.$ref.startsWith(REF)) o.$ref = REF + rename(o.$ref.slice(REF.length));
  });
  return out as ReturnType<TransformObject>;
};

/** each operation's declared links onto its responses; a link to an operation not in the document throws */
function placeLinks(paths: Record<string, Record<string, Json>>): void {
  const operations = new Set<string>();
  for (const item of Object.values(paths))
    for (const op of Object.values(item)) if (typeof op.operationId === 'string') operations.add(op.operationId);
  for (const item of Object.values(paths))
    for (const op of Object.values(item)) {
      const links = op[LINKS] as RouteLinks | undefined;
      if (!links) continue;
      delete op[LINKS];
      const responses = op.responses as Record<string, Json>;
      for (const [status, byName] of Object.entries(links)) {
        if (!responses[status]) throw new Error(`${op.operationId}: a link on undeclared response ${status}`);
        for (const link of Object.values(byName ?? {}))
          if (!operations.has(link.operationId))
            throw new Error(`${op.operationId}: link to unknown operation ${link.operationId}`);
        responses[status].links = byName;
      }
    }
}

/**
 * Register the document generator on the storefront plugin's instance, before its routes (it collects
 * the routes registered after it in this encapsulation context). `app.swagger()` then returns the
 * document; paths are relative to the plugin's prefix, which is the document's server URL.
 */
export async function registerOpenApi(app: FastifyInstance, info: { version: string }): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Storefront Discovery API',
        version: info.version,
        description:
          'Product and content discovery for a storefront: search, autocomplete, browse, recommendations. Every response carries x-request-id and x-service-build; every error body is { error: { code, message, fields } }.',
      },
      servers: [{ url: app.prefix || '/' }],
      security: [{ storefrontToken: [] }],
      components: {
        securitySchemes: { storefrontToken: { type: 'apiKey', in: 'header', name: 'X-Storefront-Access-Token' } },
      },
    },
    transform,
    transformObject,
  });
}
