// Site error bodies: RFC 9457 problem details (`type`, `title`, `status`, `detail`, `instance`) plus the
// spec's `error.code` (stable), `error.message` and `error.hint`, and `error.field` when one input field
// is at fault. Sent as application/problem+json. Every refusal of the site goes through `SiteError`.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';

export const PROBLEM_TYPE_BASE = '/problems/';

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  405: 'Method Not Allowed',
  413: 'Content Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

export class SiteError extends Error {
  readonly status: number;
  readonly code: string;
  readonly hint: string;
  readonly field?: string;
  readonly headers: Record<string, string>;
  constructor(
    status: number,
    code: string,
    message: string,
    hint: string,
    opts: { field?: string; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.hint = hint;
    this.field = opts.field;
    this.headers = opts.headers ?? {};
  }
}

/** the submission store (the log) refused or could not take the submission (answered 502 / 503, or 500 where the spec says so) */
export class StoreUnavailableError extends Error {
  /** true: the log was unreachable or timed out (503, retry later); false: it answered with an error (502) */
  readonly unreachable: boolean;
  constructor(message: string, unreachable: boolean) {
    super(message);
    this.unreachable = unreachable;
  }
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  error: { code: string; message: string; hint: string; field?: string };
}

export function problemBody(e: SiteError, instance: string): ProblemBody {
  return {
    type: `${PROBLEM_TYPE_BASE}${e.code}`,
    title: TITLES[e.status] ?? 'Error',
    status: e.status,
    detail: e.message,
    instance,
    error: { code: e.code, message: e.message, hint: e.hint, ...(e.field ? { field: e.field } : {}) },
  };
}

export function sendProblem(req: FastifyRequest, reply: FastifyReply, e: SiteError): FastifyReply {
  for (const [k, v] of Object.entries(e.headers)) reply.header(k, v);
  return reply
    .code(e.status)
    .type('application/problem+json; charset=utf-8')
    .send(JSON.stringify(problemBody(e, req.url.split('?')[0])));
}

/** the first failing field of a form as a 400 naming it */
export function invalidField(error: z.ZodError, raw: Record<string, unknown>): SiteError {
  const issue = error.issues[0];
  const field = issue.path.map(String).join('.') || '(body)';
  const missing = issue.path.length === 1 && raw[String(issue.path[0])] === undefined;
  const message = missing ? `${field} is required` : `${field} ${issue.message}`;
  return new SiteError(400, missing ? 'missing_field' : 'invalid_field', message, `Correct ${field} and send again.`, {
    field,
  });
}

export function methodNotAllowed(allow: string[]): SiteError {
  return new SiteError(
    405,
    'method_not_allowed',
    `This endpoint answers ${allow.join(', ')} only.`,
    `Send the request with ${allow.join(' or ')}.`,
    { headers: { allow: allow.join(', ') } },
  );
}
