// The fault run's two streams that do not come through POST /beacon (used by combined.ts):
//   - orders, as the commerce platform sends them: signed webhooks (orders/create, orders/updated,
//     orders/cancelled) to POST /webhooks/shopify/<store>/…, each retried with the same webhook id and body
//     until it is answered 200 (a 503 after its Retry-After, a refused connection while the app restarts);
//   - search request events, as the read API produces them: Avro records on the requests topic through an
//     idempotent kafkajs producer with acks=all, a batch re-sent until it is acknowledged (a new producer
//     after a failure; a request id sent twice is counted once downstream, as the generator's own
//     duplicates are).
// Each sender paces itself to spread its records over the intake, keeps their order (an order's edit
// after its creation) and counts what was acknowledged.
import pino from 'pino';
import type { Order } from '../../schemas/orders.ts';
import type { RequestEvent } from '../../schemas/requests.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { signWebhook } from '../../services/catalog/webhooks.ts';
import { createValueCodec, registerPlatformSchemas } from '../../services/common/kafka/codec.ts';
import { createKafka, type Producer } from '../../services/common/kafka/index.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface SideStats {
  /** records (orders: webhooks; requests: request events) to send, and acknowledged */
  total: number;
  acked: number;
  /** attempts that failed and were retried */
  retries: number;
  /** answers other than 200/503 (orders), by status */
  otherStatus: Record<string, number>;
}

interface Pacing {
  /** records per second */
  rate: number;
  /** throws when the run is over (the launcher exited) */
  check: () => void;
}

/** the webhook payload (Shopify's order shape) of a generated order; its id is the generator's order number */
function webhookOf(o: Order, id: number): { topic: string; body: string } {
  const at = o.updated_at ?? o.created_at;
  const payload = {
    id,
    created_at: o.created_at,
    processed_at: o.created_at,
    updated_at: at, // a re-sent creation keeps its version; an edit or cancellation is later
    cancelled_at: o.cancelled ? at : null,
    currency: o.currency,
    total_price: o.total_price,
    test: false,
    customer: o.customer_id ? { id: o.customer_id } : null,
    note_attributes: o.session_id ? [{ name: '_sd_session_id', value: o.session_id }] : [],
    line_items: o.line_items.map((li, i) => ({
      id: i + 1,
      product_id: li.product_id,
      variant_id: li.variant_id,
      quantity: li.quantity,
      price: li.price,
      gift_card: false,
    })),
  };
  const topic = o.cancelled ? 'orders/cancelled' : o.updated_at ? 'orders/updated' : 'orders/create';
  return { topic, body: JSON.stringify(payload) };
}

/** Sends the orders as signed webhooks, in order, each until answered 200. */
export function orderWebhooks(opts: { base: string; storeId: string; secret: string; orders: Order[] } & Pacing) {
  const stats: SideStats = { total: opts.orders.length, acked: 0, retries: 0, otherStatus: {} };
  const numbers = new Map<string, number>();
  const run = async () => {
    const started = Date.now();
    for (const [i, o] of opts.orders.entries()) {
      let id = numbers.get(o.order_id);
      if (id === undefined) numbers.set(o.order_id, (id = numbers.size + 1));
      const { topic, body } = webhookOf(o, id);
      const headers = {
        'content-type': 'application/json',
        'x-shopify-topic': topic,
        'x-shopify-webhook-id': `fault-run-${i}`,
        'x-shopify-hmac-sha256': signWebhook(body, opts.secret),
      };
      const due = started + (i / opts.rate) * 1000;
      if (due > Date.now()) await sleep(due - Date.now());
      for (;;) {
        opts.check();
        let status = 0;
        let retryAfter = 0;
        try {
          const r = await fetch(`${opts.base}/webhooks/shopify/${opts.storeId}`, {
            method: 'POST',
            headers,
            body,
            signal: AbortSignal.timeout(60_000),
          });
          status = r.status;
          retryAfter = Number(r.headers.get('retry-after')) || 0;
          await r.text();
        } catch {
          status = 0; // refused, reset, timed out: the app restarting
        }
        if (status === 200) {
          stats.acked++;
          break;
        }
        stats.retries++;
        if (status !== 503 && status !== 0) {
          stats.otherStatus[status] = (stats.otherStatus[status] ?? 0) + 1;
          if (status >= 400 && status < 500 && status !== 429) {
            throw new Error(`webhook ${topic} answered ${status}`);
          }
        }
        await sleep(Math.min(5_000, Math.max(1, retryAfter) * 1000) * (0.75 + Math.random() * 0.5));
      }
    }
  };
  return { stats, run };
}

/** Produces the request events to the requests topic in batches, in order, each until acknowledged. */
export function requestEvents(
  opts: {
    brokers: string[];
    registryUrl: string;
    requests: { key: string; value: RequestEvent }[];
    batch: number;
  } & Pacing,
) {
  const stats: SideStats = { total: opts.requests.length, acked: 0, retries: 0, otherStatus: {} };
  const topic = TOPICS.requests.name;
  const kafka = createKafka(opts.brokers, 'faults-combined-requests', pino({ level: 'silent' }), {
    retry: { retries: 3, initialRetryTime: 200, maxRetryTime: 2_000 },
  });
  const run = async () => {
    const codec = createValueCodec({ registryUrl: opts.registryUrl });
    await registerPlatformSchemas(codec, { KAFKA_TOPIC_PREFIX: '' });
    let producer: Producer | undefined;
    const started = Date.now();
    try {
      for (let i = 0; i < opts.requests.length; i += opts.batch) {
        const slice = opts.requests.slice(i, i + opts.batch);
        const messages = slice.map((r) => ({ key: r.key, value: codec.encode(topic, r.value) }));
        const due = started + (i / opts.rate) * 1000;
        if (due > Date.now()) await sleep(due - Date.now());
        for (;;) {
          opts.check();
          try {
            if (!producer) {
              producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
              await producer.connect();
            }
            await producer.send({ topic, acks: -1, timeout: 10_000, messages });
            stats.acked += slice.length;
            break;
          } catch {
            stats.retries++;
            // a fresh producer (a new producer id): the old one's sequence state may not survive the broker
            await producer?.disconnect().catch(() => {});
            producer = undefined;
            await sleep(1_000);
          }
        }
      }
    } finally {
      await producer?.disconnect().catch(() => {});
    }
  };
  return { stats, run };
}
