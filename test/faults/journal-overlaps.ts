// Diagnosis for a fault run whose aggregates came out too high: reads Redis' append-only files (the
// history of every write) and lists the stream processors' batch-journal entries (streams/runtime/
// journal.ts: `HSET sd:streams:journal:<group>:<topic>:<partition> <first> <last>`) whose offset ranges
// overlap. Two different ranges over the same offsets mean the same messages were written under two
// different insert_deduplication_tokens, which ClickHouse cannot drop: a double count (hidden in
// events_raw, a ReplacingMergeTree by event_id, visible in every table fed from the same chunk).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export interface JournalOverlap {
  key: string;
  earlier: [number, number];
  later: [number, number];
}

/** RESP arrays of an AOF (`*n\r\n$len\r\narg\r\n…`), in order */
function* commands(buf: Buffer): Generator<Buffer[]> {
  let i = 0;
  const line = () => {
    const j = buf.indexOf('\r\n', i);
    if (j < 0) throw new RangeError('truncated');
    const s = buf.toString('latin1', i + 1, j);
    i = j + 2;
    return Number(s);
  };
  while (i < buf.length) {
    if (buf[i] !== 0x2a /* '*' */) {
      const next = buf.indexOf('\n*', i);
      if (next < 0) return;
      i = next + 1;
      continue;
    }
    try {
      const n = line();
      const args: Buffer[] = [];
      for (let k = 0; k < n; k++) {
        const len = line();
        args.push(buf.subarray(i, i + len));
        i += len + 2;
      }
      yield args;
    } catch {
      return; // a torn tail (the kill)
    }
  }
}

/** the overlapping journal ranges recorded in `redisDir` (the launcher's `<DATA_DIR>/redis`) */
export function journalOverlaps(redisDir: string): JournalOverlap[] {
  const dir = path.join(redisDir, 'appendonlydir');
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((f) => f.endsWith('.aof'))
      .sort(
        (a, b) => Number(/\.(\d+)\.incr\.aof$/.exec(a)?.[1] ?? 0) - Number(/\.(\d+)\.incr\.aof$/.exec(b)?.[1] ?? 0),
      );
  } catch {
    return [];
  }
  const ranges = new Map<string, Set<string>>();
  for (const f of files) {
    for (const args of commands(readFileSync(path.join(dir, f)))) {
      if (args.length < 4 || args[0]!.toString().toLowerCase() !== 'hset') continue;
      const key = args[1]!.toString();
      if (!key.startsWith('sd:streams:journal:')) continue;
      let set = ranges.get(key);
      if (!set) ranges.set(key, (set = new Set()));
      for (let k = 2; k + 1 < args.length; k += 2) set.add(`${args[k]!.toString()}-${args[k + 1]!.toString()}`);
    }
  }
  const out: JournalOverlap[] = [];
  for (const [key, set] of ranges) {
    const sorted = [...set]
      .map((r) => r.split('-').map(Number) as [number, number])
      .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (let k = 1; k < sorted.length; k++) {
      const [a, b] = [sorted[k - 1]!, sorted[k]!];
      if (b[0] <= a[1]) out.push({ key, earlier: a, later: b });
    }
  }
  return out;
}
