// Submissions into the log: each accepted form is one SiteEvent on `site.events.v1`, produced through an
// idempotent producer with acks=all, and the form is answered 200 only once Kafka acknowledged it — so a
// mailer or CRM downstream can be down without losing anything. A failure is a StoreUnavailableError:
// unreachable (connection refused, timeout, the registry down: 503, retry) or refused (the broker
// answered an error: 502).
import { VALUE_SCHEMAS } from '../../schemas/avro/index.ts';
import type { SiteEvent } from '../../schemas/site.ts';
import { createProducerClient, type Kafka, type ValueCodec } from '../common/kafka/index.ts';
import { StoreUnavailableError } from './problem.ts';

/** a submission not acknowledged by the log within this time is answered 503 */
export const SITE_PRODUCE_TIMEOUT_MS = 5_000;

/** whether an error of the Kafka client means "the log could not be reached" rather than "it refused" */
export function isUnreachable(err: unknown): boolean {
  for (let e = err as (Error & { cause?: unknown; code?: string }) | undefined; e; e = e.cause as typeof e) {
    if (/Connection|Timeout|BrokerNotFound/i.test(e.name ?? '')) return true;
    if (/ECONNREFUSED|ECONNRESET|ETIMEDOUT|timed out|not reachable|Connection error/i.test(e.message ?? ''))
      return true;
  }
  return false;
}

export interface SiteRecorder {
  record(event: SiteEvent): Promise<void>;
  close(): Promise<void>;
}

export function createSiteRecorder(opts: {
  kafka: Kafka;
  codec: ValueCodec;
  topic: string;
  timeoutMs?: number;
}): SiteRecorder {
  const { codec, topic } = opts;
  const timeoutMs = opts.timeoutMs ?? SITE_PRODUCE_TIMEOUT_MS;
  const producer = createProducerClient(opts.kafka, {
    retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1_000 },
  });
  // registered on the first submission (the app serves the registry itself), again after a failure
  let registered: Promise<number> | undefined;
  const register = () => {
    registered ??= codec.register(topic, VALUE_SCHEMAS.site).catch((err: Error) => {
      registered = undefined;
      throw err;
    });
    return registered;
  };

  async function produce(event: SiteEvent): Promise<void> {
    try {
      await register();
    } catch (err) {
      throw new StoreUnavailableError(`schema registry: ${(err as Error).message}`, true);
    }
    try {
      await producer.send([{ topic, key: event.kind, value: codec.encode(topic, event) }], { timeoutMs });
    } catch (err) {
      throw new StoreUnavailableError((err as Error).message, isUnreachable(err));
    }
  }

  return {
    async record(event) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new StoreUnavailableError(`the log did not acknowledge within ${timeoutMs} ms`, true)),
          timeoutMs,
        );
      });
      try {
        await Promise.race([produce(event), timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => producer.close(),
  };
}
