// Every API this broker speaks. ApiVersions advertises exactly this table.
import type { ApiDef } from '../api.ts';
import { alterConfigs, incrementalAlterConfigs } from './alter-configs.ts';
import { apiVersions } from './api-versions.ts';
import { createPartitions } from './create-partitions.ts';
import { createTopics } from './create-topics.ts';
import { deleteGroups } from './delete-groups.ts';
import { deleteRecords } from './delete-records.ts';
import { deleteTopics } from './delete-topics.ts';
import { describeCluster } from './describe-cluster.ts';
import { describeConfigs } from './describe-configs.ts';
import { describeGroups } from './describe-groups.ts';
import { fetch } from './fetch.ts';
import { findCoordinator } from './find-coordinator.ts';
import { heartbeat } from './heartbeat.ts';
import { initProducerId } from './init-producer-id.ts';
import { joinGroup } from './join-group.ts';
import { leaveGroup } from './leave-group.ts';
import { listGroups } from './list-groups.ts';
import { listOffsets } from './list-offsets.ts';
import { metadata } from './metadata.ts';
import { offsetCommit } from './offset-commit.ts';
import { offsetFetch } from './offset-fetch.ts';
import { produce } from './produce.ts';
import { saslHandshake } from './sasl-handshake.ts';
import { syncGroup } from './sync-group.ts';

export {
  alterConfigs,
  apiVersions,
  createPartitions,
  createTopics,
  deleteGroups,
  deleteRecords,
  deleteTopics,
  describeCluster,
  describeConfigs,
  describeGroups,
  fetch,
  findCoordinator,
  heartbeat,
  incrementalAlterConfigs,
  initProducerId,
  joinGroup,
  leaveGroup,
  listGroups,
  listOffsets,
  metadata,
  offsetCommit,
  offsetFetch,
  produce,
  saslHandshake,
  syncGroup,
};

export const ALL_APIS: readonly ApiDef<any, any>[] = [
  produce,
  fetch,
  listOffsets,
  metadata,
  offsetCommit,
  offsetFetch,
  findCoordinator,
  joinGroup,
  heartbeat,
  leaveGroup,
  syncGroup,
  describeGroups,
  listGroups,
  saslHandshake,
  apiVersions,
  createTopics,
  deleteTopics,
  deleteRecords,
  initProducerId,
  describeConfigs,
  alterConfigs,
  createPartitions,
  deleteGroups,
  incrementalAlterConfigs,
  describeCluster,
];
