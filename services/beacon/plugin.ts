// POST /beacon: storefront engagement events in, validated, enriched and deduplicated, into Kafka.
//
// A request is answered 201 only after Kafka acknowledged every record it produced (acks=all,
// idempotent producer): the accepted events on `storefront.events.v1` and the dropped ones, with their
// reason, on `storefront.events.rejected.v1`. When Kafka does not acknowledge in time the answer is
// 503 + Retry-After and nothing of the request counts as stored (the client retries; event_id
// deduplication keeps a retry from counting twice).
//
// Mountable alone (tests, a dedicated intake process) or inside the app composer (module.ts).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BlockList } from 'node:net';
import type { ServerFields } from '../../schemas/events.ts';
import type { StoreDirectory, StoreRecord } from '../store-config/api.ts';
import { clientIp, geoFromIp, inferChannel, parseUserAgent } from '../common/enrich.ts';
import type { EventDedup } from './dedup.ts';
import { beaconMetrics as m } from './metrics.ts';
import type { FieldError, Prepared, PrepareInput, Rejection } from './prepare.ts';
import { ProduceUnavailableError } from './produce-queue.ts';

export type { FieldError, Rejection } from './prepare.ts';

export interface BeaconPluginOptions {
  directory: Pick<StoreDirectory, 'authenticate'>;
  dedup: EventDedup;
  /**
   * validation, enrichment and encoding of one request's body, inline or in a worker (prepare-pool.ts);
   * the result's `produce` sends it to Kafka (through a produce queue here or in the worker)
   */
  prepare: (input: PrepareInput) => Promise<Prepared> | Prepared;
  /** physical topic names */
  topics: { events: string; rejected: string };
  trustedProxies: BlockList;
  bodyLimitBytes: number;
}

/** The 201 body. `accepted` counts events stored now or by an earlier delivery (duplicates). */
export interface BeaconResponse {
  accepted: number;
  duplicates: number;
  rejected: number;
  rejections: Rejection[];
}

declare module 'fastify' {
  interface FastifyRequest {
    beaconStore?: StoreRecord;
  }
}

const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'POST, OPTIONS',
  'access-control-allow-headers': 'Content-Type, X-Storefront-Access-Token, X-Requested-With',
  'access-control-max-age': '86400',
};

function unavailable(reply: FastifyReply, cause: string, retryAfterSeconds: number) {
  m.unavailable.inc({ cause });
  m.requests.inc({ status: '503' });
  return reply
    .code(503)
    .header('retry-after', String(retryAfterSeconds))
    .type('application/json; charset=utf-8')
    .send({
      error: {
        code: 'unavailable',
        message:
          'Events could not be stored right now; nothing from this request was accepted. Retry after the indicated delay.',
        fields: [],
      },
      errors: [],
    });
}

function batchError(reply: FastifyReply, status: number, code: string, message: string, fields: FieldError[]) {
  m.requests.inc({ status: String(status) });
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send({ errors: fields, error: { code, message, fields } });
}

export async function beaconPlugin(app: FastifyInstance, opts: BeaconPluginOptions) {
  const { directory, dedup } = opts;

  // Every content type is read as JSON: navigator.sendBeacon sends strings as text/plain (which also
  // spares the page a CORS preflight), fetch sends application/json. The text is parsed by prepare
  // (possibly in a worker); a parse failure is a 422 like every other batch-shape error.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: opts.bodyLimitBytes }, (_req, raw, done) =>
    done(null, raw),
  );

  app.setErrorHandler((err: FastifyError, req, reply) => {
    const status = err.statusCode ?? 500;
    if (status === 413 || err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return batchError(reply, 413, 'payload_too_large', `The body exceeds ${opts.bodyLimitBytes} bytes.`, [
        { path: '', message: `at most ${opts.bodyLimitBytes} bytes` },
      ]);
    }
    if (status >= 400 && status < 500) {
      return batchError(reply, status === 415 ? 415 : 422, 'invalid_body', err.message, [
        { path: '', message: err.message },
      ]);
    }
    req.log.error({ err }, 'beacon: unexpected error');
    return batchError(reply, 500, 'internal_error', 'Internal error.', []);
  });

  app.addHook('onRequest', async (_req, reply) => {
    reply.headers(CORS_HEADERS);
  });

  app.options('/beacon', async (_req, reply) => reply.code(204).send());

  const authenticate = async (req: FastifyRequest, reply: FastifyReply) => {
    const header = req.headers['x-storefront-access-token'];
    const query = (req.query as Record<string, unknown> | undefined)?.token;
    const token = typeof header === 'string' && header !== '' ? header : typeof query === 'string' ? query : undefined;
    const auth = directory.authenticate(token);
    if (!auth.ok) {
      m.requests.inc({ status: String(auth.status) });
      return reply
        .code(auth.status)
        .type('application/json; charset=utf-8')
        .send({ error: { code: auth.code, message: auth.message, fields: [] } });
    }
    req.beaconStore = auth.store;
  };

  app.post('/beacon', { bodyLimit: opts.bodyLimitBytes, onRequest: authenticate }, async (req, reply) => {
    const store = req.beaconStore!;
    const storeId = store.storeId;
    const receivedMs = Date.now();
    const receivedAt = new Date(receivedMs).toISOString();
    const ua = req.headers['user-agent'];
    const agent = parseUserAgent(ua);
    const geo = geoFromIp(clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], opts.trustedProxies));
    const requestedWith = req.headers['x-requested-with'];
    const server: ServerFields = {
      store_id: storeId,
      received_at: receivedAt,
      geo_country: geo.country,
      geo_region: geo.region,
      geo_city: geo.city,
      device_type: agent.device_type,
      browser: agent.browser,
      os: agent.os,
      is_bot: agent.is_bot,
      inferred_channel: inferChannel(typeof requestedWith === 'string' ? requestedWith : undefined, ua),
    };

    // validate, enrich and encode (inline or in a worker)
    let prepared: Prepared;
    try {
      prepared = await opts.prepare({ text: typeof req.body === 'string' ? req.body : '', server, receivedMs });
    } catch (err) {
      req.log.error({ err }, 'beacon: prepare failed');
      return unavailable(reply, 'error', 1);
    }
    if (!prepared.ok) return batchError(reply, 422, 'invalid_batch', prepared.message, prepared.fields);
    const { eventIds, rejections, batchDuplicates, clamped } = prepared;
    for (const r of rejections) m.rejected.inc({ store: storeId, reason: r.code });
    if (clamped > 0) m.clamped.inc({ store: storeId }, clamped);
    if (prepared.slow > 0) m.slowPath.inc(prepared.slow);

    // deduplicate against what Kafka already acknowledged, produce the rest with the rejections
    const seenBefore = eventIds.length > 0 ? await dedup.check(storeId, eventIds) : undefined;
    let storedDuplicates = 0;
    const duplicate = seenBefore?.states.map((s) => s === 'duplicate');
    if (duplicate) for (const d of duplicate) if (d) storedDuplicates++;

    try {
      await prepared.produce(duplicate);
    } catch (err) {
      // nothing was marked as seen (marks are written only after the acknowledgement): a retry is produced
      if (!(err instanceof ProduceUnavailableError)) req.log.error({ err }, 'beacon: produce failed unexpectedly');
      return err instanceof ProduceUnavailableError
        ? unavailable(reply, err.reason, err.retryAfterSeconds)
        : unavailable(reply, 'error', 1);
    }
    await seenBefore?.commit();

    const produced = eventIds.length - storedDuplicates;
    if (produced > 0) m.accepted.inc({ store: storeId }, produced);
    if (storedDuplicates > 0) m.duplicates.inc({ store: storeId, scope: 'stored' }, storedDuplicates);
    if (batchDuplicates > 0) m.duplicates.inc({ store: storeId, scope: 'batch' }, batchDuplicates);
    m.requests.inc({ status: '201' });
    const body: BeaconResponse = {
      accepted: eventIds.length + batchDuplicates,
      duplicates: storedDuplicates + batchDuplicates,
      rejected: rejections.length,
      rejections,
    };
    return reply.code(201).send(body);
  });
}
