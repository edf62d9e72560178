// Shared pieces of the aggregate query helpers.

/** Product ids as the aggregates store them (UInt64): digit strings; anything else is dropped. */
export function productIds(ids: readonly (string | number | bigint)[]): string[] {
  const out: string[] = [];
  for (const id of ids) {
    const s = String(id).trim();
    const gid = /^gid:\/\/[A-Za-z]+\/[A-Za-z]+\/(\d{1,20})$/.exec(s);
    const digits = gid ? gid[1] : s;
    if (/^\d{1,20}$/.test(digits) && BigInt(digits) <= 18446744073709551615n && !out.includes(digits)) out.push(digits);
  }
  return out;
}

/** The normalized query form the aggregates are keyed by (same as schemas/requests.ts normalizeQuery). */
export function normQuery(q: string): string {
  return q.normalize('NFKC').toLowerCase().trim().replace(/\s+/g, ' ');
}

export function clampInt(v: number | undefined, min: number, max: number, fallback: number): number {
  if (v === undefined || !Number.isFinite(v)) return fallback;
  return Math.min(max, Math.max(min, Math.trunc(v)));
}

/** `now` as ClickHouse DateTime text (UTC, seconds). */
export function chNow(now: Date = new Date()): string {
  return now.toISOString().slice(0, 19).replace('T', ' ');
}
