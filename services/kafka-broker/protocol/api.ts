import type { Reader } from './reader.ts';
import type { Writer } from './writer.ts';

/** One Kafka API: the versions this broker speaks, the request decoder and the response encoder. */
export interface ApiDef<Req, Res> {
  key: number;
  name: string;
  minVersion: number;
  maxVersion: number;
  /** first flexible version (compact encodings, tagged fields, request header v2 / response header v1) */
  flexibleFrom: number;
  decode(r: Reader, version: number): Req;
  encode(w: Writer, version: number, res: Res): void;
  /** initial response buffer size hint */
  sizeHint?: number;
}

export const NEVER = 1 << 30;

export function defineApi<Req, Res>(def: ApiDef<Req, Res>): ApiDef<Req, Res> {
  return def;
}

export const ApiKey = {
  Produce: 0,
  Fetch: 1,
  ListOffsets: 2,
  Metadata: 3,
  OffsetCommit: 8,
  OffsetFetch: 9,
  FindCoordinator: 10,
  JoinGroup: 11,
  Heartbeat: 12,
  LeaveGroup: 13,
  SyncGroup: 14,
  DescribeGroups: 15,
  ListGroups: 16,
  SaslHandshake: 17,
  ApiVersions: 18,
  CreateTopics: 19,
  DeleteTopics: 20,
  DeleteRecords: 21,
  InitProducerId: 22,
  AddPartitionsToTxn: 24,
  AddOffsetsToTxn: 25,
  EndTxn: 26,
  TxnOffsetCommit: 28,
  DescribeConfigs: 32,
  AlterConfigs: 33,
  SaslAuthenticate: 36,
  CreatePartitions: 37,
  DeleteGroups: 42,
  IncrementalAlterConfigs: 44,
  DescribeCluster: 60,
} as const;
