// The Confluent Schema Registry REST API (the subset Avro clients and operators use), as a Fastify
// plugin. Bodies and answers are `application/vnd.schemaregistry.v1+json`; plain JSON is accepted too.
// Errors are Confluent's `{error_code, message}` with the matching HTTP status.
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { counter } from '../common/metrics.ts';
import { COMPATIBILITY_LEVELS, isCompatibilityLevel } from './compat.ts';
import { errors, parseVersion, RegistryHttpError, type SchemaRegistryService } from './service.ts';

export const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';

const SchemaBody = z.object({
  schema: z.string({ error: 'schema: expected the schema as a JSON string' }).min(1, 'schema: must not be empty'),
  schemaType: z.string().optional(),
  references: z.array(z.unknown()).optional(),
});
const ConfigBody = z.object({
  compatibility: z.string().optional(),
  compatibilityLevel: z.string().optional(),
});

type Q = { deleted?: string; permanent?: string; defaultToGlobal?: string; verbose?: string };
const flag = (v: string | undefined) => v === 'true';

function schemaBody(body: unknown): string {
  const r = SchemaBody.safeParse(body ?? {});
  if (!r.success) {
    const i = r.error.issues[0];
    throw errors.invalidSchema(
      `Invalid request body: ${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message.replace(/^schema: /, '')}`,
    );
  }
  if (r.data.schemaType !== undefined && r.data.schemaType.toUpperCase() !== 'AVRO') {
    throw errors.invalidSchema(
      `Invalid schema: schemaType ${r.data.schemaType} is not supported by this registry (AVRO only)`,
    );
  }
  if (r.data.references && r.data.references.length > 0) {
    throw errors.invalidSchema('Invalid schema: schema references are not supported by this registry');
  }
  return r.data.schema;
}

function compatibilityBody(body: unknown) {
  const r = ConfigBody.safeParse(body ?? {});
  const level = r.success ? (r.data.compatibility ?? r.data.compatibilityLevel) : undefined;
  const upper = typeof level === 'string' ? level.toUpperCase() : level;
  if (!isCompatibilityLevel(upper)) {
    throw errors.invalidCompatibility(
      `Invalid compatibility level${level === undefined ? ': body.compatibility is required' : ` ${JSON.stringify(level)}`}. Valid values are: ${COMPATIBILITY_LEVELS.join(', ')}`,
    );
  }
  return upper;
}

function schemaId(v: string): number {
  if (!/^\d{1,10}$/.test(v) || Number(v) < 1 || Number(v) > 2 ** 31 - 1)
    throw errors.schemaNotFound(`Schema ${v} not found`);
  return Number(v);
}

export async function schemaRegistryRoutes(app: FastifyInstance, opts: { service: SchemaRegistryService }) {
  const svc = opts.service;
  const jsonParser = app.getDefaultJsonParser('error', 'error');
  // Confluent clients send the vnd types; curl users often send none or form encoding
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (req, body, done) => {
    if (body === '' || body === undefined) return done(null, undefined);
    jsonParser(req, body as string, done);
  });

  const requests = counter('schema_registry_requests_total', 'Schema registry HTTP requests', [
    'method',
    'route',
    'status',
  ]);
  app.addHook('onResponse', async (req, reply) => {
    requests.inc({ method: req.method, route: req.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) });
  });

  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header('content-type', CONTENT_TYPE);
    return payload;
  });

  app.setErrorHandler((err: FastifyError | RegistryHttpError, req, reply: FastifyReply) => {
    if (err instanceof RegistryHttpError) {
      if (err.status >= 500) req.log.error({ err: err.message }, 'schema registry store error');
      return reply.code(err.status).send({ error_code: err.errorCode, message: err.message });
    }
    const status = (err as FastifyError).statusCode ?? 500;
    if (status >= 500) {
      req.log.error({ err }, 'schema registry internal error');
      return reply.code(500).send({ error_code: 50001, message: 'Error in the backend data store' });
    }
    if ((err as FastifyError).code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return reply.code(413).send({ error_code: 413, message: 'Request body is too large' });
    }
    return reply.code(status).send({ error_code: status, message: err.message });
  });
  app.setNotFoundHandler((_req, reply) => reply.code(404).send({ error_code: 404, message: 'HTTP 404 Not Found' }));

  app.get('/', async () => ({}));
  app.get('/schemas/types', async () => ['AVRO']);
  app.get('/mode', async () => ({ mode: 'READWRITE' }));

  // ------------------------------------------------------------------------------ subjects
  app.get<{ Querystring: Q }>('/subjects', async (req) => svc.subjects(flag(req.query.deleted)));

  app.get<{ Params: { subject: string }; Querystring: Q }>('/subjects/:subject/versions', async (req) =>
    svc.versions(req.params.subject, flag(req.query.deleted)),
  );

  app.post<{ Params: { subject: string } }>('/subjects/:subject/versions', async (req) => {
    const { id } = await svc.register(req.params.subject, schemaBody(req.body));
    return { id };
  });

  app.post<{ Params: { subject: string }; Querystring: Q }>('/subjects/:subject', async (req) => {
    const v = svc.lookup(req.params.subject, schemaBody(req.body), flag(req.query.deleted));
    return { subject: v.subject, id: v.id, version: v.version, schema: v.schema };
  });

  app.get<{ Params: { subject: string; version: string }; Querystring: Q }>(
    '/subjects/:subject/versions/:version',
    async (req) => {
      const v = svc.getVersion(req.params.subject, parseVersion(req.params.version), flag(req.query.deleted));
      return { subject: v.subject, version: v.version, id: v.id, schema: v.schema };
    },
  );

  app.get<{ Params: { subject: string; version: string }; Querystring: Q }>(
    '/subjects/:subject/versions/:version/schema',
    async (req, reply) => {
      const v = svc.getVersion(req.params.subject, parseVersion(req.params.version), flag(req.query.deleted));
      return reply.send(v.schema);
    },
  );

  app.get<{ Params: { subject: string; version: string } }>(
    '/subjects/:subject/versions/:version/referencedby',
    async (req) => {
      svc.getVersion(req.params.subject, parseVersion(req.params.version));
      return [];
    },
  );

  app.delete<{ Params: { subject: string; version: string }; Querystring: Q }>(
    '/subjects/:subject/versions/:version',
    async (req) => svc.deleteVersion(req.params.subject, parseVersion(req.params.version), flag(req.query.permanent)),
  );

  app.delete<{ Params: { subject: string }; Querystring: Q }>('/subjects/:subject', async (req) =>
    svc.deleteSubject(req.params.subject, flag(req.query.permanent)),
  );

  // ------------------------------------------------------------------------------ schemas by id
  app.get<{ Params: { id: string } }>('/schemas/ids/:id', async (req) => ({
    schema: svc.schemaById(schemaId(req.params.id)),
  }));
  app.get<{ Params: { id: string } }>('/schemas/ids/:id/schema', async (req, reply) =>
    reply.send(svc.schemaById(schemaId(req.params.id))),
  );
  app.get<{ Params: { id: string }; Querystring: Q }>('/schemas/ids/:id/versions', async (req) =>
    svc.usagesOf(schemaId(req.params.id), flag(req.query.deleted)),
  );
  app.get<{ Params: { id: string }; Querystring: Q }>('/schemas/ids/:id/subjects', async (req) => [
    ...new Set(svc.usagesOf(schemaId(req.params.id), flag(req.query.deleted)).map((u) => u.subject)),
  ]);

  // ------------------------------------------------------------------------------ config
  app.get('/config', async () => ({ compatibilityLevel: svc.globalCompatibility() }));
  app.put('/config', async (req) => {
    const level = compatibilityBody(req.body);
    await svc.setGlobalCompatibility(level);
    return { compatibility: level };
  });
  app.get<{ Params: { subject: string }; Querystring: Q }>('/config/:subject', async (req) => ({
    compatibilityLevel: svc.subjectCompatibility(req.params.subject, flag(req.query.defaultToGlobal)),
  }));
  app.put<{ Params: { subject: string } }>('/config/:subject', async (req) => {
    const level = compatibilityBody(req.body);
    await svc.setSubjectCompatibility(req.params.subject, level);
    return { compatibility: level };
  });
  app.delete<{ Params: { subject: string } }>('/config/:subject', async (req) => ({
    compatibilityLevel: await svc.deleteSubjectCompatibility(req.params.subject),
  }));

  // ------------------------------------------------------------------------------ compatibility
  app.post<{ Params: { subject: string; version: string }; Querystring: Q }>(
    '/compatibility/subjects/:subject/versions/:version',
    async (req) => {
      const problems = svc.testCompatibility(
        req.params.subject,
        parseVersion(req.params.version),
        schemaBody(req.body),
      );
      return flag(req.query.verbose)
        ? { is_compatible: problems.length === 0, messages: problems }
        : { is_compatible: problems.length === 0 };
    },
  );
  app.post<{ Params: { subject: string }; Querystring: Q }>(
    '/compatibility/subjects/:subject/versions',
    async (req) => {
      const problems = svc.testCompatibility(req.params.subject, undefined, schemaBody(req.body));
      return flag(req.query.verbose)
        ? { is_compatible: problems.length === 0, messages: problems }
        : { is_compatible: problems.length === 0 };
    },
  );
}
