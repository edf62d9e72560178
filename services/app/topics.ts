// The topics the app creates once at start (like migrate() for ClickHouse): every topic of the registry
// (schemas/topics.ts), and the `<topic>.dlq` of every topic a stream processor reads. Modules never create
// topics of their own inside the app; standalone processes (the schema registry's main, the admin CLI's
// writer, catalog import, replay, streams/main.ts) create the ones they need with the same ensureTopics.
import type { TopicKey } from '../../schemas/topics.ts';
import { PROCESSORS } from '../../streams/registry.ts';
import { type TopicConfig, topicConfigs } from '../common/kafka/index.ts';

export function appTopics(config: { KAFKA_TOPIC_PREFIX: string }): TopicConfig[] {
  const processorInputs = [...new Set(Object.values(PROCESSORS).map((p) => p.topic as TopicKey))];
  return topicConfigs(config, undefined, processorInputs);
}
