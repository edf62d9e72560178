// The Kafka access layer: the one entry point for producing, consuming, creating topics and the value
// codec. Everything here is client-neutral except the kafkajs adapter (kafkajs/), which is the only code
// that imports kafkajs; its module swaps (kafkajs/swaps.ts) are evaluated first, before kafkajs loads.
import './kafkajs/swaps.ts';

export * from './client.ts';
export * from './codec.ts';
export {
  consumerClientFactory,
  createConsumerClient,
  setGroupOffsets,
} from './kafkajs/consumer.ts';
export {
  chunksByBytes,
  createIdempotentProducer,
  createKafka,
  MAX_REQUEST_BYTES,
  createProducerClient,
  type ProducerClientOptions,
  ensureTopics,
  HashPartitioner,
  windowPartitioner,
  topicCleanupPolicy,
} from './kafkajs/client.ts';
export {
  kafkajsCrc32cIsNative,
  kafkajsIdlePollingStopped,
  kafkajsRecordDecoderIsFast,
  kafkajsRecordEncoderIsFast,
  reportSwaps,
  setIdleFetchWait,
  SWAPS,
  type SwapName,
  swapStatus,
} from './kafkajs/swaps.ts';
export { groupMessagesPerPartition, kafkajsGroupingIsLinear } from './kafkajs/grouping.ts';
export * from './murmur2.ts';
export * from './registry-client.ts';
export * from './topics.ts';
// kafkajs' own types, for the code that still talks to a kafkajs client directly (admin queries, the
// catalog writer): named here so that it does not import kafkajs itself
export type { Admin, Consumer, Kafka, Message, Producer } from './kafkajs/client.ts';
