// Where the benches leave their figures: bench/out/latest.json, one key per bench (the last run of each),
// the figures stamped with the time they were measured.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const OUT_DIR = path.join(import.meta.dirname, 'out');

/** Write `figures` under `key` in bench/out/latest.json, keeping the other benches' entries. */
export function recordFigures(key: string, figures: Record<string, unknown>): void {
  mkdirSync(OUT_DIR, { recursive: true });
  const file = path.join(OUT_DIR, 'latest.json');
  let latest: Record<string, unknown> = {};
  try {
    latest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    // first run, or an unreadable file: start afresh
  }
  latest[key] = { at: new Date().toISOString(), ...figures };
  writeFileSync(file, `${JSON.stringify(latest, null, 2)}\n`);
}
