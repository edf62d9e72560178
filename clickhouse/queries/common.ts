// Shared pieces of the aggregate query helpers.
import { toNumericId, UINT64_MAX } from '../../schemas/fields.ts';

/** Product ids as the aggregates store them (UInt64): digit strings (schemas/fields.ts toNumericId); anything else is dropped. */
export function productIds(ids: readonly (string | number | bigint)[]): string[] {
  const out: string[] = [];
  for (const id of ids) {
    const digits = toNumericId(String(id));
    if (digits !== undefined && BigInt(digits) <= UINT64_MAX && !out.includes(digits)) out.push(digits);
  }
  return out;
}

export function clampInt(v: number | undefined, min: number, max: number, fallback: number): number {
  if (v === undefined || !Number.isFinite(v)) return fallback;
  return Math.min(max, Math.max(min, Math.trunc(v)));
}

/** `now` as ClickHouse DateTime text (UTC, seconds). */
export function chNow(now: Date = new Date()): string {
  return now.toISOString().slice(0, 19).replace('T', ' ');
}
