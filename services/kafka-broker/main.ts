// Process entry: `node services/kafka-broker/main.ts`, configured by environment variables
// (see docs/broker.md). Exits cleanly on SIGINT/SIGTERM: stop accepting, flush, close the store.
import pino from 'pino';
import { startBroker } from './index.ts';

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${raw}`);
  return n;
}

function envBool(name: string, fallback: boolean): boolean {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  return !['false', '0', 'no', 'off'].includes(raw.toLowerCase());
}

function envFsync(): 'always' | number {
  const raw = process.env.BROKER_FSYNC;
  if (raw === undefined || raw === '' || raw === 'always') return 'always';
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`BROKER_FSYNC must be 'always' or a positive interval in ms, got ${raw}`);
  return n;
}

const logger = pino({ name: 'kafka-broker', level: process.env.LOG_LEVEL || 'info' });

async function main(): Promise<void> {
  const host = process.env.BROKER_HOST || '127.0.0.1';
  const broker = await startBroker({
    host,
    port: envInt('BROKER_PORT', 9092),
    advertisedHost: process.env.BROKER_ADVERTISED_HOST || host,
    dataDir: process.env.BROKER_DATA_DIR || './data/kafka',
    fsync: envFsync(),
    autoCreateTopics: envBool('BROKER_AUTO_CREATE_TOPICS', true),
    defaultPartitions: Math.max(1, envInt('BROKER_DEFAULT_PARTITIONS', 1)),
    maintenanceIntervalMs: process.env.BROKER_MAINTENANCE_INTERVAL_MS
      ? envInt('BROKER_MAINTENANCE_INTERVAL_MS', 30_000)
      : undefined,
    logger,
  });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    broker.close().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  // started by the local stack's launcher with an IPC channel: stop cleanly when the launcher is gone
  if (process.send) process.on('disconnect', () => stop('launcher gone'));
}

main().catch((err) => {
  logger.fatal({ err }, 'broker failed to start');
  process.exit(1);
});
