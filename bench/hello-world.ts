// The autocomplete benchmark's baselines, each a bare Fastify process with one route (GET /):
//
//   plain            { hello: 'world' }: the baseline the goals are stated against
//   BURN_US=n        the same route spinning n µs of CPU per request first: where the goals' frontier lies on
//                    this machine (how much work per request a route may do and still reach them)
//   BODY_BYTES=n     the same route answering a prebuilt JSON string of n bytes: the floor for an endpoint
//                    whose answers are that large (writing the bytes, not computing them)
//   BROKERS=…        the same route emitting one request event per request through the read API's own
//                    emitter (schemas/requests.ts event, Avro, idempotent producer, acks=all) into the real
//                    broker: the cost of the one piece of work every storefront request must do
//
// Prints "listening" on stdout once it accepts connections. Run by bench/autocomplete.ts.
import Fastify from 'fastify';
import { VALUE_SCHEMAS } from '../schemas/avro/index.ts';
import { createValueCodec } from '../services/common/kafka/codec.ts';
import { requestEvent } from '../schemas/requests.ts';
import { newUlid } from '../services/common/ids.ts';
import { createKafka } from '../services/common/kafka/index.ts';
import { createLogger } from '../services/common/logger.ts';
import { createRequestEventEmitter } from '../services/storefront/request-events.ts';

const port = Number(process.env.PORT);
const burnUs = Number(process.env.BURN_US ?? 0);
const bodyBytes = Number(process.env.BODY_BYTES ?? 0);
const body = bodyBytes > 0 ? JSON.stringify({ pad: 'x'.repeat(Math.max(0, bodyBytes - 10)) }) : null;
const brokers = process.env.BROKERS ? process.env.BROKERS.split(',') : null;

let emit: ((storeId: string) => void) | null = null;
if (brokers) {
  const logger = createLogger('bench-hello-world', 'warn');
  const topic = process.env.TOPIC ?? 'storefront.requests.v1';
  const codec = createValueCodec({ registryUrl: process.env.REGISTRY_URL ?? '' });
  await codec.register(topic, VALUE_SCHEMAS.requests);
  const emitter = createRequestEventEmitter({
    kafka: createKafka(brokers, 'bench-hello-world', logger),
    codec,
    topic,
    logger,
  });
  emit = (storeId) =>
    emitter.emit(
      requestEvent({
        request_id: newUlid(),
        store_id: storeId,
        kind: 'autocomplete',
        occurred_at: new Date().toISOString(),
        device_type: 'desktop',
        status_code: 200,
        latency_ms: 0.1,
        query: 'he',
        normalized_query: 'he',
        context_json: '{}',
      }),
    );
}

const app = Fastify();
app.get('/', async (_req, reply) => {
  if (burnUs > 0) {
    const until = process.hrtime.bigint() + BigInt(burnUs * 1000);
    while (process.hrtime.bigint() < until);
  }
  emit?.('bench-hello-world');
  if (body) return reply.type('application/json; charset=utf-8').send(body);
  return { hello: 'world' };
});
await app.listen({ port, host: '127.0.0.1' });
process.stdout.write('listening\n');
process.on('SIGTERM', () => process.exit(0));
