// The physical topics the platform creates, derived from the topic registry (schemas/topics.ts): name
// (with KAFKA_TOPIC_PREFIX), partitions, cleanup.policy, retention.ms, and the `<topic>.dlq` of every
// topic a processor consumes. `ensureTopics` (kafkajs/client.ts) creates the missing ones; the composer
// (services/app/app.ts) runs it once at start for every topic, standalone processes for their own.
import { dlqTopic, TOPICS, type TopicKey } from '../../../schemas/topics.ts';

export interface TopicConfig {
  /** physical name */
  name: string;
  partitions: number;
  cleanupPolicy: 'delete' | 'compact';
  /** -1 = forever */
  retentionMs: number;
}

/** dead-letter topics: one partition, deleted after 30 days */
export const DLQ_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

const ALL_KEYS = Object.keys(TOPICS) as TopicKey[];

/**
 * The topics of `keys` (default: every registry topic) with their registry configuration; the topics in
 * `dlqFor` also get their `<topic>.dlq`.
 */
export function topicConfigs(
  config: { KAFKA_TOPIC_PREFIX: string },
  keys: readonly TopicKey[] = ALL_KEYS,
  dlqFor: readonly TopicKey[] = [],
): TopicConfig[] {
  const out = new Map<string, TopicConfig>();
  for (const key of new Set([...keys, ...dlqFor])) {
    const spec = TOPICS[key];
    const name = `${config.KAFKA_TOPIC_PREFIX}${spec.name}`;
    if (keys.includes(key)) {
      out.set(name, {
        name,
        partitions: spec.partitions,
        cleanupPolicy: spec.cleanupPolicy,
        retentionMs: spec.retentionMs,
      });
    }
    if (dlqFor.includes(key)) {
      const dlq = dlqTopic(name);
      out.set(dlq, { name: dlq, partitions: 1, cleanupPolicy: 'delete', retentionMs: DLQ_RETENTION_MS });
    }
  }
  return [...out.values()];
}

/** The registry configuration of topic `key` under the physical name `name` (a prefixed or test name). */
export function topicConfig(key: TopicKey, name: string): TopicConfig {
  const spec = TOPICS[key];
  return { name, partitions: spec.partitions, cleanupPolicy: spec.cleanupPolicy, retentionMs: spec.retentionMs };
}
