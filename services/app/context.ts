// What every module of the app process receives. In single-node mode one process hosts all modules
// (chDB binds its data directory to one process); in distributed mode a process hosts a subset.
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import type { Db } from '../../clickhouse/client.ts';
import type { Config } from '../common/config.ts';
import type { Kafka } from '../common/kafka/index.ts';
import type { Logger } from '../common/logger.ts';
import type { Check } from './health.ts';

export interface AppContext {
  config: Config;
  logger: Logger;
  db: Db;
  redis: Redis;
  kafka: Kafka;
  /** the public HTTP server (storefront API, beacon, site, metrics) */
  http: FastifyInstance;
  /** register a readiness check shown on /readyz */
  addReadinessCheck(name: string, check: Check): void;
  /** run on shutdown, in reverse registration order */
  onClose(fn: () => Promise<void> | void): void;
  /** URLs a module wants printed at start-up (label → URL) */
  announce(label: string, url: string): void;
  /**
   * Start something that depends on services this process serves itself (the schema registry, the
   * broker's groups) without holding the HTTP server back: `start` runs in the background and is retried
   * (backoff 1 s × attempt, at most 10 s) until it succeeds; a readiness check named `name` reports
   * "starting" or the last failure; on shutdown the retries stop and `stop` closes what started.
   */
  startInBackground<T>(name: string, start: () => Promise<T>, opts: BackgroundOptions<T>): Background<T>;
}

export interface BackgroundOptions<T> {
  /** closes what `start` returned, on shutdown */
  stop(started: T): Promise<void> | void;
  /** cleans up after a failed attempt, before the next one */
  afterFailure?(): Promise<void> | void;
}

export interface Background<T> {
  /** whether `start` has succeeded */
  readonly up: boolean;
  /** what `start` returned, once it succeeded */
  readonly started: T | undefined;
}

/** A module registers routes/consumers on start; anything it opens it closes through ctx.onClose. */
export interface AppModule {
  name: string;
  start(ctx: AppContext): Promise<void>;
}
