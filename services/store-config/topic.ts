// Creates `stores.config.v1` (compacted, retained forever) when it does not exist yet. Both the writer and
// the directory call it, so whichever starts first on a fresh cluster gets the right topic configuration
// instead of an auto-created topic with the broker's defaults.
import type { Kafka } from 'kafkajs';
import { TOPICS } from '../../schemas/topics.ts';
import type { Logger } from '../common/logger.ts';

export async function ensureConfigTopic(kafka: Kafka, topic: string, logger: Logger): Promise<void> {
  const spec = TOPICS.storeConfig;
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = await admin.listTopics();
    if (existing.includes(topic)) return;
    try {
      const created = await admin.createTopics({
        waitForLeaders: true,
        topics: [
          {
            topic,
            numPartitions: spec.partitions,
            configEntries: [
              { name: 'cleanup.policy', value: spec.cleanupPolicy },
              { name: 'retention.ms', value: String(spec.retentionMs) },
            ],
          },
        ],
      });
      if (created) logger.info({ topic }, 'created the store-config topic');
    } catch (err) {
      // another process created it between listTopics and createTopics
      if (
        (err as { type?: string }).type !== 'TOPIC_ALREADY_EXISTS' &&
        !/already exists/i.test(String((err as Error).message))
      )
        throw err;
    }
  } finally {
    await admin.disconnect();
  }
}
