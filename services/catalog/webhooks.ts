// Commerce-platform webhooks → catalog topics and commerce.orders.v1.
//
//   POST /webhooks/shopify/:storeId                      topic in X-Shopify-Topic (one URL for every topic)
//   POST /webhooks/shopify/:storeId/:resource/:action    topic in the path (must match the header if both)
//
// - The raw body is read by a content-type parser scoped to this plugin and verified before anything
//   else: X-Shopify-Hmac-Sha256 = base64(HMAC-SHA256(secret, raw body)), compared in constant time;
//   missing or wrong → 401. The secret is the store's `webhook_secret` configuration item when the store
//   has one, else the platform-wide CATALOG_WEBHOOK_SECRET (see module.ts).
// - Redelivery: X-Shopify-Webhook-Id is remembered in Redis (CATALOG_WEBHOOK_DEDUP_HOURS, default 48 h)
//   once the records were acknowledged; a repeat is answered 200 without producing. The downstream
//   projections are versioned, so a repeat that slips through (concurrent deliveries) changes nothing.
// - 200 only after Kafka acknowledged every record (acks=all); Kafka not answering → 503 + Retry-After.
// - Bad input is a 4xx with the offending field paths, never a 5xx: 400 invalid_json, 415, 413,
//   422 invalid_payload / unsupported_topic, 404 unknown_store.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { DeleteInput, ShopifyInventoryLevelInput } from '../../schemas/catalog.ts';
import { isStoreId } from '../../schemas/fields.ts';
import type { StoreDirectory } from '../store-config/api.ts';
import type { Logger } from '../common/logger.ts';
import { counter } from '../common/metrics.ts';
import {
  type FieldIssue,
  formatPath,
  normalizeCollection,
  normalizeContent,
  normalizeInventoryLevel,
  normalizeMetaobject,
  normalizeOrder,
  normalizeProduct,
  quoteBigIntegers,
} from './normalize.ts';
import { type OutRecord, out, ProduceTimeoutError, type WriteResult } from './writer.ts';

const webhooksTotal = counter('catalog_webhooks_total', 'Catalog webhooks by topic and outcome', ['topic', 'outcome']);

/** Supported webhook topics and what each produces. */
export const WEBHOOK_TOPICS = [
  'products/create',
  'products/update',
  'products/delete',
  'collections/create',
  'collections/update',
  'collections/delete',
  'inventory_levels/update',
  'inventory_levels/connect',
  'inventory_levels/disconnect',
  'orders/create',
  'orders/updated',
  'orders/cancelled',
  'orders/paid',
  'orders/fulfilled',
  'orders/edited',
  'articles/create',
  'articles/update',
  'articles/delete',
  'pages/create',
  'pages/update',
  'pages/delete',
  'metaobjects/create',
  'metaobjects/update',
  'metaobjects/delete',
] as const;
export type WebhookTopic = (typeof WEBHOOK_TOPICS)[number];

export interface WebhookWriter {
  write(records: OutRecord[]): Promise<WriteResult>;
}

export interface WebhookSecrets {
  /** secrets that may sign webhooks of a store (several during a rotation); empty = none configured */
  secretsFor(storeId: string): string[];
}

export interface WebhookPluginOptions {
  writer: WebhookWriter;
  secrets: WebhookSecrets;
  redis: Redis;
  /** when given, webhooks for stores it does not know are refused with 404 */
  directory?: Pick<StoreDirectory, 'getStore'>;
  bodyLimitBytes: number;
  dedupHours: number;
  logger: Logger;
}

const WEBHOOK_ID = /^[A-Za-z0-9._:-]{1,128}$/;

type Body = { raw: Buffer };

function sendError(reply: FastifyReply, status: number, code: string, message: string, fields: FieldIssue[] = []) {
  return reply.code(status).type('application/json; charset=utf-8').send({ error: { code, message, fields } });
}

/** base64(HMAC-SHA256(secret, body)) equals `given` for one of `secrets` (constant time per secret). */
export function verifyHmac(raw: Buffer, given: string | undefined, secrets: string[]): boolean {
  if (!given || secrets.length === 0) return false;
  const provided = Buffer.from(given.trim(), 'base64');
  let ok = false;
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(raw).digest();
    // compare every secret, and compare equal-length buffers only (timingSafeEqual requires it)
    const same = provided.length === expected.length && timingSafeEqual(provided, expected);
    ok = ok || same;
  }
  return ok;
}

export function signWebhook(raw: Buffer | string, secret: string): string {
  return createHmac('sha256', secret).update(raw).digest('base64');
}

type Built = { ok: true; records: OutRecord[]; note?: string } | { ok: false; issues: FieldIssue[] };

/** A verified payload of `topic` → the records to write. */
export function recordsForTopic(topic: WebhookTopic, storeId: string, payload: unknown, now: string): Built {
  const opts = { source: 'webhook' as const, now };
  const [resource, action] = topic.split('/') as [string, string];
  if (action === 'delete' || topic === 'inventory_levels/disconnect') {
    if (topic === 'inventory_levels/disconnect') {
      const r = ShopifyInventoryLevelInput.safeParse(payload);
      if (!r.success)
        return { ok: false, issues: r.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message })) };
      return { ok: true, records: [out.inventoryDeleted(storeId, r.data)] };
    }
    const d = DeleteInput.safeParse(payload);
    if (!d.success)
      return { ok: false, issues: d.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message })) };
    const id = d.data.id;
    switch (resource) {
      case 'products':
        return { ok: true, records: [out.productDeleted(storeId, id)] };
      case 'collections':
        return { ok: true, records: out.collectionDeleted(storeId, id) };
      case 'articles':
        return { ok: true, records: [out.contentDeleted(storeId, 'article', id)] };
      case 'pages':
        return { ok: true, records: [out.contentDeleted(storeId, 'page', id)] };
      case 'metaobjects':
        return { ok: true, records: [out.metaobjectDeleted(storeId, id)] };
    }
  }
  switch (resource) {
    case 'products': {
      const r = normalizeProduct(storeId, payload, opts);
      if (!r.ok) return r;
      return { ok: true, records: [out.product(r.value.product), ...r.value.inventory.map(out.inventory)] };
    }
    case 'collections': {
      const r = normalizeCollection(storeId, payload, opts);
      if (!r.ok) return r;
      return {
        ok: true,
        records: [out.collection(r.value.collection), ...(r.value.members ? [out.collection(r.value.members)] : [])],
      };
    }
    case 'inventory_levels': {
      const r = normalizeInventoryLevel(storeId, payload, opts);
      if (!r.ok) return r;
      return { ok: true, records: [out.inventory(r.value)] };
    }
    case 'orders': {
      const r = normalizeOrder(storeId, payload, { ...opts, cancelled: topic === 'orders/cancelled' });
      if (!r.ok) return r;
      if (r.value === null) return { ok: true, records: [], note: r.skipped };
      return { ok: true, records: [out.order(r.value)] };
    }
    case 'articles':
    case 'pages': {
      const r = normalizeContent(storeId, resource === 'articles' ? 'article' : 'page', payload, opts);
      if (!r.ok) return r;
      return { ok: true, records: [out.content(r.value)] };
    }
    case 'metaobjects': {
      const r = normalizeMetaobject(storeId, payload, opts);
      if (!r.ok) return r;
      return { ok: true, records: [out.metaobject(r.value)] };
    }
  }
  return { ok: false, issues: [{ path: '(topic)', message: `unsupported topic ${topic}` }] };
}

export async function webhookPlugin(app: FastifyInstance, opts: WebhookPluginOptions) {
  const jsonParse = app.getDefaultJsonParser('error', 'ignore');
  const dedupSeconds = Math.round(opts.dedupHours * 3600);

  // HMAC needs the exact bytes: every content type is read raw here (this plugin only)
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: opts.bodyLimitBytes }, (_req, raw, done) => {
    done(null, { raw: raw as Buffer } satisfies Body);
  });

  app.setErrorHandler((err: FastifyError, req, reply) => {
    const status = err.statusCode ?? 500;
    if (status === 413 || err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return sendError(reply, 413, 'payload_too_large', `The body exceeds ${opts.bodyLimitBytes} bytes.`, [
        { path: '(body)', message: `at most ${opts.bodyLimitBytes} bytes` },
      ]);
    }
    if (status >= 400 && status < 500) return sendError(reply, status, 'invalid_request', err.message);
    opts.logger.error({ err, reqId: req.id }, 'catalog webhook: unexpected error');
    return sendError(reply, 500, 'internal_error', 'Internal error.');
  });

  const handle = async (
    req: FastifyRequest<{ Params: { platform: string; storeId: string; resource?: string; action?: string } }>,
    reply: FastifyReply,
  ) => {
    const { platform, storeId } = req.params;
    if (platform !== 'shopify')
      return sendError(
        reply,
        404,
        'unknown_platform',
        `Webhooks of platform ${JSON.stringify(platform)} are not supported; supported: shopify.`,
      );
    if (!isStoreId(storeId))
      return sendError(reply, 404, 'unknown_store', 'No such store.', [
        { path: 'storeId', message: 'expected 1-64 characters of A-Z a-z 0-9 _ -' },
      ]);

    const header = (name: string) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    const body = req.body as Body | undefined;
    const raw = body?.raw ?? Buffer.alloc(0);

    // 1. authenticity before anything is interpreted
    if (!verifyHmac(raw, header('x-shopify-hmac-sha256'), opts.secrets.secretsFor(storeId))) {
      webhooksTotal.inc({ topic: 'unknown', outcome: 'unauthorized' });
      return sendError(reply, 401, 'invalid_signature', 'Missing or invalid X-Shopify-Hmac-Sha256 signature.', [
        { path: 'X-Shopify-Hmac-Sha256', message: 'does not match the body' },
      ]);
    }
    if (opts.directory && !opts.directory.getStore(storeId))
      return sendError(reply, 404, 'unknown_store', `Store ${storeId} does not exist.`);

    // 2. which topic
    const headerTopic = header('x-shopify-topic')?.trim().toLowerCase();
    const pathTopic =
      req.params.resource && req.params.action
        ? `${req.params.resource}/${req.params.action}`.toLowerCase()
        : undefined;
    if (headerTopic && pathTopic && headerTopic !== pathTopic) {
      return sendError(
        reply,
        422,
        'topic_mismatch',
        `The URL names topic ${pathTopic} but X-Shopify-Topic is ${headerTopic}.`,
        [{ path: 'X-Shopify-Topic', message: `expected ${pathTopic}` }],
      );
    }
    const topic = pathTopic ?? headerTopic;
    if (!topic)
      return sendError(reply, 422, 'missing_topic', 'X-Shopify-Topic is required.', [
        { path: 'X-Shopify-Topic', message: 'required' },
      ]);
    if (!(WEBHOOK_TOPICS as readonly string[]).includes(topic)) {
      webhooksTotal.inc({ topic: 'unsupported', outcome: 'rejected' });
      return sendError(
        reply,
        422,
        'unsupported_topic',
        `Topic ${topic} is not handled; supported: ${WEBHOOK_TOPICS.join(', ')}.`,
        [{ path: 'X-Shopify-Topic', message: 'unsupported' }],
      );
    }

    // 3. a redelivery of a webhook already written changes nothing
    const webhookId = header('x-shopify-webhook-id')?.trim();
    const dedupKey = webhookId && WEBHOOK_ID.test(webhookId) ? `sd:catalog:webhook:${storeId}:${webhookId}` : undefined;
    if (dedupKey) {
      let seen: number;
      try {
        seen = await opts.redis.exists(dedupKey);
      } catch (err) {
        opts.logger.warn({ err: (err as Error).message, reqId: req.id }, 'catalog webhook: redis unavailable');
        reply.header('retry-after', '5');
        return sendError(reply, 503, 'unavailable', 'Temporarily unavailable; retry later.');
      }
      if (seen) {
        webhooksTotal.inc({ topic, outcome: 'duplicate' });
        return reply.code(200).send({ status: 'duplicate', topic, records: 0 });
      }
    }

    // 4. parse and normalize
    const parsed = await new Promise<{ ok: true; value: unknown } | { ok: false; message: string }>((resolve) => {
      if (raw.length === 0) return resolve({ ok: false, message: 'empty body' });
      jsonParse(req, quoteBigIntegers(raw.toString('utf8')), (err, value) =>
        resolve(err ? { ok: false, message: err.message } : { ok: true, value }),
      );
    });
    if (!parsed.ok) {
      webhooksTotal.inc({ topic, outcome: 'invalid' });
      return sendError(reply, 400, 'invalid_json', `The body is not valid JSON: ${parsed.message}`, [
        { path: '(body)', message: parsed.message },
      ]);
    }
    const built = recordsForTopic(topic as WebhookTopic, storeId, parsed.value, new Date().toISOString());
    if (!built.ok) {
      webhooksTotal.inc({ topic, outcome: 'invalid' });
      return sendError(
        reply,
        422,
        'invalid_payload',
        `The ${topic} payload is invalid: ${built.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
        built.issues,
      );
    }

    // 5. produce; 200 only once Kafka acknowledged
    let result: WriteResult;
    try {
      result = await opts.writer.write(built.records);
    } catch (err) {
      webhooksTotal.inc({ topic, outcome: 'unavailable' });
      opts.logger.warn(
        { err: (err as Error).message, topic, storeId, reqId: req.id },
        'catalog webhook: produce failed',
      );
      reply.header('retry-after', '5');
      const message = err instanceof ProduceTimeoutError ? err.message : 'The event log is unavailable; retry later.';
      return sendError(reply, 503, 'unavailable', message);
    }
    if (dedupKey) await opts.redis.set(dedupKey, '1', 'EX', dedupSeconds).catch(() => {});
    webhooksTotal.inc({ topic, outcome: 'accepted' });
    return reply.code(200).send({
      status: 'accepted',
      topic,
      records: result.produced,
      stale: result.stale.length,
      ...(built.note ? { note: built.note } : {}),
    });
  };

  app.post('/:platform/:storeId', handle);
  app.post('/:platform/:storeId/:resource/:action', handle);
}
