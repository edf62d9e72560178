// Fault run (not part of `npm test`): does a SIGKILL during a token'd insert into chDB ever lose a block
// for good? The stream processors rely on ClickHouse dropping a re-inserted block with the same
// `insert_deduplication_token` *and* on the first attempt's part being there whenever its dedup record
// is. ClickHouse appends the dedup record before it commits the part (MergeTreeDeduplicationLog::addPart →
// renameTempPartAndAdd → commit), so a kill between the two leaves a record without a part, and the retry
// is dropped as a duplicate of data that does not exist.
//
//   npm run fault:chdb-insert-crash            (KILLS=200, about 5 minutes)
//
// A child process inserts blocks of 50 rows spread over 3 partitions (3 parts per insert), each with the
// token `tok-<i>`, and prints i once the insert returned; the parent SIGKILLs it at random moments and
// restarts it at the first unacknowledged block, re-inserting it with the same token — what the
// processors' journal does. At the end every block must sum to 50. Exit 1 when a block is short or
// doubled (the engine's gap showed), 0 when all are exact.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDb } from '../../clickhouse/client.ts';

const ROWS = 50;
const [mode, dir, startArg] = process.argv.slice(2);

if (mode === 'child') {
  const db = await openDb({ database: 'fault', chdbPath: dir });
  await db.command(
    'CREATE TABLE IF NOT EXISTS t (k UInt8, i UInt64, v UInt64) ENGINE = SummingMergeTree PARTITION BY k ORDER BY (k, i) SETTINGS non_replicated_deduplication_window = 1000',
  );
  for (let i = Number(startArg); ; i++) {
    await db.insert(
      't',
      Array.from({ length: ROWS }, (_, j) => ({ k: j % 3, i, v: 1 })),
      { dedupToken: `tok-${i}` },
    );
    process.stdout.write(`${i}\n`);
  }
}

const kills = Number(process.env.KILLS ?? 200);
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'chdb-insert-crash-'));
let next = 0;
/** the blocks that were in flight (sent, not acknowledged) when a kill came: retried with their token */
const inFlight = new Set<number>();
try {
  for (let k = 0; k < kills; k++) {
    const child = spawn(process.execPath, [process.argv[1], 'child', dataDir, String(next)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let acked = next - 1;
    child.stdout.on('data', (b: Buffer) => {
      const lines = b.toString().trim().split('\n');
      acked = Number(lines[lines.length - 1]);
    });
    await new Promise((r) => setTimeout(r, 600 + Math.random() * 1400));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    next = acked + 1; // the block in flight is retried with its token
    inFlight.add(next);
    process.stdout.write(`\rkills ${k + 1}/${kills}, blocks acknowledged ${next}`);
  }
  process.stdout.write('\n');
  const db = await openDb({ database: 'fault', chdbPath: dataDir });
  const rows = await db.query<{ i: string; v: string }>('SELECT i, sum(v) AS v FROM t GROUP BY i');
  const sums = new Map(rows.map((r) => [Number(r.i), Number(r.v)]));
  const wrong: [number, number][] = [];
  for (let i = 0; i < next; i++) if ((sums.get(i) ?? 0) !== ROWS) wrong.push([i, sums.get(i) ?? 0]);
  await db.close();
  console.log(
    `${kills} SIGKILLs during inserts, ${next} blocks acknowledged or retried; blocks not summing to ${ROWS}: ${wrong.length}`,
  );
  if (wrong.length) {
    const desc = ([i, v]: [number, number]) =>
      `${i} → ${v} (${inFlight.has(i) ? 'in flight at a kill, retried' : 'acknowledged before a kill'})`;
    console.log(`  block → rows found: ${wrong.slice(0, 20).map(desc).join(', ')}`);
  }
  process.exitCode = wrong.length ? 1 : 0;
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
