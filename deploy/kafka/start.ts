// `npm run kafka:cluster [-- --brokers N]`: Apache Kafka (from Maven Central, fetched once) as an N-node
// KRaft cluster on 127.0.0.1:19092… (default 3 nodes), data under DATA_DIR (default ./data). Prints the
// bootstrap list once every node is up; Ctrl-C stops every node with a controlled shutdown.
import { parseArgs } from 'node:util';
import { KAFKA_VERSION, startKafkaCluster } from './cluster.ts';

const { values } = parseArgs({
  options: {
    brokers: { type: 'string', default: '3' },
    port: { type: 'string', default: '19092' },
    heap: { type: 'string', default: '256' },
  },
});
const n = Number(values.brokers);
const port = Number(values.port);
if (!Number.isInteger(n) || n < 1 || n > 9) {
  process.stderr.write('--brokers: a whole number from 1 to 9\n');
  process.exit(2);
}
const dataDir = process.env.DATA_DIR || './data';
process.stdout.write(`Starting Apache Kafka ${KAFKA_VERSION}: ${n} KRaft node(s), data in ${dataDir}…\n`);
// Ctrl-C while the nodes start: stop the ones already running, then leave
const starting = new AbortController();
const abort = () => starting.abort();
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, abort);
let cluster: Awaited<ReturnType<typeof startKafkaCluster>>;
try {
  cluster = await startKafkaCluster({
    brokers: n,
    ports: Array.from({ length: n }, (_, i) => port + i),
    dataDir,
    heapMb: Number(values.heap),
    signal: starting.signal,
  });
} catch (err) {
  process.stderr.write(`\n${(err as Error).message}\n`);
  process.exit(starting.signal.aborted ? 0 : 1);
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.off(sig, abort);
process.stdout.write(
  `\nApache Kafka ${KAFKA_VERSION} is up (cluster ${cluster.clusterId}, ${n} node(s)${
    n >= 3 ? ', replication factor 3, min.insync.replicas=2' : ''
  }):\n  KAFKA_BROKERS=${cluster.bootstrap}\n\nRun the stack on it:\n  KAFKA_BROKERS=${cluster.bootstrap} npm start\n\nPress Ctrl-C to stop.\n`,
);

let stopping = false;
const shutdown = async (why: string, code: number) => {
  if (stopping) return;
  stopping = true;
  process.stdout.write(`\n${why}: stopping Apache Kafka…\n`);
  await cluster.stop();
  process.stdout.write('stopped.\n');
  process.exit(code);
};
process.on('SIGINT', () => void shutdown('SIGINT', 0));
process.on('SIGTERM', () => void shutdown('SIGTERM', 0));
process.on('SIGHUP', () => void shutdown('SIGHUP', 0));
cluster.exited.then(({ node, code, signal }) =>
  shutdown(`Kafka node ${node} exited unexpectedly (code ${code}, signal ${signal})`, 1),
);
