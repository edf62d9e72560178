// Prometheus metrics of the event intake (exposed on the app's /metrics).
import { counter, gauge, histogram } from '../common/metrics.ts';

export const beaconMetrics = {
  requests: counter('beacon_requests_total', 'POST /beacon requests by status code', ['status']),
  accepted: counter('beacon_events_accepted_total', 'Events stored in Kafka by POST /beacon (duplicates excluded)', [
    'store',
  ]),
  rejected: counter('beacon_events_rejected_total', 'Events dropped by validation, by store and reason code', [
    'store',
    'reason',
  ]),
  duplicates: counter(
    'beacon_dedup_hits_total',
    'Events not produced again because their event_id was already stored',
    ['store', 'scope'],
  ),
  clamped: counter(
    'beacon_timestamps_clamped_total',
    'Event timestamps too far in the future, replaced by the receive time',
    ['store'],
  ),
  slowPath: counter(
    'beacon_events_slow_path_total',
    'Valid events the fast path did not take as sent (validated and encoded the reference way)',
  ),
  unavailable: counter(
    'beacon_unavailable_total',
    'Requests answered 503 because Kafka did not acknowledge, by cause',
    ['cause'],
  ),
  dedupErrors: counter(
    'beacon_dedup_errors_total',
    'Redis dedup calls that failed (intake fails open: events are produced)',
    ['op'],
  ),
  produceBatches: histogram(
    'beacon_produce_batch_records',
    'Records per Kafka produce call of the intake',
    [],
    [1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10000],
  ),
  produceSeconds: histogram('beacon_produce_seconds', 'Duration of the intake Kafka produce calls', ['outcome']),
  queueDepth: gauge('beacon_produce_queue_records', 'Records waiting for or in a Kafka produce call'),
};
