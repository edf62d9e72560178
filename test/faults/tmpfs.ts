// A small tmpfs for disk-full tests (issue #23): mounted on a fresh directory (root or CAP_SYS_ADMIN;
// otherwise the reason, for the test to skip with), and a filler that takes every byte left on it.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export type Tmpfs = { dir: string; unmount(): void };

/** a tmpfs of `size` (mount syntax: `16m`) on a fresh directory, or why it cannot be mounted here */
export function mountTmpfs(size: string): Tmpfs | { reason: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sd-disk-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    return { reason: `cannot mount a tmpfs (${stderr || (err as Error).message}); needs root or CAP_SYS_ADMIN` };
  }
  return {
    dir,
    unmount() {
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** takes every free byte of the file system holding `file` (ENOSPC ends it); the bytes written */
export function fillDisk(file: string): number {
  const fd = openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024, 0x5a);
  let written = 0;
  try {
    // big writes, then the last pages with smaller ones until not even one byte fits
    for (const size of [chunk.length, 4096, 512, 1]) {
      for (;;) {
        try {
          written += writeSync(fd, chunk.subarray(0, size));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw err;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return written;
}
