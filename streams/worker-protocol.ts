// The messages between the app and the stream processors' worker thread (streams/worker.ts).
import type { DbOptions } from '../clickhouse/client.ts';
import type { Config } from '../services/common/config.ts';
import type { MetricsJSON } from '../services/common/metrics.ts';
import type { ReplayEvent, ReplayOptions } from './replay/replay.ts';

export interface StreamsWorkerData {
  config: Config;
  db: Omit<DbOptions, 'lostBlocks'>;
  /** what the app's scan found before the engine opened the directory */
  lostBlocks: [string, string[]][];
}

export type ToWorker =
  | { type: 'metrics'; id: number }
  | { type: 'replay'; id: number; request: ReplayOptions }
  | { type: 'stop' };

export type FromWorker =
  | { type: 'started' }
  /** the processors could not start yet (the broker or registry unreachable); the thread tries again */
  | { type: 'retrying'; message: string; attempt: number }
  | { type: 'stopped' }
  | { type: 'metrics'; id: number; metrics: MetricsJSON }
  | { type: 'replay-event'; id: number; event: ReplayEvent }
  | { type: 'replay-done'; id: number; error?: { message: string; status: number } };
