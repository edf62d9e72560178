// `npm start`: the single-node stack with its URLs printed; Ctrl-C stops everything cleanly. A crashed
// child is restarted with backoff (deploy/local/restart-policy.ts); one that crashes too often stops
// the stack with exit code 69.
import { ConfigError, loadConfigOrExit } from '../../services/common/config.ts';
import { EXIT_GAVE_UP, loadRestartPolicy } from './restart-policy.ts';
import { StackError, startStack } from './stack.ts';

const config = loadConfigOrExit();
let restart: ReturnType<typeof loadRestartPolicy>;
try {
  restart = loadRestartPolicy();
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`${err.message}\n`);
  process.exit(78); // EX_CONFIG, as loadConfigOrExit
}
process.stdout.write(`Starting the single-node stack (data in ${config.dataDir})…\n`);

let stack: Awaited<ReturnType<typeof startStack>>;
try {
  stack = await startStack(config, { restart, log: (line) => void process.stderr.write(`${line}\n`) });
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
stack.exited.then(({ component, code, signal, gaveUp }) => {
  if (!gaveUp) return shutdown(`${component} exited unexpectedly (code ${code}, signal ${signal})`, 1);
  // a crash loop: say so on stderr, stop the rest, exit with a code of its own
  process.stderr.write(
    `\nGiving up: ${component} crashed ${gaveUp.crashes} times within ${Math.round(gaveUp.windowMs / 1000)} s ` +
      `(last exit: code ${code}, signal ${signal}); its output above says why. ` +
      `The limit is LAUNCHER_MAX_CRASHES=${restart.maxCrashes} within LAUNCHER_CRASH_WINDOW_MS=${restart.windowMs}. ` +
      `Exiting with code ${EXIT_GAVE_UP}.\n`,
  );
  return shutdown(`${component} crashed too often`, EXIT_GAVE_UP);
});
