// Topic administration and configs: CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
// AlterConfigs, IncrementalAlterConfigs.
import type { AlterConfigsRequest, AlterConfigsResponse } from '../protocol/apis/alter-configs.ts';
import type { CreatePartitionsRequest, CreatePartitionsResponse } from '../protocol/apis/create-partitions.ts';
import type { CreatableTopicResult, CreateTopicsRequest } from '../protocol/apis/create-topics.ts';
import type { DeleteTopicsResponse } from '../protocol/apis/delete-topics.ts';
import type {
  DescribeConfigsRequest,
  DescribeConfigsResult,
  DescribedConfig,
} from '../protocol/apis/describe-configs.ts';
import { ErrorCode } from '../protocol/errors.ts';
import type { Handler } from '../server.ts';
import {
  InvalidConfigError,
  InvalidPartitionsError,
  InvalidTopicError,
  TopicExistsError,
  type TopicConfig,
  type TopicInfo,
  UnknownTopicError,
} from '../storage/api.ts';
import {
  configName,
  IGNORED_TOPIC_CONFIGS,
  parseTopicConfigEntry,
  parseTopicConfigs,
  TOPIC_CONFIG_DOCS,
  TOPIC_CONFIG_TYPES,
} from '../topic-config.ts';
import { invalidTopicName, type BrokerState } from './state.ts';

const RESOURCE_TOPIC = 2;
const RESOURCE_BROKER = 4;
const SOURCE_DYNAMIC_TOPIC = 1;
const SOURCE_STATIC_BROKER = 4;
const SOURCE_DEFAULT = 5;

function errorMessageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function topicConfigEntries(
  state: BrokerState,
  config: TopicConfig,
  overrides: Partial<TopicConfig> | undefined,
  synonyms: boolean,
  docs: boolean,
): DescribedConfig[] {
  return (Object.keys(TOPIC_CONFIG_TYPES) as (keyof TopicConfig)[]).map((key) => {
    const value = String(config[key]);
    const isDefault = overrides ? !(key in overrides) : value === String(state.defaultTopicConfig[key]);
    const source = isDefault ? SOURCE_DEFAULT : SOURCE_DYNAMIC_TOPIC;
    const name = configName(key);
    return {
      name,
      value,
      readOnly: false,
      isDefault,
      configSource: source,
      isSensitive: false,
      synonyms: synonyms
        ? [
            ...(isDefault ? [] : [{ name, value, source: SOURCE_DYNAMIC_TOPIC }]),
            { name, value: String(state.defaultTopicConfig[key]), source: SOURCE_DEFAULT },
          ]
        : [],
      configType: TOPIC_CONFIG_TYPES[key],
      documentation: docs ? TOPIC_CONFIG_DOCS[key] : null,
    };
  });
}

function brokerConfigEntries(state: BrokerState, docs: boolean): DescribedConfig[] {
  const d = state.defaultTopicConfig;
  const entries: [string, string, number, string][] = [
    ['node.id', String(state.nodeId), 3, "this broker's id"],
    ['broker.id', String(state.nodeId), 3, "this broker's id"],
    ['log.dirs', state.dataDir, 2, 'data directory'],
    ['num.partitions', String(state.defaultPartitions), 3, 'default partition count of auto-created topics'],
    ['auto.create.topics.enable', String(state.autoCreateTopics), 1, 'auto-create topics on metadata requests'],
    ['default.replication.factor', '1', 3, 'single node'],
    ['offsets.topic.replication.factor', '1', 4, 'single node'],
    ['log.cleanup.policy', d.cleanupPolicy, 7, 'default cleanup.policy'],
    ['log.retention.ms', String(d.retentionMs), 5, 'default retention.ms'],
    ['log.retention.bytes', String(d.retentionBytes), 5, 'default retention.bytes'],
    ['log.segment.bytes', String(d.segmentBytes), 3, 'default segment.bytes'],
    ['log.roll.ms', String(d.segmentMs), 5, 'default segment.ms'],
    ['log.cleaner.delete.retention.ms', String(d.deleteRetentionMs), 5, 'default delete.retention.ms'],
    ['message.max.bytes', String(d.maxMessageBytes), 3, 'default max.message.bytes'],
    ['log.message.timestamp.type', d.messageTimestampType, 2, 'default message.timestamp.type'],
    ['log.flush.policy', state.fsync === 'always' ? 'always' : `${state.fsync}ms`, 2, 'fsync policy (BROKER_FSYNC)'],
  ];
  return entries.map(([name, value, type, doc]) => ({
    name,
    value,
    readOnly: true,
    isDefault: false,
    configSource: SOURCE_STATIC_BROKER,
    isSensitive: false,
    synonyms: [],
    configType: type,
    documentation: docs ? doc : null,
  }));
}

export function describeConfigsHandler(
  state: BrokerState,
): Handler<DescribeConfigsRequest, { results: DescribeConfigsResult[] }> {
  return (_ctx, req) => ({
    results: req.resources.map((res) => {
      const base = { resourceType: res.resourceType, resourceName: res.resourceName };
      let configs: DescribedConfig[];
      if (res.resourceType === RESOURCE_TOPIC) {
        const info = state.store.getTopic(res.resourceName);
        if (!info) {
          return {
            ...base,
            errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            errorMessage: `Topic ${res.resourceName} does not exist`,
            configs: [],
          };
        }
        configs = topicConfigEntries(
          state,
          info.config,
          info.configOverrides,
          req.includeSynonyms,
          req.includeDocumentation,
        );
      } else if (res.resourceType === RESOURCE_BROKER) {
        if (res.resourceName !== '' && res.resourceName !== String(state.nodeId)) {
          return {
            ...base,
            errorCode: ErrorCode.INVALID_REQUEST,
            errorMessage: `Unknown broker ${res.resourceName}`,
            configs: [],
          };
        }
        configs = brokerConfigEntries(state, req.includeDocumentation);
      } else {
        return {
          ...base,
          errorCode: ErrorCode.INVALID_REQUEST,
          errorMessage: `Unsupported resource type ${res.resourceType}`,
          configs: [],
        };
      }
      if (res.configurationKeys !== null && res.configurationKeys.length > 0) {
        const keys = new Set(res.configurationKeys);
        configs = configs.filter((c) => keys.has(c.name));
      }
      return { ...base, errorCode: 0, errorMessage: null, configs };
    }),
  });
}

export function createTopicsHandler(
  state: BrokerState,
): Handler<CreateTopicsRequest, { topics: CreatableTopicResult[] }> {
  return async (_ctx, req) => {
    const counts = new Map<string, number>();
    for (const t of req.topics) counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
    const topics = await Promise.all(
      req.topics.map(async (t): Promise<CreatableTopicResult> => {
        const result: CreatableTopicResult = {
          name: t.name,
          errorCode: 0,
          errorMessage: null,
          numPartitions: -1,
          replicationFactor: -1,
          configs: null,
        };
        const fail = (errorCode: number, errorMessage: string) => {
          result.errorCode = errorCode;
          result.errorMessage = errorMessage;
          return result;
        };
        if ((counts.get(t.name) ?? 0) > 1)
          return fail(ErrorCode.INVALID_REQUEST, `Topic ${t.name} appears more than once in the request`);
        const bad = invalidTopicName(t.name);
        if (bad) return fail(ErrorCode.INVALID_TOPIC_EXCEPTION, bad);
        let partitions = t.numPartitions;
        if (t.assignments.length > 0) {
          if (t.numPartitions !== -1 || t.replicationFactor !== -1) {
            return fail(
              ErrorCode.INVALID_REQUEST,
              'Both numPartitions or replicationFactor and manual assignment were set',
            );
          }
          if (
            t.assignments.some(
              (a, i) => a.partitionIndex !== i || a.brokerIds.length !== 1 || a.brokerIds[0] !== state.nodeId,
            )
          ) {
            return fail(
              ErrorCode.INVALID_REPLICA_ASSIGNMENT,
              `This single-node broker only accepts assignments to broker ${state.nodeId}`,
            );
          }
          partitions = t.assignments.length;
        }
        if (partitions === -1) partitions = state.defaultPartitions;
        if (partitions <= 0) return fail(ErrorCode.INVALID_PARTITIONS, 'Number of partitions must be larger than 0.');
        if (partitions > state.maxPartitionsPerTopic) {
          return fail(
            ErrorCode.INVALID_PARTITIONS,
            `Number of partitions is limited to ${state.maxPartitionsPerTopic} on this broker.`,
          );
        }
        if (t.replicationFactor !== -1 && t.replicationFactor !== 1) {
          if (t.replicationFactor <= 0)
            return fail(ErrorCode.INVALID_REPLICATION_FACTOR, 'Replication factor must be larger than 0.');
          return fail(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            `Replication factor: ${t.replicationFactor} larger than available brokers: 1.`,
          );
        }
        let config: Partial<TopicConfig>;
        try {
          config = parseTopicConfigs(t.configs);
        } catch (err) {
          return fail(ErrorCode.INVALID_CONFIG, errorMessageOf(err));
        }
        if (state.store.getTopic(t.name))
          return fail(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${t.name}' already exists.`);
        let info: TopicInfo | undefined;
        if (!req.validateOnly) {
          try {
            info = await state.store.createTopic(t.name, partitions, config);
            state.logger.info({ topic: t.name, partitions, config }, 'created topic');
          } catch (err) {
            if (err instanceof TopicExistsError)
              return fail(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${t.name}' already exists.`);
            if (err instanceof InvalidConfigError) return fail(ErrorCode.INVALID_CONFIG, err.message);
            if (err instanceof InvalidTopicError) return fail(ErrorCode.INVALID_TOPIC_EXCEPTION, err.message);
            if (err instanceof InvalidPartitionsError) return fail(ErrorCode.INVALID_PARTITIONS, err.message);
            state.logger.error({ err, topic: t.name }, 'createTopic failed');
            return fail(ErrorCode.UNKNOWN_SERVER_ERROR, errorMessageOf(err));
          }
        }
        result.numPartitions = partitions;
        result.replicationFactor = 1;
        const effective = info?.config ?? { ...state.defaultTopicConfig, ...config };
        result.configs = topicConfigEntries(state, effective, info?.configOverrides ?? config, false, false).map(
          (c) => ({
            name: c.name,
            value: c.value,
            readOnly: false,
            configSource: c.configSource,
            isSensitive: false,
          }),
        );
        return result;
      }),
    );
    return { topics };
  };
}

export function deleteTopicsHandler(
  state: BrokerState,
): Handler<{ names: string[]; timeoutMs: number }, DeleteTopicsResponse> {
  return async (_ctx, req) => {
    const responses: DeleteTopicsResponse['responses'] = [];
    for (const name of req.names) {
      const info = state.store.getTopic(name);
      if (!info) {
        responses.push({
          name,
          errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
          errorMessage: 'This server does not host this topic-partition.',
        });
        continue;
      }
      if (info.internal) {
        responses.push({
          name,
          errorCode: ErrorCode.INVALID_REQUEST,
          errorMessage: `Internal topic ${name} cannot be deleted`,
        });
        continue;
      }
      try {
        await state.store.deleteTopic(name);
        await state.groups.onTopicDeleted(name);
        state.logger.info({ topic: name }, 'deleted topic');
        responses.push({ name, errorCode: 0, errorMessage: null });
      } catch (err) {
        if (err instanceof UnknownTopicError) {
          responses.push({ name, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: err.message });
        } else {
          state.logger.error({ err, topic: name }, 'deleteTopic failed');
          responses.push({ name, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: errorMessageOf(err) });
        }
      }
    }
    return { responses };
  };
}

export function createPartitionsHandler(
  state: BrokerState,
): Handler<CreatePartitionsRequest, CreatePartitionsResponse> {
  return async (_ctx, req) => {
    const results: CreatePartitionsResponse['results'] = [];
    for (const t of req.topics) {
      const info = state.store.getTopic(t.name);
      if (!info) {
        results.push({
          name: t.name,
          errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
          errorMessage: `Topic ${t.name} does not exist`,
        });
        continue;
      }
      if (t.count <= info.partitions) {
        const errorMessage = `Topic currently has ${info.partitions} partitions, which is higher than the requested ${t.count}.`;
        results.push({ name: t.name, errorCode: ErrorCode.INVALID_PARTITIONS, errorMessage });
        continue;
      }
      if (t.count > state.maxPartitionsPerTopic) {
        const errorMessage = `Number of partitions is limited to ${state.maxPartitionsPerTopic} on this broker.`;
        results.push({ name: t.name, errorCode: ErrorCode.INVALID_PARTITIONS, errorMessage });
        continue;
      }
      if (!req.validateOnly) {
        try {
          await state.store.createPartitions(t.name, t.count);
          state.logger.info({ topic: t.name, partitions: t.count }, 'created partitions');
        } catch (err) {
          const errorCode =
            err instanceof InvalidPartitionsError ? ErrorCode.INVALID_PARTITIONS : ErrorCode.UNKNOWN_SERVER_ERROR;
          if (errorCode === ErrorCode.UNKNOWN_SERVER_ERROR)
            state.logger.error({ err, topic: t.name }, 'createPartitions failed');
          results.push({ name: t.name, errorCode, errorMessage: errorMessageOf(err) });
          continue;
        }
      }
      results.push({ name: t.name, errorCode: 0, errorMessage: null });
    }
    return { results };
  };
}

const OP_SET = 0;
const OP_DELETE = 1;
const OP_APPEND = 2;
const OP_SUBTRACT = 3;

/** AlterConfigs (operation -1 everywhere: replace the whole set) and IncrementalAlterConfigs. */
export function alterConfigsHandler(state: BrokerState): Handler<AlterConfigsRequest, AlterConfigsResponse> {
  return async (_ctx, req) => {
    const responses: AlterConfigsResponse['responses'] = [];
    for (const res of req.resources) {
      const base = { resourceType: res.resourceType, resourceName: res.resourceName };
      if (res.resourceType !== RESOURCE_TOPIC) {
        responses.push({
          ...base,
          errorCode: ErrorCode.INVALID_REQUEST,
          errorMessage: 'Only topic configs can be altered; broker configs are static',
        });
        continue;
      }
      const info = state.store.getTopic(res.resourceName);
      if (!info) {
        responses.push({
          ...base,
          errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
          errorMessage: `Topic ${res.resourceName} does not exist`,
        });
        continue;
      }
      try {
        // storage applies changes incrementally: a key mapped to undefined returns to its default
        const changes: Record<string, unknown> = {};
        const incremental = res.configs.some((c) => c.operation !== -1);
        if (!incremental) for (const key of Object.keys(TOPIC_CONFIG_TYPES)) changes[key] = undefined;
        for (const c of res.configs) {
          if (IGNORED_TOPIC_CONFIGS.has(c.name)) continue;
          if (c.operation === -1 || c.operation === OP_SET) {
            Object.assign(changes, parseTopicConfigEntry(c.name, c.value) ?? {});
          } else if (c.operation === OP_DELETE) {
            changes[keyOf(c.name)] = undefined;
          } else if ((c.operation === OP_APPEND || c.operation === OP_SUBTRACT) && c.name === 'cleanup.policy') {
            const cur = new Set(info.config.cleanupPolicy.split(','));
            for (const v of (c.value ?? '').split(',').filter(Boolean)) {
              if (c.operation === OP_APPEND) cur.add(v);
              else cur.delete(v);
            }
            Object.assign(changes, parseTopicConfigEntry(c.name, [...cur].join(',')) ?? {});
          } else {
            throw new InvalidConfigError(`Operation ${c.operation} is not supported for ${c.name}`);
          }
        }
        if (!req.validateOnly) await state.store.alterTopicConfig(res.resourceName, changes as Partial<TopicConfig>);
        responses.push({ ...base, errorCode: 0, errorMessage: null });
      } catch (err) {
        const errorCode = err instanceof InvalidConfigError ? ErrorCode.INVALID_CONFIG : ErrorCode.UNKNOWN_SERVER_ERROR;
        if (errorCode !== ErrorCode.INVALID_CONFIG)
          state.logger.error({ err, topic: res.resourceName }, 'alter configs failed');
        responses.push({ ...base, errorCode, errorMessage: errorMessageOf(err) });
      }
    }
    return { responses };
  };
}

function keyOf(name: string): keyof TopicConfig {
  const key = Object.keys(TOPIC_CONFIG_TYPES).find((k) => configName(k as keyof TopicConfig) === name);
  if (!key) throw new InvalidConfigError(`Unknown topic config name: ${name}`);
  return key as keyof TopicConfig;
}
