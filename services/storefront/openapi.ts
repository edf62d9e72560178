// The storefront API's OpenAPI 3.1 document, generated from the same zod schemas the routes validate
// with (schemas/storefront.ts) through zod 4's JSON Schema output (draft 2020-12, which is OpenAPI 3.1's
// schema dialect). Schemas carrying `.meta({ id })` become `components/schemas/<id>`.
import { z } from 'zod';
import { ContextSchema, ErrorBodySchema, IdentitySchema, PaginationSchema } from '../../schemas/storefront.ts';

export interface Operation {
  method: 'get' | 'post';
  /** path under the base URL, OpenAPI style (`/search/{searchQuery}/execute`) */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** query parameters: an object schema, one parameter per key */
  query?: z.ZodObject;
  /** path parameters: an object schema */
  params?: z.ZodObject;
  body?: z.ZodType;
  /** status → response schema */
  responses: Record<number, { description: string; schema?: z.ZodType }>;
  /** no token needed */
  public?: boolean;
}

type Json = Record<string, unknown>;

const COMPONENT_REF = '#/components/schemas/';

/** zod → JSON Schema with `$defs` hoisted into `components` and refs rewritten */
function toSchema(schema: z.ZodType, io: 'input' | 'output', components: Record<string, Json>): Json {
  const js = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any', reused: 'inline' }) as Json;
  const defs = (js.$defs ?? {}) as Record<string, Json>;
  delete js.$defs;
  delete js.$schema;
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (node && typeof node === 'object') {
      const out: Json = {};
      for (const [k, v] of Object.entries(node as Json)) {
        if (k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/'))
          out[k] = COMPONENT_REF + v.slice('#/$defs/'.length);
        else out[k] = rewrite(v);
      }
      return out;
    }
    return node;
  };
  for (const [name, def] of Object.entries(defs)) components[name] ??= rewrite(def) as Json;
  // a top-level schema with an id is itself hoisted
  const id = z.globalRegistry.get(schema)?.id;
  const body = rewrite(js) as Json;
  if (id) {
    delete body.id;
    components[id] ??= body;
    return { $ref: COMPONENT_REF + id };
  }
  return body;
}

const STANDARD_HEADERS = {
  'x-request-id': {
    description: 'ULID of the request (= attributionToken where the response has one).',
    schema: { type: 'string' },
  },
  'x-service-build': { description: 'Build version that served the request.', schema: { type: 'string' } },
};

const ERROR_RESPONSES: Record<number, string> = {
  401: 'Missing or invalid X-Storefront-Access-Token.',
  402: 'The store is suspended.',
  403: 'B2B location without a customer of its company.',
  413: 'Body larger than the limit.',
  415: 'Body not sent as application/json.',
  422: 'Invalid request; error.fields names the offending fields.',
  429: 'Rate limit exceeded; see Retry-After.',
};

export function buildOpenApi(operations: readonly Operation[], info: { version: string; serverUrl: string }): Json {
  const components: Record<string, Json> = {};
  const paths: Record<string, Json> = {};
  const errorRef = toSchema(ErrorBodySchema, 'output', components);
  // the shared request objects every body endpoint uses, documented once
  for (const shared of [IdentitySchema, ContextSchema, PaginationSchema]) toSchema(shared, 'input', components);
  for (const op of operations) {
    const parameters: Json[] = [];
    for (const [where, obj] of [
      ['path', op.params],
      ['query', op.query],
    ] as const) {
      if (!obj) continue;
      for (const [name, field] of Object.entries(obj.shape)) {
        const schema = toSchema(field as z.ZodType, 'input', components);
        const description = (schema as Json).description;
        delete (schema as Json).description;
        parameters.push({
          name,
          in: where,
          required: where === 'path' || !(field as z.ZodType).safeParse(undefined).success,
          ...(description ? { description } : {}),
          schema,
        });
      }
    }
    if (!op.public)
      parameters.push({
        name: 'Accept',
        in: 'header',
        required: false,
        schema: { type: 'string', default: 'application/json' },
      });
    const responses: Json = {};
    for (const [status, r] of Object.entries(op.responses)) {
      responses[status] = {
        description: r.description,
        headers: STANDARD_HEADERS,
        ...(r.schema ? { content: { 'application/json': { schema: toSchema(r.schema, 'output', components) } } } : {}),
      };
    }
    const errorStatuses = op.public
      ? []
      : Object.keys(ERROR_RESPONSES)
          .map(Number)
          .filter((s) => op.body || (s !== 413 && s !== 415 && s !== 403));
    for (const s of errorStatuses) {
      responses[String(s)] ??= {
        description: ERROR_RESPONSES[s],
        headers:
          s === 429
            ? { ...STANDARD_HEADERS, 'retry-after': { description: 'Seconds to wait.', schema: { type: 'integer' } } }
            : STANDARD_HEADERS,
        content: { 'application/json': { schema: errorRef } },
      };
    }
    paths[op.path] ??= {};
    (paths[op.path] as Json)[op.method] = {
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      ...(op.public ? { security: [] } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(op.body
        ? {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: toSchema(op.body, 'input', components) } },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Storefront Discovery API',
      version: info.version,
      description:
        'Product and content discovery for a storefront: search, autocomplete, browse, recommendations. Every response carries x-request-id and x-service-build; every error body is { error: { code, message, fields } }.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [{ url: info.serverUrl }],
    security: [{ storefrontToken: [] }],
    paths,
    components: {
      schemas: components,
      securitySchemes: { storefrontToken: { type: 'apiKey', in: 'header', name: 'X-Storefront-Access-Token' } },
    },
  };
}
