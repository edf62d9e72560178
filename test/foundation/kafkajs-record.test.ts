// kafkajs' record encoder is fronted by an exact-size one (services/common/kafkajs-record.ts, swapped in by
// createKafka): it must write the same bytes as kafkajs' own encoder for every input it takes, hand the
// rest to kafkajs, and the swap must produce batches the broker accepts and consumers read back intact
// (keys, values, headers, timestamps). Likewise the linear grouping of a send's messages by partition
// (services/common/kafkajs-grouping.ts): kafkajs' result, in one pass.
import {
  createIdempotentProducer,
  createKafka,
  kafkajsRecordDecoderIsFast,
  kafkajsRecordEncoderIsFast,
} from '../../services/common/kafka/index.ts';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupMessagesPerPartition, kafkajsGroupingIsLinear } from '../../services/common/kafka/kafkajs/grouping.ts';
import {
  encodeRecord,
  fastRecordBatch,
  fastRecordDecoder,
  type RecordBatchContext,
  type RecordBatchInput,
  type RecordInput,
} from '../../services/common/kafka/kafkajs/record.ts';
import { createLogger } from '../../services/common/logger.ts';
import { startTestBroker, type TestBroker } from '../broker/helpers/broker.ts';

const require = createRequire(import.meta.url);
const recordId = require.resolve('kafkajs/src/protocol/recordBatch/record/v0/index.js');

/** kafkajs' own module, loaded fresh (the module id may hold the swapped one) */
function kafkajsOwn<T>(id: string): T {
  const cached = require.cache[id];
  delete require.cache[id];
  try {
    return require(id);
  } finally {
    if (cached) require.cache[id] = cached;
  }
}
const kafkajsRecord = () => kafkajsOwn<(input: RecordInput) => { buffer: Buffer }>(recordId);

const bytes = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.uint8Array({ maxLength: 3000 }).map((a) => Buffer.from(a)),
);
const headerValue = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
);
const input = fc.record(
  {
    offsetDelta: fc.oneof(fc.nat({ max: 100_000 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })),
    timestampDelta: fc.oneof(fc.integer({ min: -5_000, max: 5_000 }), fc.integer({ min: -(2 ** 51), max: 2 ** 51 })),
    key: bytes,
    value: bytes,
    headers: fc.dictionary(
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
      fc.oneof(headerValue, fc.array(headerValue, { maxLength: 3 })),
      { maxKeys: 4 },
    ),
  },
  { requiredKeys: [] },
);

describe('kafkajs record encoding', () => {
  it('writes the bytes kafkajs’ own encoder writes, for every input it takes', () => {
    const original = kafkajsRecord();
    fc.assert(
      fc.property(input, (rec) => {
        const fast = encodeRecord(rec);
        expect(fast).toBeDefined();
        expect((fast as { buffer: Buffer }).buffer.toString('hex')).toBe(original(rec).buffer.toString('hex'));
      }),
      { numRuns: 2_000 },
    );
    // the boundaries of each varint width
    for (const n of [0, 63, 64, 8191, 8192, 2 ** 20 - 1, 2 ** 20, 2 ** 27, 2 ** 31 - 1, -1, -64, -65, -(2 ** 31)]) {
      const rec = { offsetDelta: n, timestampDelta: n * 1024, key: 'k', value: Buffer.alloc(Math.abs(n) % 20_000) };
      expect(encodeRecord(rec)?.buffer.toString('hex')).toBe(original(rec).buffer.toString('hex'));
    }
  });

  it('leaves the inputs kafkajs treats specially to kafkajs', () => {
    expect(encodeRecord({ key: 42 as unknown as string, value: 'v' })).toBeUndefined();
    expect(encodeRecord({ key: 'k', value: new Uint8Array([1, 2]) as unknown as Buffer })).toBeUndefined();
    expect(encodeRecord({ value: 'v', headers: { h: null } })).toBeUndefined();
    expect(encodeRecord({ value: 'v', timestampDelta: 1.5 })).toBeUndefined();
    expect(encodeRecord({ value: 'v', timestampDelta: 2 ** 60 })).toBeUndefined();
    expect(encodeRecord({ value: 'v', offsetDelta: 2 ** 31 })).toBeUndefined();
  });

  it('writes the record batches kafkajs’ own RecordBatch writes, compressed ones through kafkajs', async () => {
    const own = kafkajsOwn<{ RecordBatch: (input: RecordBatchInput) => Promise<{ buffer: Buffer }> }>(
      require.resolve('kafkajs/src/protocol/recordBatch/v0/index.js'),
    ).RecordBatch;
    const fast = fastRecordBatch(own) as (input: RecordBatchInput) => Promise<{ buffer: Buffer; size(): number }>;
    const Long = require('kafkajs/src/utils/long.js') as { fromValue(v: unknown): unknown };
    const record = kafkajsRecord();
    await fc.assert(
      fc.asyncProperty(
        fc.array(input, { maxLength: 40 }),
        fc.record({
          firstTimestamp: fc.oneof(fc.nat(), fc.nat().map(String)),
          maxTimestamp: fc.oneof(fc.nat(), fc.nat().map(String)),
          producerId: fc.oneof(fc.constant(-1), fc.bigInt({ min: 0n, max: 2n ** 62n })),
          producerEpoch: fc.integer({ min: 0, max: 32_000 }),
          firstSequence: fc.nat({ max: 2 ** 31 - 1 }),
          transactional: fc.boolean(),
          compression: fc.constantFrom(0, 0, 0, 1),
        }),
        async (recs, fields) => {
          // half the batches from kafkajs' records, half from the fast ones: both kinds arrive here
          const records = recs.map((r, i) => (i % 2 ? record(r) : (encodeRecord(r) as { buffer: Buffer })));
          const args = {
            ...fields,
            producerId: Long.fromValue(fields.producerId),
            records,
            lastOffsetDelta: records.length - 1,
          };
          const [a, b] = await Promise.all([fast(args), own(args)]);
          expect(a.buffer.toString('hex')).toBe(b.buffer.toString('hex'));
          expect(a.size()).toBe(a.buffer.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('decodes records as kafkajs’ own record decoder does', () => {
    type Decode = Parameters<typeof fastRecordDecoder>[0];
    const own = kafkajsOwn<Decode>(require.resolve('kafkajs/src/protocol/recordBatch/record/v0/decoder.js'));
    const header = require('kafkajs/src/protocol/recordBatch/header/v0/decoder.js') as Parameters<
      typeof fastRecordDecoder
    >[1];
    const fast = fastRecordDecoder(own, header);
    const Decoder = require('kafkajs/src/protocol/decoder.js') as new (b: Buffer) => Parameters<Decode>[0];
    const record = kafkajsRecord();
    const decimal = (max: bigint) =>
      fc.oneof(fc.bigInt({ min: -1n, max: 10_000_000n }), fc.bigInt({ min: 0n, max })).map(String);
    const headers = fc.dictionary(
      fc.constantFrom('trace', 'a', 'toString', 'constructor', '__proto__', 'x-dlq-reason'),
      fc.oneof(fc.string({ maxLength: 10 }), fc.array(fc.string({ maxLength: 10 }), { minLength: 1, maxLength: 3 })),
      { maxKeys: 3 },
    );
    const context = fc.record({
      firstOffset: decimal(2n ** 63n - 1n),
      firstTimestamp: decimal(2n ** 62n),
      maxTimestamp: decimal(2n ** 45n),
      magicByte: fc.constant(2),
      isControlBatch: fc.boolean(),
      timestampType: fc.constantFrom(0, 1),
    });
    fc.assert(
      fc.property(input, headers, context, fc.boolean(), (rec, hs, ctx, viaKafkajs) => {
        const encoded = (viaKafkajs ? record({ ...rec, headers: hs }) : encodeRecord({ ...rec, headers: hs })) as
          | { buffer: Buffer }
          | undefined;
        if (!encoded) return;
        // a record inside a larger buffer, after other bytes, as in a fetched batch
        const bytes = Buffer.concat([Buffer.from([7, 7, 7]), encoded.buffer, Buffer.from([9])]);
        const a = new Decoder(bytes);
        const b = new Decoder(bytes);
        a.offset = b.offset = 3;
        // the record decoder starts after the record's length varint (the batch decoder reads it)
        a.readVarInt();
        b.readVarInt();
        const mine = fast(a, ctx as RecordBatchContext) as Record<string, unknown>;
        const theirs = own(b, ctx as RecordBatchContext) as Record<string, unknown>;
        expect(mine).toEqual(theirs);
        expect(Object.getPrototypeOf(mine.headers)).toBe(Object.getPrototypeOf(theirs.headers));
        expect(a.offset).toBe(b.offset);
      }),
      { numRuns: 2_000 },
    );
  });

  it('groups a send by partition as kafkajs does, with the linear grouping in place', () => {
    expect(kafkajsGroupingIsLinear()).toBe(true);
    const own = kafkajsOwn<typeof groupMessagesPerPartition>(
      require.resolve('kafkajs/src/producer/groupMessagesPerPartition.js'),
    );
    expect(own).not.toBe(groupMessagesPerPartition);
    fc.assert(
      fc.property(
        fc.array(fc.record({ key: fc.string(), n: fc.nat() }), { maxLength: 300 }),
        fc.integer({ min: 0, max: 12 }),
        (messages, count) => {
          const args = {
            topic: 't',
            partitionMetadata: Array.from({ length: count }, (_, i) => ({ partitionId: i })),
            messages,
            partitioner: ({ message }: { message: unknown }) => (message as { n: number }).n % Math.max(1, count),
          };
          expect(groupMessagesPerPartition(args)).toEqual(own(args));
        },
      ),
      { numRuns: 300 },
    );
  });

  describe('through the broker', () => {
    let broker: TestBroker;
    beforeAll(async () => {
      broker = await startTestBroker();
    });
    afterAll(async () => {
      await broker?.stop();
    });

    it('is what produce requests use, and what they write is read back intact', async () => {
      const kafka = createKafka(broker.brokers, 'record-test', createLogger('test', 'silent'));
      expect(kafkajsRecordEncoderIsFast()).toBe(true);
      expect(kafkajsRecordDecoderIsFast()).toBe(true);
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({ topics: [{ topic: 'records', numPartitions: 2 }], waitForLeaders: true });
      await admin.disconnect();
      const producer = createIdempotentProducer(kafka);
      await producer.connect();
      const sent = Array.from({ length: 300 }, (_, i) => ({
        key: i % 7 === 0 ? null : `key-${i}-ü`,
        value: i % 11 === 0 ? `text value ${i} ✓` : Buffer.alloc(20 + ((i * 37) % 2_000), i % 256),
        headers: i % 3 === 0 ? { trace: `t-${i}`, multi: ['a', Buffer.from([i % 256])] } : undefined,
        timestamp: String(1_700_000_000_000 + i * 1_000),
      }));
      await producer.send({ topic: 'records', messages: sent });
      await producer.disconnect();

      const consumer = kafka.consumer({ groupId: 'record-test', maxWaitTimeInMs: 50 });
      await consumer.connect();
      await consumer.subscribe({ topic: 'records', fromBeginning: true });
      const got: { key: string | null; value: string; headers: Record<string, unknown>; timestamp: string }[] = [];
      await new Promise<void>((resolve, reject) => {
        consumer
          .run({
            eachMessage: async ({ message }) => {
              got.push({
                key: message.key ? message.key.toString() : null,
                value: (message.value as Buffer).toString('hex'),
                headers: message.headers ?? {},
                timestamp: message.timestamp,
              });
              if (got.length === sent.length) resolve();
            },
          })
          .catch(reject);
      });
      await consumer.disconnect();
      const byValue = new Map(got.map((g) => [`${g.key} ${g.value}`, g]));
      for (const s of sent) {
        const value = Buffer.isBuffer(s.value) ? s.value.toString('hex') : Buffer.from(s.value).toString('hex');
        const g = byValue.get(`${s.key} ${value}`);
        if (!g) throw new Error(`record ${s.key} not read back`);
        expect(g.timestamp).toBe(s.timestamp);
        if (s.headers) {
          expect((g.headers.trace as Buffer).toString()).toBe(s.headers.trace);
          expect((g.headers.multi as Buffer[]).map((b) => b.toString('hex'))).toEqual([
            '61',
            Buffer.from(s.headers.multi[1] as Buffer).toString('hex'),
          ]);
        } else {
          expect(g.headers).toEqual({});
        }
      }
    });
  });
});
