// What a test wrote to a topic of the shared test stack. Other suites run beside it and write to the same
// topics, so a test compares its own store's records, never a whole topic's offsets.
import type { Kafka } from 'kafkajs';
import { TOPICS } from '../../schemas/topics.ts';

/** a topic's high watermark per partition */
export async function watermarks(kafka: Kafka, topicKey: keyof typeof TOPICS): Promise<Map<number, number>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(TOPICS[topicKey].name);
    return new Map(offsets.map((o) => [o.partition, Number(o.high)]));
  } finally {
    await admin.disconnect();
  }
}

let readers = 0;
/** the keys of the records appended to a topic between two watermark snapshots, by offset within each partition */
export async function keysBetween(
  kafka: Kafka,
  topicKey: keyof typeof TOPICS,
  from: Map<number, number>,
  to: Map<number, number>,
): Promise<string[]> {
  const left = new Set([...to].filter(([p, high]) => high > (from.get(p) ?? 0)).map(([p]) => p));
  if (left.size === 0) return [];
  const consumer = kafka.consumer({ groupId: `topic-records-${process.pid}-${++readers}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  const found: { partition: number; offset: number; key: string }[] = [];
  try {
    await consumer.subscribe({ topic: TOPICS[topicKey].name, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          eachMessage: async ({ partition, message }) => {
            const offset = Number(message.offset);
            const high = to.get(partition) ?? 0;
            if (offset >= (from.get(partition) ?? 0) && offset < high)
              found.push({ partition, offset, key: message.key?.toString() ?? '' });
            // the platform's producers are idempotent, not transactional: no control records, so the last
            // offset below the mark is a record
            if (offset + 1 >= high && left.delete(partition) && left.size === 0) resolve();
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return found.sort((a, b) => a.partition - b.partition || a.offset - b.offset).map((r) => r.key);
}
