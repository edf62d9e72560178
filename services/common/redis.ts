import { Redis } from 'ioredis';

/** A Redis client that fails fast instead of queueing commands forever while Redis is down. */
export function createRedis(url: string, opts: { connectionName?: string } = {}): Redis {
  return new Redis(url, {
    connectionName: opts.connectionName,
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    connectTimeout: 5_000,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
}
