// The engine gap of docs/streams.md ("Known limitation"): a non-replicated MergeTree appends an insert's
// block id to its deduplication log *before* it commits the part, so a process killed between the two
// leaves a record whose part never became active — and a retry with the same insert_deduplication_token
// is then dropped as a duplicate of nothing. This module finds such dangling records by reading the
// table's deduplication log files (embedded ClickHouse only: they are on this machine's disk) and
// comparing the parts they name with the parts on disk, before the engine opens the directory.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

interface PartName {
  partition: string;
  min: number;
  max: number;
}

/** `<partition>_<min block>_<max block>_<level>[_<mutation>]` → partition and block range */
export function parsePartName(name: string): PartName | undefined {
  const m = /^(.+?)_(\d+)_(\d+)_(\d+)(?:_(\d+))?$/.exec(name);
  if (!m) return undefined;
  return { partition: m[1], min: Number(m[2]), max: Number(m[3]) };
}

/** The deduplication log files of a table (its `data_paths[0]`), oldest first; [] when it keeps none. */
export function readDedupLogs(dataPath: string): string[] {
  const dir = path.join(dataPath, 'deduplication_logs');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => /^deduplication_log_\d+\.txt$/.test(f))
    .sort((a, b) => Number(a.match(/\d+/)?.[0]) - Number(b.match(/\d+/)?.[0]))
    .map((f) => readFileSync(path.join(dir, f), 'utf8'));
}

/**
 * Parts named by ADD records of the deduplication log (`1\t<part>\t<block id>`) that no DROP record
 * (`2\t…`) removed and no active part covers (same partition, a block range containing the part's).
 * A part merged away is covered by the merge's result; a part removed whole by a TTL also shows here
 * (old records leave the log after `non_replicated_deduplication_window` newer ones).
 */
export function danglingParts(logs: string[], activeParts: string[]): string[] {
  const added = new Map<string, PartName>();
  for (const text of logs) {
    for (const line of text.split('\n')) {
      const [op, part] = line.split('\t');
      if (!part) continue;
      if (op === '1') {
        const parsed = parsePartName(part);
        if (parsed) added.set(part, parsed);
      } else if (op === '2') {
        added.delete(part);
      }
    }
  }
  const ranges = activeParts.map(parsePartName).filter((p): p is PartName => p !== undefined);
  return [...added]
    .filter(([, p]) => !ranges.some((r) => r.partition === p.partition && r.min <= p.min && p.max <= r.max))
    .map(([name]) => name);
}

/**
 * Before the engine opens a chDB data directory: for each table of `database`, the dedup records whose
 * part is not on disk. Read before opening because right after opening, background merges may join the
 * parts on either side of a missing block into one whose block range covers it, hiding the loss.
 */
export function scanLostBlocks(chdbPath: string, database: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const base = path.join(chdbPath, 'data', database);
  if (!existsSync(base)) return out;
  for (const table of readdirSync(base)) {
    const dir = path.join(base, table);
    const logs = readDedupLogs(dir);
    if (logs.length === 0) continue;
    const parts = readdirSync(dir).filter(
      (n) => !/^(tmp|delete_tmp|detached)/.test(n) && parsePartName(n) !== undefined,
    );
    const lost = danglingParts(logs, parts);
    if (lost.length) out.set(table, lost);
  }
  return out;
}
