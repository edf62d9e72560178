// The stream processors inside the single-node app process (chDB lives there): starts every selected
// processor and serves POST /internal/replay (streams/replay/http.ts), which the replay CLI calls.
import type { AppModule } from '../services/app/context.ts';
import { selectProcessors } from './registry.ts';
import { replayRoutes, resolveReplayToken } from './replay/http.ts';
import { type Streams, startStreams } from './service.ts';

export const streamsModule: AppModule = {
  name: 'streams',
  async start(ctx) {
    if (!ctx.config.STREAMS_ENABLED) return;
    const processors = selectProcessors(ctx.config.STREAMS_PROCESSORS);
    let streams: Streams | undefined;
    let failure: Error | undefined;
    let closing = false;
    // consumers join their groups in the background: the app (and the registry it serves) must be up
    // for them to decode anything, and a slow group join must not hold the HTTP server back
    const starting = (async () => {
      for (let attempt = 1; !closing; attempt++) {
        try {
          streams = await startStreams({
            config: ctx.config,
            db: ctx.db,
            redis: ctx.redis,
            kafka: ctx.kafka,
            logger: ctx.logger,
            processors,
            ensureTopics: false, // the composer created every topic
          });
          failure = undefined;
          return;
        } catch (err) {
          failure = err as Error;
          ctx.logger.error({ err: failure.message, attempt }, 'stream processors failed to start; retrying');
          await new Promise((r) => setTimeout(r, Math.min(1_000 * attempt, 10_000)));
        }
      }
    })();
    ctx.addReadinessCheck('streams', async () => {
      if (!streams) throw new Error(failure ? `not started: ${failure.message}` : 'starting');
    });
    const token = resolveReplayToken(ctx.config);
    await ctx.http.register(replayRoutes, {
      prefix: '/internal',
      token,
      streams: () => streams,
      config: ctx.config,
      db: ctx.db,
      redis: ctx.redis,
      kafka: ctx.kafka,
      logger: ctx.logger,
    });
    ctx.onClose(async () => {
      closing = true;
      await starting;
      await streams?.stop();
    });
  },
};
