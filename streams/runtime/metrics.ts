// Prometheus metrics of the processors (exposed on the app's /metrics).
import { counter, gauge, histogram } from '../../services/common/metrics.ts';

export const streamMetrics = {
  messages: counter(
    'stream_messages_total',
    'Messages consumed by stream processors, by outcome (written, duplicate, dlq)',
    ['processor', 'mode', 'outcome'],
  ),
  rows: counter('stream_rows_written_total', 'Rows inserted into ClickHouse by stream processors', [
    'processor',
    'mode',
    'table',
  ]),
  dlq: counter('stream_dlq_total', 'Messages sent to a DLQ, by reason kind', ['processor', 'mode', 'reason']),
  batchSize: histogram(
    'stream_batch_messages',
    'Messages per written batch',
    ['processor', 'mode'],
    [1, 5, 10, 50, 100, 500, 1000, 5000, 10000, 50000],
  ),
  batchSeconds: histogram('stream_batch_seconds', 'Time to decode, transform, write and commit one batch', [
    'processor',
    'mode',
  ]),
  lag: gauge('stream_consumer_lag', 'Messages between the committed offset and the high watermark', [
    'processor',
    'mode',
    'topic',
    'partition',
  ]),
  lostBlocks: gauge(
    'stream_engine_lost_blocks',
    'Insert blocks ClickHouse recorded as deduplicated but never committed (a hard crash inside an insert); non-zero until a replay rebuilds the table',
    ['processor', 'table'],
  ),
  writeRetries: counter('stream_write_retries_total', 'Retried ClickHouse writes', ['processor', 'mode']),
  writesFailing: gauge(
    'stream_writes_failing',
    'Partitions whose consumption is paused on a failing write (retried until it succeeds; nothing committed meanwhile)',
    ['processor', 'mode'],
  ),
  freshness: histogram(
    'stream_event_freshness_seconds',
    'Broker append time → committed into ClickHouse',
    ['processor', 'mode'],
    [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10, 30, 60],
  ),
};
