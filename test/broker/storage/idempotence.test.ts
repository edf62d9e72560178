import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LogStore, PartitionStore } from '../../../services/kafka-broker/storage/api.ts';
import { batch, listFiles, openStore, readAll, removeDir, tempDir } from './helpers.ts';

let dir: string;
let store: LogStore;
let p: PartitionStore;

beforeEach(async () => {
  dir = await tempDir('idem');
  store = await openStore(dir);
  await store.createTopic('t', 1, { segmentBytes: 2000 });
  p = store.partition('t', 0)!;
});

afterEach(async () => {
  await store.close();
  await removeDir(dir);
});

const pid = 4242n;
const produce = (seq: number, n: number, epoch = 0, producerId = pid) =>
  batch(
    Array.from({ length: n }, (_, i) => `s${seq + i}`),
    { producerId, producerEpoch: epoch, baseSequence: seq },
  );

describe('idempotent producer', () => {
  it('deduplicates a retried batch and returns its original offset', async () => {
    await p.append(await batch(['plain']));
    const first = await p.append(await produce(0, 3));
    expect(first).toMatchObject({ errorCode: 0, baseOffset: 1n });
    expect(await p.append(await produce(3, 2))).toMatchObject({ errorCode: 0, baseOffset: 4n });
    // retry of the first batch: same sequence range
    expect(await p.append(await produce(0, 3))).toMatchObject({ errorCode: 0, baseOffset: 1n });
    expect(await p.append(await produce(3, 2))).toMatchObject({ errorCode: 0, baseOffset: 4n });
    expect(p.highWatermark()).toBe(6n);
    expect((await readAll(p)).map((r) => r.value)).toEqual(['plain', 's0', 's1', 's2', 's3', 's4']);
  });

  it('remembers only the last 5 batches', async () => {
    for (let i = 0; i < 7; i++) await p.append(await produce(i, 1));
    expect(await p.append(await produce(2, 1))).toMatchObject({ errorCode: 0, baseOffset: 2n });
    expect((await p.append(await produce(1, 1))).errorCode).toBe(45);
    expect(p.highWatermark()).toBe(7n);
  });

  it('rejects sequence gaps, stale epochs and new epochs not starting at 0', async () => {
    await p.append(await produce(0, 2));
    expect(await p.append(await produce(5, 1))).toMatchObject({ errorCode: 45, baseOffset: -1n });
    expect((await p.append(await produce(2, 1, 1))).errorCode).toBe(45); // epoch bump must restart at 0
    expect((await p.append(await produce(0, 1, 1))).errorCode).toBe(0); // epoch 1 from 0
    expect((await p.append(await produce(2, 1, 0))).errorCode).toBe(47); // fenced
    expect((await p.append(await produce(1, 1, 1))).errorCode).toBe(0);
    expect(p.highWatermark()).toBe(4n);
  });

  it('accepts any first sequence from an unknown producer and tracks producers independently', async () => {
    expect((await p.append(await produce(100, 1, 0, 1n))).errorCode).toBe(0);
    expect((await p.append(await produce(0, 1, 0, 2n))).errorCode).toBe(0);
    expect((await p.append(await produce(101, 1, 0, 1n))).errorCode).toBe(0);
    expect((await p.append(await produce(2, 1, 0, 2n))).errorCode).toBe(45);
  });

  it('wraps sequences after int32 max', async () => {
    const max = 2 ** 31 - 1;
    await p.append(await produce(max - 1, 2)); // max-1, max
    expect((await p.append(await produce(0, 2))).errorCode).toBe(0);
    expect(await p.append(await produce(0, 2))).toMatchObject({ errorCode: 0, baseOffset: 2n });
    expect(p.highWatermark()).toBe(4n);
  });

  it('rejects a multi-batch request as a whole when one batch is out of order', async () => {
    const req = Buffer.concat([await produce(0, 2), await produce(7, 1)]);
    expect((await p.append(req)).errorCode).toBe(45);
    expect(p.highWatermark()).toBe(0n);
    expect((await p.append(Buffer.concat([await produce(0, 2), await produce(2, 1)]))).errorCode).toBe(0);
    expect(p.highWatermark()).toBe(3n);
  });

  it('deduplicates after a restart (from the snapshot and from the log alone)', async () => {
    for (let i = 0; i < 20; i++) await p.append(await produce(i * 3, 3));
    await store.close();
    store = await openStore(dir);
    p = store.partition('t', 0)!;
    expect(await p.append(await produce(57, 3))).toMatchObject({ errorCode: 0, baseOffset: 57n });
    expect((await p.append(await produce(61, 1))).errorCode).toBe(45);
    // crash-like restart: no snapshot at all, state rebuilt from the batches in the log
    await store.close();
    const pdir = path.join(dir, 't-0');
    for (const f of await listFiles(pdir, '.snapshot')) await fs.rm(path.join(pdir, f));
    store = await openStore(dir);
    p = store.partition('t', 0)!;
    expect(await p.append(await produce(54, 3))).toMatchObject({ errorCode: 0, baseOffset: 54n });
    expect(await p.append(await produce(60, 2))).toMatchObject({ errorCode: 0, baseOffset: 60n });
    expect(p.highWatermark()).toBe(62n);
  });

  it('rebuilds producer state from the last snapshot plus the log after it', async () => {
    for (let i = 0; i < 60; i++) await p.append(await produce(i * 3, 3));
    await store.close();
    const pdir = path.join(dir, 't-0');
    expect((await listFiles(pdir, '.log')).length).toBeGreaterThan(1);
    const snaps = await listFiles(pdir, '.snapshot');
    expect(snaps.length).toBeGreaterThan(1);
    // drop the clean-shutdown snapshot: the roll-time one plus the active segment must suffice
    await fs.rm(path.join(pdir, snaps.at(-1)!));
    store = await openStore(dir);
    p = store.partition('t', 0)!;
    expect(await p.append(await produce(177, 3))).toMatchObject({ errorCode: 0, baseOffset: 177n });
    expect((await p.append(await produce(181, 1))).errorCode).toBe(45);
    expect((await p.append(await produce(180, 1))).baseOffset).toBe(180n);
  });

  it('deduplicates a retry after a crash (copy of the data directory taken while running)', async () => {
    for (let i = 0; i < 60; i++) await p.append(await produce(i * 3, 3));
    await p.append(await batch(['unrelated']));
    // acknowledged with fsync 'always' => on disk; copying the directory now is a power-cut image
    const image = `${dir}-crash`;
    await fs.cp(dir, image, { recursive: true });
    try {
      const crashed = await openStore(image);
      const q = crashed.partition('t', 0)!;
      expect(q.highWatermark()).toBe(181n);
      expect(await q.append(await produce(174, 3))).toMatchObject({ errorCode: 0, baseOffset: 174n });
      expect(await q.append(await produce(177, 3))).toMatchObject({ errorCode: 0, baseOffset: 177n });
      expect((await q.append(await produce(180, 2))).baseOffset).toBe(181n);
      expect((await readAll(q)).length).toBe(183);
      await crashed.close();
    } finally {
      await removeDir(image);
    }
  });
});
