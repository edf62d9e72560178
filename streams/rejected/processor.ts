// The `rejected` processor: storefront.events.rejected.v1 → rejected_events_raw (why beacon events were
// dropped, for integrators and support). No deduplication key: a rejected event has no trusted id.
import { type RejectedEvent, RejectedEventSchema } from '../../schemas/events.ts';
import type { Processor } from '../runtime/types.ts';
import { chTime, zodParse } from '../runtime/util.ts';

export const rejectedProcessor: Processor<RejectedEvent> = {
  name: 'rejected',
  topic: 'rejected',
  tables: {
    written: ['rejected_events_raw'],
    views: [],
    compare: { rejected_events_raw: { day: 'ts', measure: 'count()' } },
  },
  parse: (value) => zodParse(RejectedEventSchema, value),
  async process(batch) {
    return {
      writes: [
        {
          table: 'rejected_events_raw',
          rows: batch.map((d) => ({
            store_id: d.value.store_id,
            ts: chTime(d.value.received_at),
            code: d.value.code,
            reason: d.value.reason,
            path: d.value.path,
            event_type: d.value.event_type ?? '',
            raw_json: d.value.raw_json,
            _partition: d.position.partition,
            _offset: d.position.offset.toString(),
          })),
        },
      ],
    };
  },
};
