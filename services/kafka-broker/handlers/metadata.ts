// Metadata (with auto-creation), ApiVersions, DescribeCluster, FindCoordinator.
import type { ApiVersionsRequest, ApiVersionsResponse } from '../protocol/apis/api-versions.ts';
import type { DescribeClusterResponse } from '../protocol/apis/describe-cluster.ts';
import type { FindCoordinatorRequest, FindCoordinatorResponse } from '../protocol/apis/find-coordinator.ts';
import type { MetadataRequest, MetadataResponse, MetadataTopic } from '../protocol/apis/metadata.ts';
import { ErrorCode } from '../protocol/errors.ts';
import type { Handler, Route } from '../server.ts';
import { TopicExistsError, type TopicInfo } from '../storage/api.ts';
import { invalidTopicName, type BrokerState } from './state.ts';

function describeTopic(state: BrokerState, t: TopicInfo): MetadataTopic {
  const partitions = [];
  for (let i = 0; i < t.partitions; i++) {
    partitions.push({
      errorCode: 0,
      partitionIndex: i,
      leaderId: state.nodeId,
      leaderEpoch: 0,
      replicaNodes: [state.nodeId],
      isrNodes: [state.nodeId],
      offlineReplicas: [],
    });
  }
  return { errorCode: 0, name: t.name, topicId: t.topicId, isInternal: t.internal, partitions };
}

function errorTopic(name: string | null, topicId: Buffer | null, errorCode: number): MetadataTopic {
  return { errorCode, name, topicId, isInternal: false, partitions: [] };
}

/** Creates a topic with the broker defaults; a concurrent creation of the same topic is not an error. */
export async function autoCreate(state: BrokerState, name: string): Promise<TopicInfo> {
  try {
    const info = await state.store.createTopic(name, state.defaultPartitions);
    state.logger.info({ topic: name, partitions: state.defaultPartitions }, 'auto-created topic');
    return info;
  } catch (err) {
    if (err instanceof TopicExistsError) {
      const info = state.store.getTopic(name);
      if (info) return info;
    }
    throw err;
  }
}

export function metadataHandler(state: BrokerState): Handler<MetadataRequest, MetadataResponse> {
  return async (_ctx, req) => {
    const brokers = [{ nodeId: state.nodeId, host: state.advertisedHost, port: state.port, rack: null }];
    let topics: MetadataTopic[];
    if (req.topics === null) {
      topics = state.store.listTopics().map((t) => describeTopic(state, t));
    } else {
      topics = await Promise.all(
        req.topics.map(async ({ name, topicId }): Promise<MetadataTopic> => {
          if (name === null) {
            const found = topicId ? state.store.listTopics().find((t) => t.topicId.equals(topicId)) : undefined;
            return found ? describeTopic(state, found) : errorTopic(null, topicId, ErrorCode.UNKNOWN_TOPIC_ID);
          }
          const existing = state.store.getTopic(name);
          if (existing) return describeTopic(state, existing);
          if (invalidTopicName(name)) return errorTopic(name, null, ErrorCode.INVALID_TOPIC_EXCEPTION);
          if (!req.allowAutoTopicCreation || !state.autoCreateTopics) {
            return errorTopic(name, null, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
          }
          try {
            return describeTopic(state, await autoCreate(state, name));
          } catch (err) {
            state.logger.error({ err, topic: name }, 'auto-creation failed');
            return errorTopic(name, null, ErrorCode.LEADER_NOT_AVAILABLE);
          }
        }),
      );
    }
    return { brokers, clusterId: state.clusterId, controllerId: state.nodeId, topics };
  };
}

export function apiVersionsHandler(routes: () => Route[]): Handler<ApiVersionsRequest, ApiVersionsResponse> {
  return () => ({
    errorCode: 0,
    apiKeys: routes()
      .map((r) => ({ apiKey: r.api.key, minVersion: r.api.minVersion, maxVersion: r.api.maxVersion }))
      .sort((a, b) => a.apiKey - b.apiKey),
  });
}

export function describeClusterHandler(state: BrokerState): Handler<{ endpointType: number }, DescribeClusterResponse> {
  return (_ctx, req) => ({
    errorCode: 0,
    errorMessage: null,
    endpointType: req.endpointType,
    clusterId: state.clusterId,
    controllerId: state.nodeId,
    brokers: [{ brokerId: state.nodeId, host: state.advertisedHost, port: state.port, rack: null }],
  });
}

const KEY_TYPE_GROUP = 0;
const KEY_TYPE_TRANSACTION = 1;

export function findCoordinatorHandler(state: BrokerState): Handler<FindCoordinatorRequest, FindCoordinatorResponse> {
  return (_ctx, req) => ({
    coordinators: req.keys.map((key) => {
      if (req.keyType === KEY_TYPE_GROUP) {
        return {
          key,
          nodeId: state.nodeId,
          host: state.advertisedHost,
          port: state.port,
          errorCode: 0,
          errorMessage: null,
        };
      }
      const errorCode =
        req.keyType === KEY_TYPE_TRANSACTION ? ErrorCode.COORDINATOR_NOT_AVAILABLE : ErrorCode.INVALID_REQUEST;
      const errorMessage =
        req.keyType === KEY_TYPE_TRANSACTION
          ? 'transactions are not supported by this broker'
          : `unknown key type ${req.keyType}`;
      return { key, nodeId: -1, host: '', port: -1, errorCode, errorMessage };
    }),
  });
}
