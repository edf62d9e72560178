// Producer id allocation for idempotent producers. Ids are handed out from blocks; the end of the
// current block is made durable (write temp, fsync, rename, fsync dir) BEFORE any id of the block is
// used, so after any crash the broker resumes above every id it ever handed out: ids never repeat.
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';

const BLOCK = 1000;

export class ProducerIdAllocator {
  private next = 0;
  private blockEnd = 0;
  private readonly file: string;
  private pending: Promise<void> | null = null;

  private constructor(file: string) {
    this.file = file;
  }

  static async open(dataDir: string): Promise<ProducerIdAllocator> {
    await mkdir(dataDir, { recursive: true });
    const a = new ProducerIdAllocator(path.join(dataDir, 'producer-ids'));
    let start = 1000;
    try {
      const text = (await readFile(a.file, 'utf8')).trim();
      const n = Number(text);
      if (Number.isSafeInteger(n) && n > 0) start = n;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    a.next = start;
    a.blockEnd = start;
    return a;
  }

  async allocate(): Promise<bigint> {
    while (this.next >= this.blockEnd) {
      if (!this.pending) {
        const end = this.blockEnd + BLOCK;
        this.pending = this.persist(end).then(
          () => {
            this.blockEnd = end;
            this.pending = null;
          },
          (err) => {
            this.pending = null;
            throw err;
          },
        );
      }
      await this.pending;
    }
    return BigInt(this.next++);
  }

  private async persist(end: number): Promise<void> {
    const tmp = `${this.file}.tmp`;
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(`${end}\n`);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, this.file);
    const dir = await open(path.dirname(this.file), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }
}
