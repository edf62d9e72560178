// The stream processors inside the single-node app process (chDB lives there): starts every selected
// processor and serves POST /internal/replay (streams/replay/http.ts), which the replay CLI calls.
import type { AppModule } from '../services/app/context.ts';
import { selectProcessors } from './registry.ts';
import { replayRoutes, resolveReplayToken } from './replay/http.ts';
import { startStreams } from './service.ts';

export const streamsModule: AppModule = {
  name: 'streams',
  async start(ctx) {
    if (!ctx.config.STREAMS_ENABLED) return;
    const processors = selectProcessors(ctx.config.STREAMS_PROCESSORS);
    // consumers join their groups in the background: the app (and the registry it serves) must be up
    // for them to decode anything, and a slow group join must not hold the HTTP server back
    const streams = ctx.startInBackground(
      'streams',
      () =>
        startStreams({
          config: ctx.config,
          db: ctx.db,
          redis: ctx.redis,
          kafka: ctx.kafka,
          logger: ctx.logger,
          processors,
          ensureTopics: false, // the composer created every topic
        }),
      { stop: (s) => s.stop() },
    );
    const token = resolveReplayToken(ctx.config);
    await ctx.http.register(replayRoutes, {
      prefix: '/internal',
      token,
      streams: () => streams.started,
      config: ctx.config,
      db: ctx.db,
      redis: ctx.redis,
      kafka: ctx.kafka,
      logger: ctx.logger,
    });
  },
};
