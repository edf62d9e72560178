// Creates the topics the intake writes to, with their registry configuration (schemas/topics.ts), when
// they do not exist yet — so a fresh cluster never gets auto-created topics with broker defaults.
import type { Kafka } from 'kafkajs';
import { TOPICS, type TopicKey } from '../../schemas/topics.ts';
import type { Logger } from '../common/logger.ts';

export async function ensureTopics(
  kafka: Kafka,
  topics: { key: TopicKey; name: string }[],
  logger: Logger,
): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t.name));
    if (missing.length === 0) return;
    for (const { key, name } of missing) {
      const spec = TOPICS[key];
      try {
        await admin.createTopics({
          waitForLeaders: true,
          topics: [
            {
              topic: name,
              numPartitions: spec.partitions,
              configEntries: [
                { name: 'cleanup.policy', value: spec.cleanupPolicy },
                { name: 'retention.ms', value: String(spec.retentionMs) },
              ],
            },
          ],
        });
        logger.info({ topic: name }, 'created topic');
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
