// The public site as a module of the app: mounted at the root of the app's HTTP server after the
// storefront API (its /openapi.json is the storefront API's own document, asked for once through the
// server). Submissions go to `site.events.v1` through an idempotent producer (acks=all): a form is
// answered 200 only once the log acknowledged its event.
import { VALUE_SCHEMAS } from '../../schemas/avro/index.ts';
import type { SiteEvent } from '../../schemas/site.ts';
import { TOPICS } from '../../schemas/topics.ts';
import type { AppContext, AppModule } from '../app/context.ts';
import { topicName } from '../common/config.ts';
import { parseTrustedProxies } from '../common/enrich.ts';
import { createProducerClient, createValueCodec } from '../common/kafka/index.ts';
import { STOREFRONT_PREFIX } from '../storefront/plugin.ts';
import { SearchesServedCounter } from './counter.ts';
import { OpsSampler } from './ops.ts';
import { sitePlugin, StoreUnavailableError } from './plugin.ts';
import { SiteRateLimiter } from './rate-limit.ts';

/** a submission not acknowledged by the log within this time is answered 503 */
export const SITE_PRODUCE_TIMEOUT_MS = 5_000;

/** kafkajs errors that mean "the log could not be reached" (503) rather than "it refused" (502) */
export function isUnreachable(err: Error): boolean {
  const names = [err.name, (err as { cause?: Error }).cause?.name ?? ''].join(' ');
  return (
    /Connection|Timeout|NumberOfRetriesExceeded|BrokerNotFound|NotImplemented/i.test(names) ||
    /timed out|ECONNREFUSED|not reachable/i.test(err.message)
  );
}

export const siteModule: AppModule = {
  name: 'site',
  async start(ctx: AppContext) {
    const { config } = ctx;
    const log = ctx.logger.child({ module: 'site' });
    const topic = topicName(config, TOPICS.site.name);
    const codec = createValueCodec({ registryUrl: config.schemaRegistryUrl });
    // the registry is served by this process: register in the background, before the first submission
    let registered: Promise<number> | undefined;
    const register = () => {
      registered ??= codec.register(topic, VALUE_SCHEMAS.site).catch((err: Error) => {
        registered = undefined;
        throw err;
      });
      return registered;
    };
    const producer = createProducerClient(ctx.kafka, {
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 },
    });
    ctx.onClose(() => producer.close());

    async function record(event: SiteEvent): Promise<void> {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new StoreUnavailableError('the log did not acknowledge in time', true)),
          SITE_PRODUCE_TIMEOUT_MS,
        );
      });
      try {
        await Promise.race([
          (async () => {
            try {
              await register();
            } catch (err) {
              throw new StoreUnavailableError(`schema registry: ${(err as Error).message}`, true);
            }
            try {
              await producer.send([{ topic, key: event.kind, value: codec.encode(topic, event) }], {
                timeoutMs: SITE_PRODUCE_TIMEOUT_MS,
              });
            } catch (err) {
              throw new StoreUnavailableError((err as Error).message, isUnreachable(err as Error));
            }
          })(),
          timeout,
        ]);
      } finally {
        clearTimeout(timer);
      }
    }

    const counter = new SearchesServedCounter({ db: ctx.db, logger: log });
    await counter.start();
    ctx.onClose(() => counter.stop());
    const sampler = new OpsSampler();
    ctx.onClose(() => sampler.stop());
    const limiter = new SiteRateLimiter(ctx.redis, {
      onError: (err) => log.warn({ err: err.message }, 'site rate limit: redis failed (admitting)'),
    });

    await ctx.http.register(sitePlugin, {
      db: ctx.db,
      logger: log,
      storefrontDocument: async () => {
        const r = await ctx.http.inject({ method: 'GET', url: `${STOREFRONT_PREFIX}/openapi.json` });
        if (r.statusCode !== 200) throw new Error(`storefront /openapi.json answered ${r.statusCode}`);
        return r.json();
      },
      counter,
      limiter,
      record,
      sampler,
      trustedProxies: parseTrustedProxies(config.TRUSTED_PROXIES),
    });
    ctx.announce('site', `http://${config.HOST}:${config.HTTP_PORT}/`);
  },
};
