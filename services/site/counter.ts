// GET /api/searches-served: the platform-wide searches-served total (searches_served_daily, summed over
// stores and days), read from ClickHouse at start and then once an hour; between refreshes every request
// is answered from the cached, pre-serialized body. `count` is the total in billions as an exact decimal
// string ("0.000004213" for 4 213 searches), `label` the figure for people.
import type { Db } from '../../clickhouse/client.ts';
import { searchesServed } from '../../clickhouse/queries/searches.ts';
import type { Logger } from '../common/logger.ts';

export const HOUR_MS = 3_600_000;

/** an unsigned integer (decimal string) divided by 10^9, exactly, trailing zeros dropped */
export function inBillions(total: string): string {
  const digits = total.replace(/^0+(?=\d)/, '');
  if (!/^\d+$/.test(digits)) throw new Error(`not an unsigned integer: ${total}`);
  const padded = digits.padStart(10, '0');
  const whole = padded.slice(0, -9).replace(/^0+(?=\d)/, '');
  const frac = padded.slice(-9).replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : whole;
}

export function counterLabel(total: string): string {
  const n = Number(total);
  if (n >= 1e9) return `${trunc(n / 1e9, 2)} billion searches served`;
  if (n >= 1e6) return `${trunc(n / 1e6, 1)} million searches served`;
  return `${n.toLocaleString('en-US')} ${n === 1 ? 'search' : 'searches'} served`;
}

function trunc(x: number, digits: number): string {
  const f = 10 ** digits;
  return (Math.floor(x * f) / f).toFixed(digits);
}

export interface CounterOptions {
  db: Db;
  logger: Logger;
  /** default one hour (the spec's refresh) */
  refreshMs?: number;
  /** until the first load succeeded, retry this often (default 10 s) */
  retryMs?: number;
}

export class SearchesServedCounter {
  private value: { count: string; label: string; total: string } | null = null;
  private serialized: string | null = null;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** when the cached value was read (ms) */
  loadedAt = 0;
  private readonly opts: Required<CounterOptions>;

  constructor(opts: CounterOptions) {
    this.opts = { refreshMs: HOUR_MS, retryMs: 10_000, ...opts };
  }

  /** first load (failures are logged and retried); then every refreshMs */
  async start(): Promise<void> {
    await this.refresh();
  }

  async refresh(): Promise<void> {
    clearTimeout(this.timer);
    let ok = false;
    try {
      const total = await searchesServed(this.opts.db);
      this.value = { count: inBillions(total), label: counterLabel(total), total };
      this.serialized = JSON.stringify({ count: this.value.count, label: this.value.label });
      this.loadedAt = Date.now();
      ok = true;
    } catch (err) {
      this.opts.logger.warn({ err: (err as Error).message }, 'searches-served counter: refresh failed');
    }
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.refresh(), ok || this.value ? this.opts.refreshMs : this.opts.retryMs);
    this.timer.unref();
  }

  /** the cached `{count, label}` (null until the first load) */
  get(): { count: string; label: string } | null {
    return this.value ? { count: this.value.count, label: this.value.label } : null;
  }

  /** the raw total of the cached value (the dashboard) */
  total(): string | null {
    return this.value?.total ?? null;
  }

  /** the response body, serialized once per refresh */
  body(): string | null {
    return this.serialized;
  }

  /** seconds until the next refresh (Cache-Control max-age) */
  maxAgeSeconds(now = Date.now()): number {
    return Math.max(0, Math.floor((this.loadedAt + this.opts.refreshMs - now) / 1000));
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
