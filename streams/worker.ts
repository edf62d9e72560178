// The stream processors' worker thread (STREAMS_THREAD, the single-node default): the processors decode,
// deduplicate and insert on a thread of their own, so the read API's event loop never waits behind a
// batch. chDB is one engine per process: this thread opens its own session on the app's data directory.
// The thread talks to the app over its port: `started`/`failed` once, metrics and replays on request.
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

const db = await openDb({ ...data.db, lostBlocks: new Map(data.lostBlocks) });
const redis = createRedis(config.redisUrl, { connectionName: 'app-streams' });
redis.on('error', (err) => logger.warn({ err: err.message }, 'redis error'));
const kafka = createKafka(config.kafkaBrokers, 'storefront-discovery-streams', logger);

async function close(): Promise<void> {
  redis.disconnect();
  await db.close();
}

let streams: Awaited<ReturnType<typeof startStreams>>;
try {
  streams = await startStreams({
    config,
    db,
    redis,
    kafka,
    logger,
    processors: selectProcessors(config.STREAMS_PROCESSORS),
    ensureTopics: false, // the app created every topic
  });
} catch (err) {
  port.postMessage({ type: 'failed', message: (err as Error).message });
  await close();
  process.exit(1);
}
const replay = localReplayRunner({ config, db, redis, kafka, logger }, streams);

port.on('message', (m: ToWorker) => {
  if (m.type === 'metrics') {
    registry.getMetricsAsJSON().then((metrics) => port.postMessage({ type: 'metrics', id: m.id, metrics }));
  } else if (m.type === 'replay') {
    replay(m.request, (event) => port.postMessage({ type: 'replay-event', id: m.id, event })).then(
      () => port.postMessage({ type: 'replay-done', id: m.id }),
      (err: Error) =>
        port.postMessage({
          type: 'replay-done',
          id: m.id,
          error: { message: err.message, status: err instanceof ReplayError ? err.status : 500 },
        }),
    );
  } else if (m.type === 'stop') {
    streams
      .stop()
      .then(close)
      .finally(() => port.postMessage({ type: 'stopped' }));
  }
});
port.postMessage({ type: 'started' });
