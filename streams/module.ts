// The stream processors inside the single-node app process (chDB lives there): starts every selected
// processor and serves POST /internal/replay (streams/replay/http.ts), which the replay CLI calls.
// With STREAMS_THREAD (the default) they run on a worker thread of their own (streams/worker.ts): the read
// API's event loop then never waits behind a batch being decoded or inserted.
import { Worker } from 'node:worker_threads';
import { dbOptionsFromConfig } from '../clickhouse/client.ts';
import type { AppContext, AppModule } from '../services/app/context.ts';
import { prettyLogs } from '../services/common/logger.ts';
import { addMetricsSource, type MetricsJSON } from '../services/common/metrics.ts';
import { selectProcessors } from './registry.ts';
import { localReplayRunner, type ReplayRunner, replayRoutes, resolveReplayToken } from './replay/http.ts';
import { ReplayError, type ReplayEvent } from './replay/replay.ts';
import { startStreams } from './service.ts';
import type { FromWorker, StreamsWorkerData, ToWorker } from './worker-protocol.ts';

export const streamsModule: AppModule = {
  name: 'streams',
  async start(ctx) {
    if (!ctx.config.STREAMS_ENABLED) return;
    const processors = selectProcessors(ctx.config.STREAMS_PROCESSORS);
    let runner: () => ReplayRunner | undefined;
    if (ctx.config.STREAMS_THREAD) {
      const thread = new StreamsThread(ctx);
      // started in the background: the app (and the registry it serves) must be up for the processors
      // to decode anything, and a slow group join must not hold the HTTP server back
      const started = ctx.startInBackground(
        'streams',
        async () => {
          await thread.start();
          return thread;
        },
        { stop: () => thread.stop() },
      );
      const removeSource = addMetricsSource(() => thread.metrics());
      ctx.onClose(async () => removeSource());
      runner = () => (started.started ? thread.replay : undefined);
    } else {
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
      runner = () => {
        const s = streams.started;
        return s && localReplayRunner(ctx, s);
      };
    }
    await ctx.http.register(replayRoutes, {
      prefix: '/internal',
      token: resolveReplayToken(ctx.config),
      runner,
      logger: ctx.logger,
    });
  },
};

/** exit code of an app whose processors' thread died (EX_SOFTWARE): the launcher restarts the app */
export const STREAMS_THREAD_EXIT_CODE = 70;

/**
 * The processors' worker thread. It lives as long as the app: it retries its own start while the broker
 * or registry is unreachable (readiness says `starting` meanwhile). A thread that held a chDB session and
 * exits leaves the process's engine unusable, so a thread that dies (a fatal error in a processor) takes
 * the app down with a clear log line and exit code 70, and the launcher's supervision (or the
 * orchestrator) starts a fresh process; in-flight chunks are uncommitted and read again.
 */
class StreamsThread {
  private worker: Worker | undefined;
  private stopping = false;
  private nextId = 1;
  private readonly pending = new Map<number, (m: FromWorker) => void>();

  private readonly ctx: AppContext;

  constructor(ctx: AppContext) {
    this.ctx = ctx;
  }

  /** start the thread; resolves once its processors have started */
  start(): Promise<void> {
    const data: StreamsWorkerData = {
      config: this.ctx.config,
      db: dbOptionsFromConfig(this.ctx.config),
      lostBlocks: [...this.ctx.db.lostBlocks],
    };
    const worker = new Worker(new URL('./worker.ts', import.meta.url), {
      workerData: data,
      // the thread's stdout is a pipe: keep the app's choice of readable or JSON lines
      env: { ...process.env, LOG_FORMAT: prettyLogs() ? 'pretty' : 'json' },
    });
    this.worker = worker;
    return new Promise<void>((resolve) => {
      worker.on('message', (m: FromWorker) => {
        if (m.type === 'started') resolve();
        else if (m.type === 'retrying') {
          if (m.attempt === 1 || m.attempt % 10 === 0)
            this.ctx.logger.warn({ err: m.message, attempt: m.attempt }, 'streams: start failed; retrying');
        } else if ('id' in m) this.pending.get(m.id)?.(m);
        else if (m.type === 'stopped') this.pending.get(0)?.(m);
      });
      worker.on('error', (err) => this.ctx.logger.error({ err }, 'stream processors thread failed'));
      worker.on('exit', (code) => {
        this.worker = undefined;
        for (const [id, done] of this.pending)
          if (id !== 0)
            done({ type: 'replay-done', id, error: { message: 'the processors thread exited', status: 503 } });
        if (this.stopping) return;
        this.ctx.logger.fatal(
          { code, exitCode: STREAMS_THREAD_EXIT_CODE },
          'stream processors thread exited: stopping the app (its ClickHouse engine cannot be trusted now)',
        );
        process.exit(STREAMS_THREAD_EXIT_CODE);
      });
    });
  }

  private send(m: ToWorker): void {
    this.worker?.postMessage(m);
  }

  async metrics(): Promise<MetricsJSON> {
    if (!this.worker) return [];
    const id = this.nextId++;
    return new Promise<MetricsJSON>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve([]);
      }, 5_000);
      this.pending.set(id, (m) => {
        clearTimeout(timer);
        this.pending.delete(id);
        resolve(m.type === 'metrics' ? m.metrics : []);
      });
      this.send({ type: 'metrics', id });
    });
  }

  readonly replay: ReplayRunner = (request, emit: (e: ReplayEvent) => void) => {
    if (!this.worker) return Promise.reject(new ReplayError(503, 'the stream processors are restarting'));
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, (m) => {
        if (m.type === 'replay-event') return emit(m.event);
        if (m.type !== 'replay-done') return;
        this.pending.delete(id);
        if (m.error) reject(new ReplayError(m.error.status, m.error.message));
        else resolve();
      });
      this.send({ type: 'replay', id, request });
    });
  };

  async stop(): Promise<void> {
    this.stopping = true;
    const worker = this.worker;
    if (!worker) return;
    const stopped = new Promise<void>((resolve) => {
      this.pending.set(0, () => resolve());
      worker.once('exit', () => resolve());
    });
    this.send({ type: 'stop' });
    const inTime = await Promise.race([
      stopped.then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), 30_000).unref()),
    ]);
    // a stopped thread is left to end with the process (after the app has closed the engine): tearing
    // down a thread that holds a chDB session would unsettle the engine the app still closes
    if (inTime) worker.unref();
    else await worker.terminate();
  }
}
