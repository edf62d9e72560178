// `npm start`: the single-node stack with its URLs printed; Ctrl-C stops everything cleanly.
import { loadConfigOrExit } from '../../services/common/config.ts';
import { StackError, startStack } from './stack.ts';

const config = loadConfigOrExit();
process.stdout.write(`Starting the single-node stack (data in ${config.dataDir})…\n`);

let stack: Awaited<ReturnType<typeof startStack>>;
try {
  stack = await startStack(config);
} catch (err) {
  process.stderr.write(`\n${err instanceof StackError ? err.message : (err as Error).stack}\n`);
  process.exit(1);
}

const u = stack.urls;
const lines = [
  '',
  'Storefront discovery is up:',
  `  HTTP API (storefront, beacon, site)  ${u.http}`,
  u.storefront ? `  Storefront API                       ${u.storefront}` : undefined,
  u.schemaRegistry ? `  Schema registry                      ${u.schemaRegistry}` : undefined,
  u.clickhouse
    ? `  ClickHouse SQL (read-only)           ${u.clickhouse}   e.g. curl '${u.clickhouse}/?query=SELECT%201'`
    : undefined,
  u.kafka ? `  Kafka (embedded broker)              ${u.kafka}` : undefined,
  config.embedded.kafka ? undefined : `  Kafka (KAFKA_BROKERS)                ${config.kafkaBrokers.join(',')}`,
  u.redis ? `  Redis                                ${u.redis}` : undefined,
  `  Readiness                            ${u.readyz}`,
  `  Metrics                              ${u.metrics}`,
  u.demoToken ? `\nDemo store access token:\n  X-Storefront-Access-Token: ${u.demoToken}` : undefined,
  u.demoCurl ? `Try it:\n  ${u.demoCurl}` : undefined,
  u.shop ? `Demo shop (storefront SDK):\n  ${u.shop}` : undefined,
  '',
  'Press Ctrl-C to stop.',
  '',
].filter((l) => l !== undefined);
process.stdout.write(`${lines.join('\n')}\n`);

let stopping = false;
const shutdown = async (why: string, code: number) => {
  if (stopping) return;
  stopping = true;
  process.stdout.write(`\n${why}: stopping…\n`);
  await stack.stop();
  process.stdout.write('stopped.\n');
  process.exit(code);
};
process.on('SIGINT', () => void shutdown('SIGINT', 0));
process.on('SIGTERM', () => void shutdown('SIGTERM', 0));
// a closed terminal: stop the stack like Ctrl-C (a signal death would skip the children's cleanup)
process.on('SIGHUP', () => void shutdown('SIGHUP', 0));
stack.exited.then(({ component, code, signal }) =>
  shutdown(`${component} exited unexpectedly (code ${code}, signal ${signal})`, 1),
);
