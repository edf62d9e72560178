// The background load of the demo store, phase by phase, with progress in the log and in
// DATA_DIR/demo-store.json: configuration → catalog → session replay → image pre-rendering. Each phase
// is idempotent; a run that stops anywhere (crash, Ctrl-C) resumes at the next start. Runs in a worker
// thread of the app (services/demo/generator/worker.ts) so the CPU-heavy generation and normalization never stall
// the app's event loop.
import path from 'node:path';
import type { Config } from '../../common/config.ts';
import { createKafka } from '../../common/kafka/index.ts';
import type { Logger } from '../../common/logger.ts';
import { createRedis } from '../../common/redis.ts';
import { openConfigWriter, writerOptionsFromConfig } from '../../store-config/writer.ts';
import { TopicCatalogSink } from './catalog-sink.ts';
import { generateDemoStore } from './generator.ts';
import { ImageCache } from './images.ts';
import { applyDemoConfig, type DemoState, loadCatalog, replaySessions, writeDemoState } from './load.ts';

export interface DemoRunOptions {
  config: Config;
  state: DemoState;
  /** the app's HTTP address (beacon and read API) */
  listenUrl: string;
  logger: Logger;
  signal: AbortSignal;
}

export async function runDemoLoad(o: DemoRunOptions): Promise<void> {
  const { config, logger: log, signal } = o;
  const st = o.state;
  const save = () => writeDemoState(config.dataDir, st);
  const started = Date.now();
  if (st.progress.done) {
    await prerender(o);
    return;
  }
  const store = generateDemoStore({
    seed: st.seed,
    products: st.products,
    sessions: st.sessions,
    anchorMs: st.anchorMs,
    imageBaseUrl: st.imageBaseUrl,
  });
  log.info(
    { products: store.productCount, sessions: store.sessionCount, ms: Date.now() - started },
    'demo: generated the store',
  );

  if (!st.progress.config) {
    const writer = openConfigWriter({ ...writerOptionsFromConfig(config, log), clientId: 'demo-loader' });
    try {
      const n = await applyDemoConfig(writer, st.storeId, store);
      st.progress.config = true;
      await save();
      log.info({ items: n }, 'demo: configuration written (markets, sort orders, blocks, redirects, synonyms, B2B)');
    } finally {
      await writer.close().catch(() => undefined);
    }
  }
  signal.throwIfAborted();

  const kafka = createKafka(config.kafkaBrokers, 'demo-loader', log);
  const redis = createRedis(config.redisUrl, { connectionName: 'demo-loader' });
  redis.on('error', (err) => log.warn({ err: err.message }, 'demo loader: redis error'));
  const sink = new TopicCatalogSink({ kafka, redis, config, logger: log });
  try {
    if (!st.progress.catalog) {
      const t0 = Date.now();
      let lastLog = 0;
      if (st.progress.catalogLines > 0)
        log.info({ lines: st.progress.catalogLines }, 'demo: resuming the catalog load');
      const total = await loadCatalog(sink, st.storeId, store, {
        signal,
        batch: 500,
        concurrency: 4,
        skip: st.progress.catalogLines,
        onProgress: async (committed) => {
          if (Date.now() - lastLog < 3_000) return;
          lastLog = Date.now();
          st.progress.catalogLines = committed;
          await save();
          log.info(
            {
              lines: committed,
              products: sink.counts.products,
              of: store.productCount,
              prices: sink.counts.pricing,
              inventory: sink.counts.inventory,
            },
            'demo: loading the catalog…',
          );
        },
      });
      st.progress.catalogLines = total;
      st.progress.catalog = true;
      await save();
      log.info({ lines: total, records: sink.counts, seconds: (Date.now() - t0) / 1000 }, 'demo: catalog loaded');
    }
    if (!st.progress.done) {
      st.progress.replayStartMs ??= Date.now();
      await save();
      const t0 = Date.now();
      const stats = await replaySessions({
        baseUrl: o.listenUrl,
        token: st.token,
        storeId: st.storeId,
        store,
        sink,
        replayStartMs: st.progress.replayStartMs,
        from: st.progress.replayed,
        concurrency: config.DEMO_REPLAY_CONCURRENCY,
        signal,
        logger: log,
        onProgress: async (replayed) => {
          if (replayed === st.progress.replayed) return;
          st.progress.replayed = replayed;
          await save();
          log.info({ sessions: replayed, of: store.sessionCount }, 'demo: replaying shopper sessions…');
        },
      });
      st.progress.done = true;
      await save();
      log.info({ ...stats, seconds: (Date.now() - t0) / 1000 }, 'demo: shopper sessions replayed');
    }
  } finally {
    await sink.close().catch(() => undefined);
    redis.disconnect();
  }
  await prerender(o);
  log.info({ seconds: (Date.now() - started) / 1000 }, 'demo: the demo store is fully loaded');
}

async function prerender(o: DemoRunOptions): Promise<void> {
  if (o.config.DEMO_IMAGES <= 0) return;
  const n = await new ImageCache(path.join(o.config.dataDir, 'demo-images')).prerender(o.config.DEMO_IMAGES);
  o.logger.info({ images: n }, 'demo: product images rendered');
}
