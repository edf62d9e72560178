import { crc32c } from '@node-rs/crc32';
import { describe, expect, it } from 'vitest';
import {
  decodeGroupValue,
  decodeKey,
  decodeOffsetValue,
  decodeRecordBatches,
  encodeGroupKey,
  encodeGroupValue,
  encodeOffsetKey,
  encodeOffsetValue,
  encodeRecordBatches,
} from '../../../services/kafka-broker/groups/offsets-codec.ts';
import { partitionForGroup } from '../../../services/kafka-broker/groups/offsets-log.ts';

describe('__consumer_offsets codec', () => {
  it('round-trips keys and values in Kafka layout', () => {
    const k = encodeOffsetKey('grp', 'orders', 7);
    expect(k.readInt16BE(0)).toBe(1);
    expect(decodeKey(k)).toEqual({ type: 'offset', group: 'grp', topic: 'orders', partition: 7 });
    expect(decodeKey(encodeGroupKey('grp'))).toEqual({ type: 'group', group: 'grp' });
    const v = { offset: 123456789012n, leaderEpoch: 4, metadata: 'héllo', commitTimestamp: 1_700_000_000_123 };
    expect(decodeOffsetValue(encodeOffsetValue(v))).toEqual(v);
    const g = {
      protocolType: 'consumer',
      generationId: 9,
      protocolName: 'range',
      leaderId: 'm1',
      currentStateTimestamp: 1234,
      members: [
        {
          memberId: 'm1',
          groupInstanceId: null,
          clientId: 'c',
          clientHost: '/h',
          rebalanceTimeoutMs: 5,
          sessionTimeoutMs: 6,
          subscription: Buffer.from('s'),
          assignment: Buffer.from('a'),
        },
        {
          memberId: 'm2',
          groupInstanceId: 'i2',
          clientId: 'c2',
          clientHost: '/h2',
          rebalanceTimeoutMs: 7,
          sessionTimeoutMs: 8,
          subscription: Buffer.alloc(0),
          assignment: Buffer.alloc(0),
        },
      ],
    };
    expect(decodeGroupValue(encodeGroupValue(g))).toEqual(g);
  });

  it('writes valid v2 batches (CRC-32C) and reads them back, tombstones included', async () => {
    const records = [
      {
        key: encodeOffsetKey('g', 't', 0),
        value: encodeOffsetValue({ offset: 1n, leaderEpoch: -1, metadata: '', commitTimestamp: 5 }),
      },
      { key: encodeGroupKey('g'), value: null },
    ];
    const buf = await encodeRecordBatches(records, 1000);
    expect(buf.readInt8(16)).toBe(2);
    expect(buf.readUInt32BE(17)).toBe(crc32c(buf.subarray(21)) >>> 0);
    buf.writeBigInt64BE(40n, 0); // the log assigns the base offset
    const [batch] = await decodeRecordBatches(buf);
    expect(batch.baseOffset).toBe(40n);
    expect(batch.lastOffset).toBe(41n);
    expect(batch.records.map((r) => r.offset)).toEqual([40n, 41n]);
    expect(batch.records[1].value).toBeNull();
    expect(batch.records[0].timestamp).toBe(1000n);
    expect(decodeOffsetValue(batch.records[0].value!).offset).toBe(1n);
  });

  it('splits large writes into several batches', async () => {
    const records = Array.from({ length: 50 }, (_, i) => ({
      key: encodeOffsetKey('g', 't', i),
      value: Buffer.alloc(100),
    }));
    const buf = await encodeRecordBatches(records, 0, 1000);
    const batches = await decodeRecordBatches(buf);
    expect(batches.length).toBeGreaterThan(1);
    expect(batches.reduce((n, b) => n + b.records.length, 0)).toBe(50);
  });

  it('maps groups to partitions like Kafka (abs(String.hashCode) % n)', () => {
    // "test".hashCode() = 3556498
    expect(partitionForGroup('test', 50)).toBe(3556498 % 50);
    expect(partitionForGroup('anything', 1)).toBe(0);
  });
});
