// The operations dashboard's live data: consumer lag and DLQ counts sampled from this process's
// Prometheus metrics (the stream processors' gauges and counters, their worker thread's included) every
// few seconds into a ring buffer, and the ClickHouse series (throughput per minute, trending queries, searches per day) read on demand.
import type { Db } from '../../clickhouse/client.ts';
import { metricsJSON } from '../common/metrics.ts';
import type { SearchesServedCounter } from './counter.ts';
import { searchesPerDay, throughput, trendingNow } from './queries.ts';

export interface OpsSample {
  t: number;
  /** processor → messages behind (sum over partitions) */
  lag: Record<string, number>;
  /** processor → messages sent to its DLQ since start */
  dlq: Record<string, number>;
}

async function byProcessor(name: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metricsJSON()).filter((m) => m.name === name).flatMap((m) => m.values)) {
    const p = String(v.labels.processor ?? 'unknown');
    out[p] = (out[p] ?? 0) + v.value;
  }
  return out;
}

export class OpsSampler {
  private readonly samples: OpsSample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly size: number;

  constructor(opts: { everyMs?: number; size?: number } = {}) {
    this.size = opts.size ?? 120;
    this.timer = setInterval(() => void this.sample(), opts.everyMs ?? 5_000);
    this.timer.unref();
    void this.sample();
  }

  async sample(): Promise<OpsSample> {
    const s = {
      t: Date.now(),
      lag: await byProcessor('stream_consumer_lag'),
      dlq: await byProcessor('stream_dlq_total'),
    };
    this.samples.push(s);
    if (this.samples.length > this.size) this.samples.shift();
    return s;
  }

  history(): OpsSample[] {
    return [...this.samples];
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

export async function dashboardData(db: Db, sampler: OpsSampler, counter: SearchesServedCounter, store = '') {
  const [tp, trending, perDay] = await Promise.all([
    throughput(db, { store }),
    trendingNow(db, { store }),
    searchesPerDay(db, { store }),
  ]);
  return {
    generatedAt: new Date().toISOString(),
    store: store || null,
    throughput: tp,
    samples: sampler.history(),
    trending,
    searchesPerDay: perDay,
    counter: { ...(counter.get() ?? { count: null, label: 'not loaded yet' }), total: counter.total() },
  };
}
