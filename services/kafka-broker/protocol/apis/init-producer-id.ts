// InitProducerId (key 22) v0-4.
import { defineApi } from '../api.ts';

export interface InitProducerIdRequest {
  transactionalId: string | null;
  transactionTimeoutMs: number;
  producerId: bigint;
  producerEpoch: number;
}
export interface InitProducerIdResponse {
  errorCode: number;
  producerId: bigint;
  producerEpoch: number;
}

export const initProducerId = defineApi<InitProducerIdRequest, InitProducerIdResponse>({
  key: 22,
  name: 'InitProducerId',
  minVersion: 0,
  maxVersion: 4,
  flexibleFrom: 2,
  decode(r, v) {
    const flex = v >= 2;
    const transactionalId = r.nullableString(flex);
    const transactionTimeoutMs = r.int32();
    const producerId = v >= 3 ? r.int64() : -1n;
    const producerEpoch = v >= 3 ? r.int16() : -1;
    r.tags(flex);
    return { transactionalId, transactionTimeoutMs, producerId, producerEpoch };
  },
  encode(w, v, res) {
    const flex = v >= 2;
    w.int32(0).int16(res.errorCode).int64(res.producerId).int16(res.producerEpoch).tags(flex);
  },
});
