// The benches' per-thread CPU accounting (bench/threads.ts) against work placed on known threads.
import { pbkdf2 } from 'node:crypto';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { cpuByKind, readThreadCpu } from '../../bench/threads.ts';

/** busy this thread until it has had `ms` of CPU (not of wall time: a loaded machine gives it less) */
const spin = (ms: number) => {
  const start = process.threadCpuUsage();
  const deadline = performance.now() + 60_000;
  while (performance.now() < deadline) {
    const used = process.threadCpuUsage(start);
    if ((used.user + used.system) / 1000 >= ms) return;
  }
};

describe('per-thread CPU of the benches', () => {
  it.skipIf(process.platform !== 'linux')(
    "charges the event loop's work to JS and libuv's pool work to libuv",
    async () => {
      const t0 = readThreadCpu();
      spin(400);
      const afterSpin = readThreadCpu();
      const spun = cpuByKind(t0, afterSpin);
      expect(spun.js).toBeGreaterThan(0.25);
      expect(spun.libuv).toBeLessThan(0.1);
      // key stretching runs on libuv's thread pool: rounds of it until the pool has had 0.3 s of CPU as
      // charged (a fixed amount of it was 0.2 s on a fast host), or a deadline when the charge goes elsewhere
      const deadline = performance.now() + 60_000;
      let hashed = cpuByKind(afterSpin, readThreadCpu());
      while (hashed.libuv < 0.3 && performance.now() < deadline) {
        await Promise.all(Array.from({ length: 4 }, () => promisify(pbkdf2)('x', 'salt', 100_000, 32, 'sha256')));
        hashed = cpuByKind(afterSpin, readThreadCpu());
      }
      expect(hashed.libuv).toBeGreaterThan(0.2);
      expect(hashed.js).toBeLessThan(hashed.libuv);
    },
  );
});
