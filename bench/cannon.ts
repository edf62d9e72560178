// autocannon (the HTTP load generator of the benches), typed for the part they read: it ships no type
// declarations. Also the percentile helper the benches print with.
import { createRequire } from 'node:module';

export interface CannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  /** connection errors, timeouts included */
  errors: number;
  timeouts: number;
  duration: number;
}

export const autocannon = createRequire(import.meta.url)('autocannon') as (
  opts: Record<string, unknown>,
) => Promise<CannonResult>;

/** the p-th percentile (nearest rank) of a sample */
export function pct(xs: readonly number[], p: number): number {
  const a = [...xs].sort((x, y) => x - y);
  return a[Math.min(a.length - 1, Math.floor((p / 100) * a.length))];
}
