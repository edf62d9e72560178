// The kafkajs adapter's log mapping (services/common/kafka/kafkajs/client.ts): a lost connection is a
// warning (kafkajs reconnects and retries; a failed operation is reported by its caller), so stopping the
// broker under a connected client logs no error-level line from kafkajs' Connection namespace.
import { Writable } from 'node:stream';
import pino from 'pino';
import { expect, test } from 'vitest';
import { createKafka } from '../../services/common/kafka/index.ts';
import { startTestBroker } from '../broker/helpers/broker.ts';

test('a broker going away under a connected client is logged as a warning, not an error', async () => {
  const lines: { level: number; kafkajs?: string; msg: string }[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  const broker = await startTestBroker();
  const kafka = createKafka(broker.brokers, 'client-logs-test', pino({ level: 'debug' }, sink), {
    connectionTimeout: 500,
    retry: { retries: 1, initialRetryTime: 50, maxRetryTime: 100 },
  });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'logs', numPartitions: 1 }] });
  await broker.stop();
  await expect(admin.fetchTopicMetadata({ topics: ['logs'] })).rejects.toThrow();
  await admin.disconnect();

  const connectionLines = lines.filter((l) => l.kafkajs === 'Connection');
  expect(connectionLines.map((l) => l.msg)).toContainEqual(expect.stringMatching(/^Connection error/));
  expect(connectionLines.filter((l) => l.level >= 50)).toEqual([]);
  expect(connectionLines.every((l) => l.level === 40)).toBe(true);
});
