// The stream processors' worker thread (STREAMS_THREAD, the single-node default): the processors decode,
// deduplicate and insert on a thread of their own, so the read API's event loop never waits behind a
// batch. chDB is one engine per process: this thread opens its own session on the app's data directory.
// The thread talks to the app over its port: `started` once (`retrying` while the processors cannot
// start yet), metrics and replays on request.
//
// The thread lives as long as the app: a thread that held a chDB session and exits leaves the process's
// engine unusable (the app's own queries hang or fail), so a failed start is retried here, inside the
// thread, and the session is never closed by the thread (the app closes the engine when it stops).
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { openDb } from '../clickhouse/client.ts';
import type { Config } from '../services/common/config.ts';
import { createKafka } from '../services/common/kafka/index.ts';
import { createLogger } from '../services/common/logger.ts';
import { registry } from '../services/common/metrics.ts';
import { createRedis } from '../services/common/redis.ts';
import { selectProcessors } from './registry.ts';
import { localReplayRunner } from './replay/http.ts';
import { ReplayError } from './replay/replay.ts';
import { startStreams } from './service.ts';
import type { StreamsWorkerData, ToWorker } from './worker-protocol.ts';

const port = parentPort;
if (!port) throw new Error('streams/worker.ts runs as a worker thread (streams/module.ts starts it)');
const data = workerData as StreamsWorkerData;
const config: Config = data.config;
const logger = createLogger('streams', config.LOG_LEVEL);
/** nice value of the processors' thread (0-19; higher yields more to the read API) */
const STREAMS_THREAD_NICE = 10;

lowerPriority(STREAMS_THREAD_NICE);

const db = await openDb({ ...data.db, lostBlocks: new Map(data.lostBlocks) });
const redis = createRedis(config.redisUrl, { connectionName: 'app-streams' });
redis.on('error', (err) => logger.warn({ err: err.message }, 'redis error'));
const kafka = createKafka(config.kafkaBrokers, 'storefront-discovery-streams', logger);

let stopping = false;
let streams: Awaited<ReturnType<typeof startStreams>> | undefined;

port.on('message', (m: ToWorker) => {
  if (m.type === 'metrics') {
    registry.getMetricsAsJSON().then((metrics) => port.postMessage({ type: 'metrics', id: m.id, metrics }));
  } else if (m.type === 'replay') {
    const done = (error?: { message: string; status: number }) =>
      port.postMessage({ type: 'replay-done', id: m.id, error });
    if (!streams) return done({ message: 'the stream processors are still starting', status: 503 });
    localReplayRunner({ config, db, redis, kafka, logger }, streams)(m.request, (event) =>
      port.postMessage({ type: 'replay-event', id: m.id, event }),
    ).then(
      () => done(),
      (err: Error) => done({ message: err.message, status: err instanceof ReplayError ? err.status : 500 }),
    );
  } else if (m.type === 'stop' && !stopping) {
    stopping = true;
    Promise.resolve(streams?.stop())
      .then(() => redis.disconnect())
      .finally(() => port.postMessage({ type: 'stopped' }));
  }
});

for (let attempt = 1; !streams && !stopping; attempt++) {
  try {
    const started = await startStreams({
      config,
      db,
      redis,
      kafka,
      logger,
      processors: selectProcessors(config.STREAMS_PROCESSORS),
      ensureTopics: false, // the app created every topic
    });
    // stopped while starting: the app is going away
    if (stopping) await started.stop();
    else streams = started;
  } catch (err) {
    port.postMessage({ type: 'retrying', message: (err as Error).message, attempt });
    await new Promise((r) => setTimeout(r, Math.min(1_000 * attempt, 10_000)));
  }
}
if (streams) port.postMessage({ type: 'started' });

/**
 * Run this thread at a lower scheduling priority (Linux: a thread is a task with its own nice value) so
 * that, with every core busy, the read API's thread gets the CPU first and the processors take what is
 * left, as they did when they ran in slices of the read API's event loop; an idle core is theirs anyway.
 */
function lowerPriority(nice: number): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, nice);
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'streams: could not lower the thread priority');
  }
}
