// ListOffsets, DeleteRecords, InitProducerId.
import type { DeleteRecordsRequest, DeleteRecordsResponse } from '../protocol/apis/delete-records.ts';
import type { InitProducerIdRequest, InitProducerIdResponse } from '../protocol/apis/init-producer-id.ts';
import type { ListOffsetsRequest, ListOffsetsResponse } from '../protocol/apis/list-offsets.ts';
import { ErrorCode } from '../protocol/errors.ts';
import type { Handler } from '../server.ts';
import { OffsetOutOfRangeError } from '../storage/api.ts';
import type { BrokerState } from './state.ts';

const LATEST = -1n;
const EARLIEST = -2n;

export function listOffsetsHandler(state: BrokerState): Handler<ListOffsetsRequest, ListOffsetsResponse> {
  return async (_ctx, req) => ({
    topics: await Promise.all(
      req.topics.map(async (t) => ({
        name: t.name,
        partitions: await Promise.all(
          t.partitions.map(async (p) => {
            const out = { index: p.index, errorCode: 0, timestamp: -1n, offset: -1n, leaderEpoch: 0 };
            const store = state.store.partition(t.name, p.index);
            if (!store) {
              out.errorCode = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
              out.leaderEpoch = -1;
            } else if (p.timestamp === LATEST) {
              out.offset = store.highWatermark();
            } else if (p.timestamp === EARLIEST) {
              out.offset = store.logStartOffset();
            } else if (p.timestamp < 0n) {
              out.errorCode = ErrorCode.UNSUPPORTED_VERSION; // -3 max timestamp etc. need newer versions
            } else {
              try {
                const found = await store.offsetForTimestamp(p.timestamp);
                if (found) {
                  out.offset = found.offset;
                  out.timestamp = found.timestamp;
                }
              } catch (err) {
                state.logger.error({ err, topic: t.name, partition: p.index }, 'offsetForTimestamp failed');
                out.errorCode = ErrorCode.KAFKA_STORAGE_ERROR;
              }
            }
            return out;
          }),
        ),
      })),
    ),
  });
}

export function deleteRecordsHandler(state: BrokerState): Handler<DeleteRecordsRequest, DeleteRecordsResponse> {
  return async (_ctx, req) => ({
    topics: await Promise.all(
      req.topics.map(async (t) => ({
        name: t.name,
        partitions: await Promise.all(
          t.partitions.map(async (p) => {
            const store = state.store.partition(t.name, p.index);
            if (!store) return { index: p.index, lowWatermark: -1n, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION };
            const hw = store.highWatermark();
            const offset = p.offset === -1n ? hw : p.offset;
            if (offset < 0n || offset > hw)
              return { index: p.index, lowWatermark: -1n, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE };
            try {
              return { index: p.index, lowWatermark: await store.deleteRecordsBefore(offset), errorCode: 0 };
            } catch (err) {
              if (err instanceof OffsetOutOfRangeError)
                return { index: p.index, lowWatermark: -1n, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE };
              state.logger.error({ err, topic: t.name, partition: p.index }, 'deleteRecords failed');
              return { index: p.index, lowWatermark: -1n, errorCode: ErrorCode.KAFKA_STORAGE_ERROR };
            }
          }),
        ),
      })),
    ),
  });
}

export function initProducerIdHandler(state: BrokerState): Handler<InitProducerIdRequest, InitProducerIdResponse> {
  return async (_ctx, req) => {
    if (req.transactionalId !== null) {
      // transactions are not supported: a non-retriable error so clients fail fast
      return { errorCode: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producerId: -1n, producerEpoch: -1 };
    }
    // idempotent producer (also an epoch bump request, KIP-360): a fresh id at epoch 0
    return { errorCode: 0, producerId: await state.producerIds.allocate(), producerEpoch: 0 };
  };
}
