import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LogStore } from '../../../services/kafka-broker/storage/api.ts';
import { encodeRecordBatch, splitBatches } from '../../../services/kafka-broker/storage/record-batch.ts';
import { batch, listFiles, openStore, readAll, removeDir, tempDir } from './helpers.ts';

let dir: string;
let store: LogStore;

beforeEach(async () => {
  dir = await tempDir('log');
  store = await openStore(dir);
});

afterEach(async () => {
  await store.close();
  await removeDir(dir);
});

async function reopen(opts: Parameters<typeof openStore>[1] = {}): Promise<void> {
  await store.close();
  store = await openStore(dir, opts);
}

const values = (n: number, prefix = 'm') => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

describe('append and read', () => {
  it('round-trips batches and assigns contiguous offsets', async () => {
    await store.createTopic('t', 1);
    const p = store.partition('t', 0)!;
    const r1 = await p.append(await batch(values(3, 'a')));
    const r2 = await p.append(await batch(values(5, 'b')));
    expect(r1).toMatchObject({ errorCode: 0, baseOffset: 0n, logAppendTimeMs: -1n, logStartOffset: 0n });
    expect(r2).toMatchObject({ errorCode: 0, baseOffset: 3n });
    expect(p.highWatermark()).toBe(8n);
    const recs = await readAll(p);
    expect(recs.map((r) => r.offset)).toEqual([0n, 1n, 2n, 3n, 4n, 5n, 6n, 7n]);
    expect(recs.map((r) => r.value)).toEqual([...values(3, 'a'), ...values(5, 'b')]);
  });

  it('stores batches byte for byte apart from the assigned base offset', async () => {
    await store.createTopic('t', 1);
    const p = store.partition('t', 0)!;
    await p.append(await batch(['x']));
    const b = await batch(['hello', 'world'], { baseTimestamp: 1234 });
    const copy = Buffer.from(b);
    await p.append(b);
    const res = await p.read(1n, 1 << 20);
    expect(res.chunks).toHaveLength(1);
    const stored = splitBatches(res.chunks[0])[0];
    expect(stored.readBigInt64BE(0)).toBe(1n);
    expect(stored.subarray(8)).toEqual(copy.subarray(8));
  });

  it('appends several batches of one request and compressed batches', async () => {
    await store.createTopic('t', 1);
    const p = store.partition('t', 0)!;
    const multi = Buffer.concat([
      await batch(['a', 'b']),
      await batch(['c'], { compression: 'gzip' }),
      await batch(['d', 'e'], { compression: 'zstd' }),
    ]);
    expect(await p.append(multi)).toMatchObject({ errorCode: 0, baseOffset: 0n });
    expect(p.highWatermark()).toBe(5n);
    expect((await readAll(p)).map((r) => r.value)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('rejects corrupt, truncated and oversized batches without appending', async () => {
    await store.createTopic('t', 1, { maxMessageBytes: 200 });
    const p = store.partition('t', 0)!;
    const good = await batch(['x']);
    const bad = Buffer.from(good);
    bad[bad.length - 2] ^= 0x55;
    expect(await p.append(bad)).toMatchObject({ errorCode: 2, baseOffset: -1n });
    expect(await p.append(good.subarray(0, good.length - 1))).toMatchObject({ errorCode: 2 });
    expect(await p.append(await batch(['y'.repeat(500)]))).toMatchObject({ errorCode: 10 });
    expect(p.highWatermark()).toBe(0n);
    expect(await p.append(good)).toMatchObject({ errorCode: 0, baseOffset: 0n });
  });

  it('reads from the middle of a batch: the whole batch comes back', async () => {
    await store.createTopic('t', 1);
    const p = store.partition('t', 0)!;
    await p.append(await batch(values(10)));
    await p.append(await batch(values(10, 'n')));
    const res = await p.read(4n, 1 << 20);
    const batches = res.chunks.flatMap(splitBatches);
    expect(batches[0].readBigInt64BE(0)).toBe(0n);
    expect(batches).toHaveLength(2);
    expect((await readAll(p, 4n)).map((r) => r.offset)[0]).toBe(4n);
    const fromSecond = await p.read(15n, 1 << 20);
    expect(splitBatches(fromSecond.chunks[0])[0].readBigInt64BE(0)).toBe(10n);
  });

  it('honors maxBytes but always returns at least one whole batch', async () => {
    await store.createTopic('t', 1);
    const p = store.partition('t', 0)!;
    const sizes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const b = await batch(values(20, `b${i}`));
      sizes.push(b.length);
      await p.append(b);
    }
    const one = await p.read(0n, 10);
    expect(one.bytes).toBe(sizes[0]);
    expect(splitBatches(one.chunks[0])).toHaveLength(1);
    const two = await p.read(0n, sizes[0] + sizes[1] + 5);
    expect(two.bytes).toBe(sizes[0] + sizes[1]);
    const all = await p.read(0n, 1 << 20);
    expect(all.bytes).toBe(sizes.reduce((a, b) => a + b));
  });

  it('reports OFFSET_OUT_OF_RANGE outside [logStart, hw] and nothing at hw', async () => {
    await store.createTopic('t', 1);
    const p = store.partition('t', 0)!;
    await p.append(await batch(values(3)));
    expect(await p.read(4n, 100)).toMatchObject({ errorCode: 1, chunks: [] });
    expect(await p.read(-1n, 100)).toMatchObject({ errorCode: 1 });
    expect(await p.read(3n, 100)).toMatchObject({ errorCode: 0, chunks: [], bytes: 0, highWatermark: 3n });
  });

  it('keeps offsets contiguous across segment rolls and reads across segments', async () => {
    await store.createTopic('t', 1, { segmentBytes: 1000 });
    const p = store.partition('t', 0)!;
    const expected: string[] = [];
    for (let i = 0; i < 40; i++) {
      const vs = values(1 + (i % 4), `r${i}`);
      expected.push(...vs);
      const res = await p.append(await batch(vs));
      expect(res.errorCode).toBe(0);
    }
    const logs = await listFiles(path.join(dir, 't-0'), '.log');
    expect(logs.length).toBeGreaterThan(3);
    expect(logs[0]).toBe('00000000000000000000.log');
    const recs = await readAll(p, 0n, 300);
    expect(recs.map((r) => r.value)).toEqual(expected);
    expect(recs.map((r) => r.offset)).toEqual(expected.map((_, i) => BigInt(i)));
    // every segment starts at the offset following the previous segment's last record
    await reopen();
    const q = store.partition('t', 0)!;
    expect(q.highWatermark()).toBe(BigInt(expected.length));
    expect((await readAll(q, 17n, 500)).map((r) => r.value)).toEqual(expected.slice(17));
  });

  it('serves concurrent appends in order with group commit', async () => {
    await store.createTopic('t', 1);
    const p = store.partition('t', 0)!;
    const results = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => p.append(await batch([`c${i}`, `c${i}b`]))),
    );
    const bases = results.map((r) => r.baseOffset).sort((a, b) => Number(a - b));
    expect(bases).toEqual(Array.from({ length: 50 }, (_, i) => BigInt(i * 2)));
    expect(p.highWatermark()).toBe(100n);
  });

  it('stamps LogAppendTime', async () => {
    await store.createTopic('t', 1, { messageTimestampType: 'LogAppendTime' });
    const p = store.partition('t', 0)!;
    const before = BigInt(Date.now());
    const res = await p.append(await batch(['a'], { baseTimestamp: 1 }));
    expect(res.logAppendTimeMs).toBeGreaterThanOrEqual(before);
    const stored = splitBatches((await p.read(0n, 1000)).chunks[0])[0];
    expect(stored.readBigInt64BE(35)).toBe(res.logAppendTimeMs);
    expect(stored.readInt16BE(21) & 0x08).toBe(0x08);
  });

  it('notifies onAppend listeners once data is readable', async () => {
    await store.createTopic('t', 1);
    const p = store.partition('t', 0)!;
    const seen: bigint[] = [];
    const off = p.onAppend(() => seen.push(p.highWatermark()));
    await p.append(await batch(['a']));
    off();
    await p.append(await batch(['b']));
    expect(seen).toEqual([1n]);
  });

  it('finds offsets by timestamp', async () => {
    await store.createTopic('t', 1, { segmentBytes: 400 });
    const p = store.partition('t', 0)!;
    for (let i = 0; i < 30; i++) {
      await p.append(
        await encodeRecordBatch(
          [
            { value: `a${i}`, timestamp: 1000 + i * 10 },
            { value: `b${i}`, timestamp: 1000 + i * 10 + 5 },
          ],
          { baseTimestamp: 1000 + i * 10 },
        ),
      );
    }
    expect(await p.offsetForTimestamp(0n)).toEqual({ offset: 0n, timestamp: 1000n });
    expect(await p.offsetForTimestamp(1000n)).toEqual({ offset: 0n, timestamp: 1000n });
    expect(await p.offsetForTimestamp(1003n)).toEqual({ offset: 1n, timestamp: 1005n });
    expect(await p.offsetForTimestamp(1150n)).toEqual({ offset: 30n, timestamp: 1150n });
    expect(await p.offsetForTimestamp(1291n)).toEqual({ offset: 59n, timestamp: 1295n });
    expect(await p.offsetForTimestamp(1296n)).toBeNull();
    await reopen();
    expect(await store.partition('t', 0)!.offsetForTimestamp(1203n)).toEqual({ offset: 41n, timestamp: 1205n });
  });

  it('works with interval fsync', async () => {
    await reopen({ fsync: 5 });
    await store.createTopic('t', 2);
    const p = store.partition('t', 1)!;
    for (let i = 0; i < 20; i++) await p.append(await batch(values(5, `i${i}`)));
    // an append resolves once the interval flush made it durable
    expect(p.highWatermark()).toBe(100n);
    await reopen({ fsync: 5 });
    expect(store.partition('t', 1)!.highWatermark()).toBe(100n);
    expect((await readAll(store.partition('t', 1)!)).length).toBe(100);
  });
});

describe('recovery', () => {
  async function fillAndClose(segmentBytes = 1 << 20): Promise<{ logFile: string; count: number }> {
    await store.createTopic('t', 1, { segmentBytes });
    const p = store.partition('t', 0)!;
    for (let i = 0; i < 30; i++) await p.append(await batch(values(3, `v${i}`)));
    await store.close();
    const logs = await listFiles(path.join(dir, 't-0'), '.log');
    return { logFile: path.join(dir, 't-0', logs[logs.length - 1]), count: 90 };
  }

  it('reopens with the same high watermark and data', async () => {
    const { count } = await fillAndClose();
    store = await openStore(dir);
    const p = store.partition('t', 0)!;
    expect(p.highWatermark()).toBe(BigInt(count));
    expect(store.getTopic('t')).toMatchObject({ name: 't', partitions: 1, internal: false });
    expect((await p.append(await batch(['next']))).baseOffset).toBe(BigInt(count));
    expect((await readAll(p)).length).toBe(count + 1);
  });

  it('truncates a partially written batch at the tail', async () => {
    const { logFile, count } = await fillAndClose();
    const sizeBefore = (await fs.stat(logFile)).size;
    const partial = (await batch(values(3, 'torn'))).subarray(0, 40);
    await fs.appendFile(logFile, partial);
    store = await openStore(dir);
    const p = store.partition('t', 0)!;
    expect(p.highWatermark()).toBe(BigInt(count));
    expect((await fs.stat(logFile)).size).toBe(sizeBefore);
    expect(await p.append(await batch(['after']))).toMatchObject({ errorCode: 0, baseOffset: BigInt(count) });
    const recs = await readAll(p);
    expect(recs.at(-1)).toMatchObject({ offset: BigInt(count), value: 'after' });
  });

  it('truncates garbage and a garbled last batch', async () => {
    const { logFile, count } = await fillAndClose();
    const size = (await fs.stat(logFile)).size;
    // flip a byte inside the last batch (CRC mismatch) and append random garbage
    const fh = await fs.open(logFile, 'r+');
    const b = Buffer.alloc(1);
    await fh.read(b, 0, 1, size - 3);
    b[0] ^= 0xff;
    await fh.write(b, 0, 1, size - 3);
    await fh.close();
    await fs.appendFile(
      logFile,
      Buffer.from('garbage garbage garbage garbage garbage garbage garbage garbage garbage'),
    );
    store = await openStore(dir);
    const p = store.partition('t', 0)!;
    expect(p.highWatermark()).toBe(BigInt(count - 3));
    const recs = await readAll(p);
    expect(recs.length).toBe(count - 3);
    expect(recs.at(-1)?.value).toBe('v28-2');
  });

  it('rebuilds missing or damaged indexes', async () => {
    await fillAndClose(600);
    const pdir = path.join(dir, 't-0');
    const indexes = await listFiles(pdir, '.index');
    expect(indexes.length).toBeGreaterThan(2);
    await fs.writeFile(path.join(pdir, indexes[0]), Buffer.from('nonsense!'));
    await fs.rm(path.join(pdir, indexes[1]));
    await fs.writeFile(path.join(pdir, indexes.at(-1)!), Buffer.alloc(64, 0xff));
    for (const t of await listFiles(pdir, '.timeindex')) await fs.rm(path.join(pdir, t));
    store = await openStore(dir);
    const p = store.partition('t', 0)!;
    expect(p.highWatermark()).toBe(90n);
    const recs = await readAll(p, 0n, 200);
    expect(recs.map((r) => r.offset)).toEqual(Array.from({ length: 90 }, (_, i) => BigInt(i)));
    expect(await p.offsetForTimestamp(0n)).toMatchObject({ offset: 0n });
  });

  it('uses the index to validate only the tail of a large active segment', async () => {
    await store.createTopic('t', 1);
    const p = store.partition('t', 0)!;
    for (let i = 0; i < 200; i++) await p.append(await batch(values(20, `x${i}`.padEnd(30, '.'))));
    await store.close();
    const idx = await fs.stat(path.join(dir, 't-0', '00000000000000000000.index'));
    expect(idx.size).toBeGreaterThan(8 * 10);
    store = await openStore(dir);
    expect(store.partition('t', 0)!.highWatermark()).toBe(4000n);
  });
});
