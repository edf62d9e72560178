// Small helpers shared by processors.
import type { z } from 'zod';
import type { ParseResult } from './types.ts';
import { compiledCheck } from './validate.ts';

/** ISO 8601 UTC (`…T…Z`) → ClickHouse DateTime64 text (`YYYY-MM-DD hh:mm:ss.sss`). Every timestamp of every
 *  row goes through here: toISOString's own shape (what the Avro decoder writes) by slicing, anything
 *  else by the general rewrite (the same answer either way; test/streams/util.test.ts). */
export function chTime(iso: string): string {
  if (iso.length === 24 && iso.charCodeAt(23) === 90 && iso.indexOf('T') === 10)
    return `${iso.slice(0, 10)} ${iso.slice(11, 23)}`;
  return iso.replace('T', ' ').replace(/Z$/, '');
}

/** ISO 8601 UTC → `YYYY-MM-DD` (the UTC day). */
export function utcDay(iso: string): string {
  return iso.slice(0, 10);
}

/** how long a processor's synchronous work runs before it lets the event loop turn (see timeSlicer) */
export const SLICE_MS = 4;

/**
 * Time slices for long synchronous loops. In single-node mode the processors share the app's main thread
 * with the read API, and a chunk of thousands of messages (a processor catching up on a backlog) decodes
 * and transforms for a hundred milliseconds or more: every HTTP request arriving meanwhile waits. The
 * returned function, called once per iteration, answers undefined until `sliceMs` of work have passed
 * since the last break, then a promise that resolves after one turn of the event loop (setImmediate:
 * pending I/O such as HTTP requests runs first). Awaiting only when it returns a promise keeps the cost
 * per iteration at one clock read.
 */
export function timeSlicer(sliceMs = SLICE_MS): () => Promise<void> | undefined {
  let since = performance.now();
  return () => {
    if (performance.now() - since < sliceMs) return undefined;
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        since = performance.now();
        resolve();
      }),
    );
  };
}

/** zod validation with the first issues as a readable reason (for the DLQ). A schema that only checks
 *  is tried first as a compiled check, which passes a valid value on as it is (validate.ts). */
export function zodParse<S extends z.ZodType>(schema: S, value: unknown): ParseResult<z.output<S>> {
  if (compiledCheck(schema)?.(value)) return { ok: true, value: value as z.output<S> };
  const r = schema.safeParse(value);
  if (r.success) return { ok: true, value: r.data };
  const reason = r.error.issues
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`)
    .join('; ');
  return { ok: false, reason };
}

/** Sum rows by key: `add(key, row)` merges numeric fields into the first row stored for the key. */
export class RowSummer<R extends Record<string, unknown>> {
  private readonly rows = new Map<string, R>();
  private readonly fields: (keyof R)[];

  constructor(fields: (keyof R)[]) {
    this.fields = fields;
  }

  add(key: string, row: R): void {
    const prev = this.rows.get(key);
    if (!prev) {
      this.rows.set(key, { ...row });
      return;
    }
    for (const f of this.fields) (prev as Record<keyof R, unknown>)[f] = (prev[f] as number) + (row[f] as number);
  }

  values(): R[] {
    return [...this.rows.values()];
  }
}

/** Keep the most recent `max` distinct items, most recent last. Returns true when `item` was new. */
export function touchRecent<T>(list: T[], item: T, max: number, same: (a: T, b: T) => boolean = Object.is): boolean {
  const i = list.findIndex((x) => same(x, item));
  if (i >= 0) {
    list.splice(i, 1);
    list.push(item);
    return false;
  }
  list.push(item);
  if (list.length > max) list.splice(0, list.length - max);
  return true;
}
