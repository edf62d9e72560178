import { describe, expect, it } from 'vitest';
import { lastSequence } from '../../../services/kafka-broker/storage/producer-state.ts';
import {
  ByteReader,
  checkBatchAt,
  computeBatchCrc,
  decodeBatchRecords,
  encodeRecordBatch,
  encodeVarint,
  encodeVarlong,
  ErrorCode,
  findNullKey,
  isProblem,
  OFF_CRC,
  OFF_MAGIC,
  readBatchHeader,
  rebuildBatch,
  setBaseOffset,
  setLogAppendTime,
  validateProducedBatches,
} from '../../../services/kafka-broker/storage/record-batch.ts';

describe('record batch codec', () => {
  it('encodes and decodes records with keys, null values and headers', async () => {
    const b = await encodeRecordBatch(
      [
        { key: 'k1', value: 'v1', headers: [{ key: 'h', value: 'x' }], timestamp: 1000 },
        { key: null, value: null, timestamp: 1005 },
      ],
      { baseTimestamp: 1000, producerId: 7n, producerEpoch: 2, baseSequence: 10 },
    );
    const { header, records } = await decodeBatchRecords(b);
    expect(header).toMatchObject({
      magic: 2,
      recordCount: 2,
      lastOffsetDelta: 1,
      maxTimestamp: 1005n,
      producerId: 7n,
      producerEpoch: 2,
      baseSequence: 10,
    });
    expect(header.size).toBe(b.length);
    expect(records[0].key?.toString()).toBe('k1');
    expect(records[0].headers).toEqual([{ key: 'h', value: Buffer.from('x') }]);
    expect(records[1]).toMatchObject({ key: null, value: null, offsetDelta: 1, timestampDelta: 5n });
  });

  it.each(['gzip', 'zstd'] as const)('round-trips %s batches', async (compression) => {
    const values = Array.from({ length: 50 }, (_, i) => `value-${i}`.repeat(5));
    const b = await encodeRecordBatch(
      values.map((v) => ({ value: v })),
      { compression },
    );
    const { records } = await decodeBatchRecords(b);
    expect(records.map((r) => r.value?.toString())).toEqual(values);
  });

  it('validates framing, magic and CRC', async () => {
    const b = await encodeRecordBatch([{ value: 'x' }]);
    expect(isProblem(validateProducedBatches(b, 1e6))).toBe(false);
    const bad = Buffer.from(b);
    bad[bad.length - 1] ^= 0xff;
    expect(validateProducedBatches(bad, 1e6)).toMatchObject({ errorCode: ErrorCode.CORRUPT_MESSAGE });
    expect(validateProducedBatches(b.subarray(0, b.length - 3), 1e6)).toMatchObject({
      errorCode: ErrorCode.CORRUPT_MESSAGE,
    });
    expect(validateProducedBatches(b.subarray(0, 10), 1e6)).toMatchObject({ errorCode: ErrorCode.CORRUPT_MESSAGE });
    const v1 = Buffer.from(b);
    v1.writeInt8(1, OFF_MAGIC);
    expect(validateProducedBatches(v1, 1e6)).toMatchObject({ errorCode: ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT });
    const v9 = Buffer.from(b);
    v9.writeInt8(9, OFF_MAGIC);
    expect(validateProducedBatches(v9, 1e6)).toMatchObject({ errorCode: ErrorCode.CORRUPT_MESSAGE });
    expect(validateProducedBatches(b, 10)).toMatchObject({ errorCode: ErrorCode.MESSAGE_TOO_LARGE });
    // two batches back to back plus a partial third
    const two = Buffer.concat([b, b]);
    expect(validateProducedBatches(two, 1e6)).toHaveLength(2);
    expect(validateProducedBatches(Buffer.concat([two, b.subarray(0, 20)]), 1e6)).toMatchObject({
      errorCode: ErrorCode.CORRUPT_MESSAGE,
    });
  });

  it('rejects batches whose record count disagrees with lastOffsetDelta', async () => {
    const b = await encodeRecordBatch([{ value: 'a' }, { value: 'b' }]);
    b.writeInt32BE(5, 23); // lastOffsetDelta
    b.writeUInt32BE(computeBatchCrc(b, 0, b.length), OFF_CRC);
    expect(validateProducedBatches(b, 1e6)).toMatchObject({ errorCode: ErrorCode.INVALID_RECORD });
  });

  it('rewrites the base offset without touching the CRC, and LogAppendTime with a fresh CRC', async () => {
    const b = await encodeRecordBatch([{ value: 'a' }], { baseTimestamp: 5 });
    const crc = b.readUInt32BE(OFF_CRC);
    setBaseOffset(b, 0, 123456789n);
    expect(readBatchHeader(b).baseOffset).toBe(123456789n);
    expect(b.readUInt32BE(OFF_CRC)).toBe(crc);
    setLogAppendTime(b, 0, b.length, 99999n);
    const h = checkBatchAt(b, 0, true);
    expect(isProblem(h)).toBe(false);
    expect(h).toMatchObject({ maxTimestamp: 99999n });
    expect((h as { attributes: number }).attributes & 0x08).toBe(0x08);
  });

  it('rebuilds a batch from a subset of records keeping offsets', async () => {
    const b = await encodeRecordBatch(
      ['a', 'b', 'c'].map((v) => ({ key: v, value: v })),
      { compression: 'gzip' },
    );
    const { records } = await decodeBatchRecords(b);
    const rebuilt = await rebuildBatch(b, [records[0].raw, records[2].raw]);
    expect(isProblem(checkBatchAt(rebuilt, 0, true))).toBe(false);
    const again = await decodeBatchRecords(rebuilt);
    expect(again.header.lastOffsetDelta).toBe(2);
    expect(again.records.map((r) => [r.offsetDelta, r.value?.toString()])).toEqual([
      [0, 'a'],
      [2, 'c'],
    ]);
  });

  it('finds null keys', async () => {
    const ok = await encodeRecordBatch([{ key: 'a', value: '1' }]);
    const bad = await encodeRecordBatch([{ key: 'a', value: '1' }, { value: '2' }]);
    expect(findNullKey(ok.subarray(61), 1)).toBeNull();
    expect(findNullKey(bad.subarray(61), 2)).toMatch(/non-null key/);
  });

  it('encodes and decodes varints at the edges', () => {
    for (const v of [0, 1, -1, 63, -64, 64, 300, -300, 2 ** 31 - 1, -(2 ** 31)]) {
      const out: number[] = [];
      encodeVarint(v, out);
      expect(new ByteReader(Buffer.from(out)).varint()).toBe(v);
    }
    for (const v of [0n, -1n, 1n << 40n, -(1n << 62n), (1n << 63n) - 1n, -(1n << 63n)]) {
      const out: number[] = [];
      encodeVarlong(v, out);
      expect(new ByteReader(Buffer.from(out)).varlong()).toBe(v);
    }
  });

  it('wraps sequences at int32 max', () => {
    expect(lastSequence(10, 4)).toBe(14);
    expect(lastSequence(2 ** 31 - 2, 1)).toBe(2 ** 31 - 1);
    expect(lastSequence(2 ** 31 - 2, 2)).toBe(0);
    expect(lastSequence(2 ** 31 - 1, 5)).toBe(4);
  });
});
