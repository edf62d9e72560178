// The public site as a module of the app: mounted at the root of the app's HTTP server after the
// storefront API (its /openapi.json is the storefront API's own document, asked for once through the
// server). Submissions go to `site.events.v1` (recorder.ts): a form is answered 200 only once the log
// acknowledged its event.
import { TOPICS } from '../../schemas/topics.ts';
import type { AppContext, AppModule } from '../app/context.ts';
import { topicName } from '../common/config.ts';
import { parseTrustedProxies } from '../common/enrich.ts';
import { createValueCodec } from '../common/kafka/index.ts';
import { STOREFRONT_PREFIX } from '../storefront/plugin.ts';
import { SearchesServedCounter } from './counter.ts';
import { OpsSampler } from './ops.ts';
import { sitePlugin } from './plugin.ts';
import { createSiteRecorder } from './recorder.ts';
import { SiteRateLimiter } from './rate-limit.ts';

export const siteModule: AppModule = {
  name: 'site',
  async start(ctx: AppContext) {
    const { config } = ctx;
    const log = ctx.logger.child({ module: 'site' });
    const recorder = createSiteRecorder({
      kafka: ctx.kafka,
      codec: createValueCodec({ registryUrl: config.schemaRegistryUrl }),
      topic: topicName(config, TOPICS.site.name),
    });
    ctx.onClose(() => recorder.close());

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
      record: (e) => recorder.record(e),
      sampler,
      trustedProxies: parseTrustedProxies(config.TRUSTED_PROXIES),
    });
    ctx.announce('site', `http://${config.HOST}:${config.HTTP_PORT}/`);
  },
};
