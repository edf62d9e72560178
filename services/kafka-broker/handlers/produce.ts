// Produce: hands each partition's record batches to PartitionStore.append untouched (the storage
// layer validates the batch headers and CRC); no per-record work here.
import type { ProducePartitionResponse, ProduceRequest, ProduceResponse } from '../protocol/apis/produce.ts';
import { ErrorCode } from '../protocol/errors.ts';
import type { Handler } from '../server.ts';
import type { BrokerState } from './state.ts';

export function produceHandler(state: BrokerState): Handler<ProduceRequest, ProduceResponse> {
  return async (ctx, req) => {
    const acksValid = req.acks === 0 || req.acks === 1 || req.acks === -1;
    const pending: Promise<unknown>[] = [];
    const topics: ProduceResponse['topics'] = [];
    for (const t of req.topics) {
      const partitions: ProducePartitionResponse[] = [];
      topics.push({ name: t.name, partitions });
      for (const p of t.partitions) {
        const out: ProducePartitionResponse = {
          index: p.index,
          errorCode: ErrorCode.NONE,
          baseOffset: -1n,
          logAppendTimeMs: -1n,
          logStartOffset: -1n,
          errorMessage: null,
        };
        partitions.push(out);
        if (!acksValid) {
          out.errorCode = ErrorCode.INVALID_REQUIRED_ACKS;
          continue;
        }
        const store = state.store.partition(t.name, p.index);
        if (!store) {
          out.errorCode = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
          continue;
        }
        if (!p.records || p.records.length === 0) {
          out.errorCode = ErrorCode.INVALID_RECORD;
          out.errorMessage = 'empty record set';
          continue;
        }
        pending.push(
          store.append(p.records).then(
            (res) => {
              out.errorCode = res.errorCode;
              out.baseOffset = res.errorCode === 0 ? res.baseOffset : -1n;
              out.logAppendTimeMs = res.logAppendTimeMs;
              out.logStartOffset = res.logStartOffset;
              out.errorMessage = res.errorMessage ?? null;
            },
            (err: Error) => {
              state.logger.error({ err, topic: t.name, partition: p.index }, 'append failed');
              out.errorCode = ErrorCode.KAFKA_STORAGE_ERROR;
              out.errorMessage = err.message;
            },
          ),
        );
      }
    }
    if (pending.length === 1) await pending[0];
    else if (pending.length > 1) await Promise.all(pending);
    if (req.acks === 0) {
      const failed = topics.some((t) => t.partitions.some((p) => p.errorCode !== 0));
      if (failed) state.logger.debug({ conn: ctx.connectionId }, 'acks=0 produce had errors');
      return null;
    }
    return { topics };
  };
}
