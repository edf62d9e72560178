// kafkajs' record-batch CRC-32C is swapped for the native one (services/common/kafka.ts): the swap must
// take effect for clients made by createKafka, compute what kafkajs' own JavaScript CRC computes, and
// produce batches the broker accepts (it verifies every batch's CRC and refuses a wrong one as
// CORRUPT_MESSAGE).
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotentProducer, createKafka, kafkajsCrc32cIsNative } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { startTestBroker, type TestBroker } from '../broker/helpers/broker.ts';

const require = createRequire(import.meta.url);

describe('kafkajs with the native CRC-32C', () => {
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await startTestBroker();
  });
  afterAll(async () => {
    await broker?.stop();
  });

  it('computes the same checksum as kafkajs’ JavaScript CRC-32C', () => {
    const kafka = createKafka(broker.brokers, 'crc-test', createLogger('test', 'silent'));
    expect(kafka).toBeDefined();
    expect(kafkajsCrc32cIsNative()).toBe(true);
    const swapped = require('kafkajs/src/protocol/recordBatch/crc32C/index.js') as (b: Buffer) => number;
    // kafkajs' own implementation, bypassing the swapped module id
    const table = require('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js') as (b: Buffer) => number;
    const javascript = (b: Buffer) => table(b) >>> 0;
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4096 }), (bytes) => {
        const b = Buffer.from(bytes);
        expect(swapped(b)).toBe(javascript(b));
      }),
      { numRuns: 500 },
    );
  });

  it('produces batches the broker verifies and stores, read back intact', async () => {
    const kafka = createKafka(broker.brokers, 'crc-test', createLogger('test', 'silent'));
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'crc', numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = createIdempotentProducer(kafka);
    await producer.connect();
    const values = Array.from({ length: 200 }, (_, i) => randomBytes(50 + i * 13));
    await producer.send({ topic: 'crc', messages: values.map((value, i) => ({ key: String(i), value })) });
    await producer.disconnect();
    expect(kafkajsCrc32cIsNative()).toBe(true);

    const consumer = kafka.consumer({ groupId: 'crc-test', maxWaitTimeInMs: 50 });
    await consumer.connect();
    await consumer.subscribe({ topic: 'crc', fromBeginning: true });
    const got: Buffer[] = [];
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          eachMessage: async ({ message }) => {
            got.push(message.value as Buffer);
            if (got.length === values.length) resolve();
          },
        })
        .catch(reject);
    });
    await consumer.disconnect();
    expect(got.map((b) => b.toString('hex'))).toEqual(values.map((b) => b.toString('hex')));
  });
});
