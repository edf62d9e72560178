// CPU time per thread of a process, from /proc/<pid>/task/*/stat (Linux), grouped by what the thread is:
// the benches use it to say where a figure's CPU went (JavaScript, V8's helper threads, chDB's threads),
// which is what shows the floor a goal meets. Threads are grouped by name (`comm`, trailing digits
// dropped); a thread that ended between two readings is missing from the second, so the benches read
// around phases in which the set of threads is stable.
import { readdirSync, readFileSync } from 'node:fs';

/** the clock ticks per second of /proc's stat times (USER_HZ, 100 on Linux) */
const HZ = 100;

export type ThreadCpu = Map<string, number>;

/** CPU seconds (user + system) of every thread of `pid` now, keyed `<tid> <name>` */
export function readThreadCpu(pid: number | 'self' = 'self'): ThreadCpu {
  const out: ThreadCpu = new Map();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out; // not Linux, or the process is gone
  }
  for (const tid of tids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(`${tid} ${name}`, (Number(fields[11]) + Number(fields[12])) / HZ);
  }
  return out;
}

/** chDB's own threads, by the names ClickHouse gives them */
const CHDB = /^(ThreadPool|MergeMutate|BgSchPool|BgStrmSchPool|BgMBSchPool|PoolDelayExec|MemoryWorker)/;

/** what a thread is: 'js' (the event loop, unnamed worker threads), 'v8' (V8's platform workers: GC and compiler
 *  helpers), 'chdb' (ClickHouse's pools and merges), 'libuv' (libuv's pool: chDB's statements run there,
 *  next to Node's fs and crypto work), 'other' (named worker threads, anything else) */
export function threadKind(name: string): 'js' | 'v8' | 'chdb' | 'libuv' | 'other' {
  if (name === 'MainThread' || name === 'WorkerThread') return 'js';
  if (name.startsWith('libuv-worker')) return 'libuv';
  if (name.startsWith('V8Worker')) return 'v8';
  if (CHDB.test(name)) return 'chdb';
  return 'other';
}

/** CPU seconds spent between two readings, summed by thread kind */
export function cpuByKind(before: ThreadCpu, after: ThreadCpu): Record<ReturnType<typeof threadKind>, number> {
  const sums = { js: 0, v8: 0, chdb: 0, libuv: 0, other: 0 };
  for (const [key, seconds] of after) {
    const name = key.slice(key.indexOf(' ') + 1);
    sums[threadKind(name)] += seconds - (before.get(key) ?? 0);
  }
  return sums;
}

/** chDB's pools and merges between two readings, by role: its pipelines (`ThreadPool`: an insert's squashing,
 *  sorting, compression and part writing, its views, a query's work) and merges (`MergeMutate`); the rest
 *  (schedule pools, delayed execution, the memory worker) is `chdb` minus both */
export function chdbByRole(before: ThreadCpu, after: ThreadCpu): { pipelines: number; merges: number } {
  const out = { pipelines: 0, merges: 0 };
  for (const [key, seconds] of after) {
    const name = key.slice(key.indexOf(' ') + 1);
    if (name.startsWith('ThreadPool')) out.pipelines += seconds - (before.get(key) ?? 0);
    else if (name.startsWith('MergeMutate')) out.merges += seconds - (before.get(key) ?? 0);
  }
  return out;
}
