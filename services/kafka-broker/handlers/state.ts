import type { Logger } from 'pino';
import type { GroupCoordinator } from '../groups/api.ts';
import type { ProducerIdAllocator } from '../producer-ids.ts';
import type { LogStore, TopicConfig } from '../storage/api.ts';

/** What every handler may use. One per broker. */
export interface BrokerState {
  store: LogStore;
  groups: GroupCoordinator;
  logger: Logger;
  nodeId: number;
  clusterId: string;
  advertisedHost: string;
  /** the bound port (known after listen) */
  port: number;
  autoCreateTopics: boolean;
  defaultPartitions: number;
  defaultTopicConfig: TopicConfig;
  producerIds: ProducerIdAllocator;
  /** cap on the record bytes of one Fetch response, whatever the client asks */
  fetchMaxResponseBytes: number;
  /** upper bound on partitions per topic (CreateTopics/CreatePartitions) */
  maxPartitionsPerTopic: number;
  dataDir: string;
  fsync: 'always' | number;
}

const LEGAL = /^[a-zA-Z0-9._-]+$/;

/** Kafka's topic name rules; returns an error message or null. */
export function invalidTopicName(name: string | null): string | null {
  if (name === null || name.length === 0) return "Topic name is illegal, it can't be empty";
  if (name === '.' || name === '..') return 'Topic name cannot be "." or ".."';
  if (name.length > 249) return `Topic name is illegal, it can't be longer than 249 characters, topic name: ${name}`;
  if (!LEGAL.test(name))
    return `Topic name "${name}" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'`;
  return null;
}
