// Creates the processors' input topics (when nothing else has yet) and their `<topic>.dlq` topics, with
// the registry's configuration (schemas/topics.ts), so a fresh cluster never auto-creates them.
import type { Kafka } from 'kafkajs';
import type { Logger } from '../../services/common/logger.ts';
import { dlqTopic, TOPICS, type TopicKey } from '../../schemas/topics.ts';

const DLQ_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export async function ensureStreamTopics(
  kafka: Kafka,
  topics: { key: TopicKey; name: string }[],
  logger: Logger,
): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const wanted: { topic: string; partitions: number; policy: string; retentionMs: number }[] = [];
    for (const { key, name } of topics) {
      const spec = TOPICS[key];
      wanted.push({
        topic: name,
        partitions: spec.partitions,
        policy: spec.cleanupPolicy,
        retentionMs: spec.retentionMs,
      });
      wanted.push({ topic: dlqTopic(name), partitions: 1, policy: 'delete', retentionMs: DLQ_RETENTION_MS });
    }
    for (const w of wanted) {
      if (existing.has(w.topic)) continue;
      try {
        await admin.createTopics({
          waitForLeaders: true,
          topics: [
            {
              topic: w.topic,
              numPartitions: w.partitions,
              configEntries: [
                { name: 'cleanup.policy', value: w.policy },
                { name: 'retention.ms', value: String(w.retentionMs) },
              ],
            },
          ],
        });
        logger.info({ topic: w.topic }, 'created topic');
      } catch (err) {
        // another process created it between listTopics and createTopics
        if (
          (err as { type?: string }).type !== 'TOPIC_ALREADY_EXISTS' &&
          !/already exists/i.test(String((err as Error).message))
        )
          throw err;
      }
    }
  } finally {
    await admin.disconnect();
  }
}
