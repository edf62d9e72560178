// kafkajs 2.2.4's producer send (src/producer/sendMessages.js) with its retry fixed: kafkajs keeps the
// responses of an attempt per *broker* and, on a retry, sends only to brokers that have no response yet.
// When a leader dies mid-send and a broker that already answered for its own partitions becomes the new
// leader of the dead one's partitions, those partitions are never sent, and send() resolves as if they had
// been acknowledged (found by test/kafka/failover.test.ts on a 3-node Apache Kafka: a third of a batch
// lost). Here responses are kept per *partition*, and each retry sends every partition without one to its
// current leader. Everything else is kafkajs' code: grouping, sequence numbers, broker locks, the errors
// that refresh metadata and retry. Registered under kafkajs' module id before its producer loads it
// (swaps.ts); kafkajsSendIsPerPartition() says whether it holds.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

type Message = unknown;
interface PartitionResponse {
  topicName: string;
  partition: number;
  [k: string]: unknown;
}
interface TopicDataEntry {
  topic: string;
  partitions: { partition: number; messages: Message[]; firstSequence?: number }[];
}
interface Broker {
  nodeId: number;
  produce(request: Record<string, unknown>): Promise<unknown>;
}
interface Cluster {
  refreshMetadataIfNecessary(): Promise<void>;
  refreshMetadata(): Promise<void>;
  findTopicPartitionMetadata(topic: string): unknown[];
  findLeaderForPartitions(topic: string, partitions: string[]): Record<string, number[]>;
  findBroker(q: { nodeId: string }): Promise<Broker>;
  addMultipleTargetTopics(topics: string[]): Promise<void>;
  removeBroker(q: { host: string; port: number }): void;
  isConnected(): boolean;
  connect(): Promise<void>;
  targetTopics: Set<string>;
}
interface EosManager {
  acquireBrokerLock(b: Broker): Promise<void>;
  releaseBrokerLock(b: Broker): Promise<void>;
  isTransactional(): boolean;
  addPartitionsToTransaction(topicData: TopicDataEntry[]): Promise<void>;
  getSequence(topic: string, partition: number): number;
  updateSequence(topic: string, partition: number, n: number): void;
  getTransactionalId(): string;
  getProducerId(): number;
  getProducerEpoch(): number;
}
interface SendError extends Error {
  host: string;
  port: number;
  retriable?: boolean;
}
type Retrier = <T>(fn: (bail: (e: Error) => void, retryCount: number, retryTime: number) => Promise<T>) => Promise<T>;
interface Logger {
  debug(msg: string, extra?: object): void;
  error(msg: string, extra?: object): void;
}

export function createSendMessages({
  logger,
  cluster,
  partitioner,
  eosManager,
  retrier,
}: {
  logger: Logger;
  cluster: Cluster;
  partitioner: unknown;
  eosManager: EosManager;
  retrier: Retrier;
}) {
  const { KafkaJSMetadataNotLoaded } = require('kafkajs/src/errors.js');
  const { staleMetadata } = require('kafkajs/src/protocol/error.js');
  const groupMessagesPerPartition = require('kafkajs/src/producer/groupMessagesPerPartition.js');
  const createTopicData = require('kafkajs/src/producer/createTopicData.js');
  const responseSerializer = require('kafkajs/src/producer/responseSerializer.js');

  return async ({
    acks,
    timeout,
    compression,
    topicMessages,
  }: {
    acks: number;
    timeout: number;
    compression: number;
    topicMessages: { topic: string; messages: Message[] }[];
  }): Promise<PartitionResponse[]> => {
    /** `${topic}\0${partition}` → its response (null with acks=0): a partition with an entry is done */
    const answered = new Map<string, PartitionResponse | null>();
    const key = (topic: string, partition: number | string) => `${topic}\0${partition}`;

    const createProducerRequests = async (): Promise<Promise<void>[]> => {
      await cluster.refreshMetadataIfNecessary();
      const perLeader = new Map<
        string,
        { topic: string; partitions: number[]; messagesPerPartition: Record<string, Message[]> }[]
      >();
      for (const { topic, messages } of topicMessages) {
        const partitionMetadata = cluster.findTopicPartitionMetadata(topic);
        if (partitionMetadata.length === 0) {
          logger.debug('Producing to topic without metadata', { topic, targetTopics: [...cluster.targetTopics] });
          throw new KafkaJSMetadataNotLoaded('Producing to topic without metadata');
        }
        const messagesPerPartition: Record<string, Message[]> = groupMessagesPerPartition({
          topic,
          partitionMetadata,
          messages,
          partitioner,
        });
        const pending = Object.keys(messagesPerPartition).filter((p) => !answered.has(key(topic, p)));
        if (pending.length === 0) continue;
        const partitionsPerLeader = cluster.findLeaderForPartitions(topic, pending);
        for (const [nodeId, partitions] of Object.entries(partitionsPerLeader)) {
          const list = perLeader.get(nodeId) ?? [];
          list.push({ topic, partitions, messagesPerPartition });
          perLeader.set(nodeId, list);
        }
      }

      return [...perLeader].map(async ([nodeId, topicDataForBroker]) => {
        const broker = await cluster.findBroker({ nodeId });
        const topicData: TopicDataEntry[] = createTopicData(topicDataForBroker);
        await eosManager.acquireBrokerLock(broker);
        try {
          if (eosManager.isTransactional()) await eosManager.addPartitionsToTransaction(topicData);
          for (const { topic, partitions } of topicData) {
            for (const entry of partitions) {
              entry.firstSequence = eosManager.getSequence(topic, entry.partition);
              eosManager.updateSequence(topic, entry.partition, entry.messages.length);
            }
          }
          let response: unknown;
          try {
            response = await broker.produce({
              transactionalId: eosManager.isTransactional() ? eosManager.getTransactionalId() : undefined,
              producerId: eosManager.getProducerId(),
              producerEpoch: eosManager.getProducerEpoch(),
              acks,
              timeout,
              compression,
              topicData,
            });
          } catch (e) {
            for (const { topic, partitions } of topicData) {
              for (const entry of partitions) eosManager.updateSequence(topic, entry.partition, -entry.messages.length);
            }
            throw e;
          }
          if (acks !== 0) {
            for (const r of responseSerializer(response) as PartitionResponse[])
              answered.set(key(r.topicName, r.partition), r);
          } else {
            for (const { topic, partitions } of topicData)
              for (const entry of partitions) answered.set(key(topic, entry.partition), null);
          }
        } finally {
          await eosManager.releaseBrokerLock(broker);
        }
      });
    };

    return retrier(async (bail, retryCount, retryTime) => {
      await cluster.addMultipleTargetTopics(topicMessages.map(({ topic }) => topic));
      try {
        await Promise.all(await createProducerRequests());
        return [...answered.values()].filter((r): r is PartitionResponse => r !== null);
      } catch (err) {
        const e = err as SendError;
        if (e.name === 'KafkaJSConnectionClosedError') cluster.removeBroker({ host: e.host, port: e.port });
        if (!cluster.isConnected()) {
          logger.debug(`Cluster has disconnected, reconnecting: ${e.message}`, { retryCount, retryTime });
          await cluster.connect();
          await cluster.refreshMetadata();
          throw e;
        }
        // stale metadata (e.g. the partition count grew, a leader moved): refresh and retry
        if (
          staleMetadata(e) ||
          e.name === 'KafkaJSMetadataNotLoaded' ||
          e.name === 'KafkaJSConnectionError' ||
          e.name === 'KafkaJSConnectionClosedError' ||
          (e.name === 'KafkaJSProtocolError' && e.retriable)
        ) {
          logger.error(`Failed to send messages: ${e.message}`, { retryCount, retryTime });
          await cluster.refreshMetadata();
          throw e;
        }
        logger.error(`${e.message}`, { retryCount, retryTime });
        if (e.retriable) throw e;
        bail(e);
        return [];
      }
    });
  };
}

let id: string | undefined;
try {
  id = require.resolve('kafkajs/src/producer/sendMessages.js');
} catch {
  id = undefined;
}
if (id && !require.cache[id]) {
  require.cache[id] = {
    id,
    filename: id,
    loaded: true,
    exports: createSendMessages,
    children: [],
    paths: [],
  } as unknown as NodeJS.Module;
}

/** Whether kafkajs' producer sends with the per-partition retry above. */
export function kafkajsSendIsPerPartition(): boolean {
  return id !== undefined && require.cache[id]?.exports === createSendMessages;
}
