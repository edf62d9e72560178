// The embedded Kafka-protocol broker: storage (log) + group coordinator + wire protocol server.
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { loadClusterId } from './cluster-id.ts';
import { createGroupCoordinator } from './groups/index.ts';
import {
  alterConfigsHandler,
  createPartitionsHandler,
  createTopicsHandler,
  deleteTopicsHandler,
  describeConfigsHandler,
} from './handlers/admin.ts';
import { fetchHandler } from './handlers/fetch.ts';
import {
  deleteGroupsHandler,
  describeGroupsHandler,
  heartbeatHandler,
  joinGroupHandler,
  leaveGroupHandler,
  listGroupsHandler,
  offsetCommitHandler,
  offsetFetchHandler,
  syncGroupHandler,
} from './handlers/groups.ts';
import {
  apiVersionsHandler,
  describeClusterHandler,
  findCoordinatorHandler,
  metadataHandler,
} from './handlers/metadata.ts';
import { deleteRecordsHandler, initProducerIdHandler, listOffsetsHandler } from './handlers/offsets.ts';
import { produceHandler } from './handlers/produce.ts';
import type { BrokerState } from './handlers/state.ts';
import { ProducerIdAllocator } from './producer-ids.ts';
import * as apis from './protocol/apis/index.ts';
import { ErrorCode } from './protocol/errors.ts';
import { KafkaServer, type Route } from './server.ts';
import { openLogStore } from './storage/index.ts';
import type { LogStore, TopicConfig } from './storage/api.ts';
import { KAFKA_DEFAULT_TOPIC_CONFIG } from './topic-config.ts';

export const NODE_ID = 1;

export interface BrokerOptions {
  /** listen address; default 127.0.0.1 */
  host?: string;
  /** default 9092; 0 = any free port */
  port?: number;
  /** host given to clients in Metadata/FindCoordinator; default = host */
  advertisedHost?: string;
  dataDir: string;
  /** 'always' (default): fsync before acknowledging; a number: group commit every N ms */
  fsync?: 'always' | number;
  autoCreateTopics?: boolean;
  defaultPartitions?: number;
  /** overrides of Kafka's default topic configs for new topics */
  defaultTopicConfig?: Partial<TopicConfig>;
  /** how often retention and compaction run (storage default 30 s) */
  maintenanceIntervalMs?: number;
  /** largest accepted request frame; default 100 MiB */
  maxFrameBytes?: number;
  /** cap on the record bytes of one Fetch response; default 32 MiB */
  fetchMaxResponseBytes?: number;
  /** upper bound on partitions per topic accepted by CreateTopics/CreatePartitions; default 10000 */
  maxPartitionsPerTopic?: number;
  /** stop reading a connection while more than this many bytes wait to be written; default 16 MiB */
  writeHighWaterMark?: number;
  logger?: Logger;
  logLevel?: string;
  /** consumer-group tuning passed to the coordinator (e.g. initialRebalanceDelayMs) */
  groupOptions?: { initialRebalanceDelayMs?: number; minSessionTimeoutMs?: number; maxSessionTimeoutMs?: number };
  /** an already opened store to use instead of openLogStore (tests); closed by close() */
  logStore?: LogStore;
}

export interface Broker {
  host: string;
  port: number;
  clusterId: string;
  /** run retention and compaction now */
  runMaintenance(): Promise<void>;
  close(): Promise<void>;
}

export async function startBroker(opts: BrokerOptions): Promise<Broker> {
  const logger = opts.logger ?? pino({ name: 'kafka-broker', level: opts.logLevel ?? 'info' });
  const host = opts.host ?? '127.0.0.1';
  const dataDir = path.resolve(opts.dataDir);
  const fsync = opts.fsync ?? 'always';
  const defaultTopicConfig: TopicConfig = { ...KAFKA_DEFAULT_TOPIC_CONFIG, ...opts.defaultTopicConfig };

  const clusterId = await loadClusterId(dataDir, NODE_ID);
  const producerIds = await ProducerIdAllocator.open(dataDir);
  const store =
    opts.logStore ??
    (await openLogStore({
      dataDir,
      fsync,
      defaultTopicConfig,
      maintenanceIntervalMs: opts.maintenanceIntervalMs,
      logger: logger.child({ component: 'storage' }),
    }));
  let groups: Awaited<ReturnType<typeof createGroupCoordinator>>;
  try {
    groups = await createGroupCoordinator({
      log: store,
      logger: logger.child({ component: 'groups' }),
      ...opts.groupOptions,
    });
  } catch (err) {
    await store.close();
    throw err;
  }

  const state: BrokerState = {
    store,
    groups,
    logger,
    nodeId: NODE_ID,
    clusterId,
    advertisedHost: opts.advertisedHost ?? host,
    port: opts.port ?? 9092,
    autoCreateTopics: opts.autoCreateTopics ?? true,
    defaultPartitions: opts.defaultPartitions ?? 1,
    defaultTopicConfig,
    producerIds,
    fetchMaxResponseBytes: opts.fetchMaxResponseBytes ?? 32 * 1024 * 1024,
    maxPartitionsPerTopic: opts.maxPartitionsPerTopic ?? 10_000,
    dataDir,
    fsync,
  };

  const routes: Route[] = [
    { api: apis.produce, handle: produceHandler(state) },
    { api: apis.fetch, handle: fetchHandler(state) },
    { api: apis.listOffsets, handle: listOffsetsHandler(state) },
    { api: apis.metadata, handle: metadataHandler(state) },
    { api: apis.offsetCommit, handle: offsetCommitHandler(state) },
    { api: apis.offsetFetch, handle: offsetFetchHandler(state) },
    { api: apis.findCoordinator, handle: findCoordinatorHandler(state) },
    { api: apis.joinGroup, handle: joinGroupHandler(state) },
    { api: apis.heartbeat, handle: heartbeatHandler(state) },
    { api: apis.leaveGroup, handle: leaveGroupHandler(state) },
    { api: apis.syncGroup, handle: syncGroupHandler(state) },
    { api: apis.describeGroups, handle: describeGroupsHandler(state) },
    { api: apis.listGroups, handle: listGroupsHandler(state) },
    { api: apis.saslHandshake, handle: () => ({ errorCode: ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms: [] }) },
    { api: apis.apiVersions, handle: apiVersionsHandler(() => routes) },
    { api: apis.createTopics, handle: createTopicsHandler(state) },
    { api: apis.deleteTopics, handle: deleteTopicsHandler(state) },
    { api: apis.deleteRecords, handle: deleteRecordsHandler(state) },
    { api: apis.initProducerId, handle: initProducerIdHandler(state) },
    { api: apis.describeConfigs, handle: describeConfigsHandler(state) },
    { api: apis.alterConfigs, handle: alterConfigsHandler(state) },
    { api: apis.createPartitions, handle: createPartitionsHandler(state) },
    { api: apis.deleteGroups, handle: deleteGroupsHandler(state) },
    { api: apis.incrementalAlterConfigs, handle: alterConfigsHandler(state) },
    { api: apis.describeCluster, handle: describeClusterHandler(state) },
  ];

  const server = new KafkaServer({
    host,
    port: opts.port ?? 9092,
    routes,
    logger,
    maxFrameBytes: opts.maxFrameBytes,
    writeHighWaterMark: opts.writeHighWaterMark,
  });
  let running: Awaited<ReturnType<KafkaServer['listen']>>;
  try {
    running = await server.listen();
  } catch (err) {
    await groups.close();
    await store.close();
    throw err;
  }
  state.port = running.port;
  logger.info(
    { host, port: running.port, advertisedHost: state.advertisedHost, dataDir, fsync, clusterId },
    'broker listening',
  );

  let closing: Promise<void> | null = null;
  return {
    host,
    port: running.port,
    clusterId,
    runMaintenance: () => store.runMaintenance(),
    close() {
      closing ??= (async () => {
        await running.close();
        await groups.close();
        await store.close();
        logger.info('broker stopped');
      })();
      return closing;
    },
  };
}
