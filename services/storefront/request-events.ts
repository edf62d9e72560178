// The request-event emitter used by the storefront read API: one request event per API request, into
// `storefront.requests.v1`. It never blocks or fails a response: `emit` encodes the event and appends
// it to a bounded in-memory buffer (or drops it, counted, when the buffer is full) and returns; a
// background loop sends the buffer in batches through an idempotent producer (acks=all).
//
// Request events are analytics, not the shopper's data: when Kafka is away they wait in the buffer
// (bounded), and what does not fit is dropped and counted rather than slowing the read API down.
import { createProducerClient, type Kafka, type ProducedRecord, type ProducerClient } from '../common/kafka/index.ts';
import type { Logger } from '../common/logger.ts';
import { counter, gauge } from '../common/metrics.ts';

export { deviceTypeFromUserAgent, type DeviceType } from '../common/enrich.ts';

/** the part of the Avro value codec (services/common/kafka/codec.ts) the emitter uses */
export interface ValueEncoder {
  encode(topic: string, value: unknown): Buffer;
}

export interface RequestEventEmitterOptions<E> {
  kafka: Kafka;
  codec: ValueEncoder;
  /** physical topic name (topicName(config, TOPICS.requests.name)) */
  topic: string;
  logger: Logger;
  /** events held in memory at most; beyond that new events are dropped (default 10 000) */
  maxBuffer?: number;
  /** send when this many are buffered (default 500) … */
  batchSize?: number;
  /** … or this long after the first buffered event (default 50 ms) */
  lingerMs?: number;
  /** record key; default: store_id + (session_id | device_id | request_id) */
  key?: (event: E) => string;
  /**
   * ms per partition: the events of one window go to one partition, the next window's to the next
   * (kafka windowPartitioner; the requests processor then writes one or two inserts per fetch instead
   * of one per partition — nothing reads these events per key). 0 = by the key's hash. Default 1 000.
   */
  partitionWindowMs?: number;
  /** the clock of the partition windows (tests) */
  now?: () => number;
  /** an already created producer (tests); default: an idempotent producer on `kafka` */
  producer?: ProducerClient;
}

export interface RequestEventEmitter<E> {
  /** never throws, never waits */
  emit(event: E): void;
  /** events buffered and not yet acknowledged */
  readonly buffered: number;
  /** send what is buffered (bounded wait), then disconnect */
  close(timeoutMs?: number): Promise<void>;
}

const emittedTotal = () => counter('request_events_emitted_total', 'Request events acknowledged by Kafka');
const droppedTotal = () =>
  counter('request_events_dropped_total', 'Request events discarded (buffer_full, encode_error, shutdown)', ['reason']);
const failedTotal = () =>
  counter(
    'request_events_failed_total',
    'Request events in produce calls that failed (they are retried while they fit the buffer)',
  );
const bufferedGauge = () => gauge('request_events_buffered', 'Request events waiting in the emitter buffer');

function defaultKey(e: unknown): string {
  const o = (e ?? {}) as Record<string, unknown>;
  const part = o.session_id ?? o.sessionId ?? o.device_id ?? o.deviceId ?? o.request_id ?? o.requestId ?? '';
  return `${String(o.store_id ?? o.storeId ?? '')}:${String(part)}`;
}

export function createRequestEventEmitter<E = Record<string, unknown>>(
  opts: RequestEventEmitterOptions<E>,
): RequestEventEmitter<E> {
  const maxBuffer = opts.maxBuffer ?? 10_000;
  const batchSize = opts.batchSize ?? 500;
  const lingerMs = opts.lingerMs ?? 50;
  const keyOf = opts.key ?? (defaultKey as (e: E) => string);
  const { logger, codec, topic } = opts;
  const producer =
    opts.producer ??
    createProducerClient(opts.kafka, {
      ...((opts.partitionWindowMs ?? 1_000) > 0
        ? { partitionWindow: { ms: opts.partitionWindowMs ?? 1_000, now: opts.now } }
        : { keyHashPartitioner: true }),
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 },
    });
  const emitted = emittedTotal();
  const dropped = droppedTotal();
  const failed = failedTotal();
  const depth = bufferedGauge();

  let buffer: ProducedRecord[] = [];
  let inFlight = 0;
  let sending = false;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let backoffMs = 0;
  let lastFailureLog = 0;

  function schedule(delay: number) {
    if (timer || sending || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      void flush();
    }, delay);
    timer.unref();
  }

  /** the send under way (close waits for it) */
  let current: Promise<void> = Promise.resolve();

  function flush(): Promise<void> {
    if (sending || buffer.length === 0) return current;
    current = send();
    return current;
  }

  async function send(): Promise<void> {
    sending = true;
    const batch = buffer.length <= batchSize * 4 ? buffer : buffer.slice(0, batchSize * 4);
    buffer = batch === buffer ? [] : buffer.slice(batch.length);
    inFlight = batch.length;
    try {
      await producer.send(batch);
      emitted.inc(batch.length);
      backoffMs = 0;
    } catch (err) {
      failed.inc(batch.length);
      if (closed) {
        // the send outlived close(): nothing will retry it
        dropped.inc({ reason: 'shutdown' }, batch.length);
        return;
      }
      // keep what still fits, oldest first; drop the rest (counted)
      const room = Math.max(0, maxBuffer - buffer.length);
      const keep = batch.slice(0, room);
      if (batch.length > keep.length) dropped.inc({ reason: 'buffer_full' }, batch.length - keep.length);
      buffer = keep.concat(buffer);
      backoffMs = Math.min(Math.max(backoffMs * 2, 200), 5_000);
      const now = Date.now();
      if (now - lastFailureLog > 10_000) {
        lastFailureLog = now;
        logger.warn(
          { err: (err as Error).message, buffered: buffer.length },
          'request events: produce failed, will retry',
        );
      }
    } finally {
      inFlight = 0;
      sending = false;
      depth.set(buffer.length);
    }
    if (buffer.length > 0 && !closed) schedule(backoffMs || (buffer.length >= batchSize ? 0 : lingerMs));
  }

  return {
    get buffered() {
      return buffer.length + inFlight;
    },
    emit(event) {
      try {
        if (closed) {
          dropped.inc({ reason: 'shutdown' });
          return;
        }
        if (buffer.length + inFlight >= maxBuffer) {
          dropped.inc({ reason: 'buffer_full' });
          return;
        }
        let value: Buffer;
        let key: string;
        try {
          value = codec.encode(topic, event);
          key = keyOf(event);
        } catch (err) {
          dropped.inc({ reason: 'encode_error' });
          logger.warn({ err: (err as Error).message }, 'request event could not be encoded; dropped');
          return;
        }
        buffer.push({ topic, key, value });
        depth.set(buffer.length);
        if (buffer.length >= batchSize && !sending && backoffMs === 0) {
          if (timer) {
            clearTimeout(timer);
            timer = undefined;
          }
          void flush();
        } else {
          schedule(backoffMs || lingerMs);
        }
      } catch {
        // emit must never fail a response, whatever happens above (metrics, logger, …)
      }
    },
    async close(timeoutMs = 5_000) {
      if (timer) {
        clearTimeout(timer);
        timer = undefined;
      }
      const deadline = Date.now() + timeoutMs;
      backoffMs = 0;
      while ((buffer.length > 0 || sending) && Date.now() < deadline) {
        if (!sending) await flush();
        else await new Promise((r) => setTimeout(r, 5));
        if (buffer.length > 0 && backoffMs > 0)
          await new Promise((r) => setTimeout(r, Math.min(backoffMs, Math.max(0, deadline - Date.now()))));
      }
      closed = true;
      if (timer) {
        clearTimeout(timer);
        timer = undefined;
      }
      // a send still under way at the deadline may settle within one more timeout: its failure is then a drop
      // at shutdown (counted in flush, also when it settles later still)
      if (sending) {
        let t: NodeJS.Timeout | undefined;
        await Promise.race([current, new Promise((r) => (t = setTimeout(r, timeoutMs)))]);
        clearTimeout(t);
      }
      if (buffer.length > 0) {
        dropped.inc({ reason: 'shutdown' }, buffer.length);
        logger.warn({ dropped: buffer.length }, 'request events: dropped at shutdown (Kafka unavailable)');
        buffer = [];
        depth.set(0);
      }
      await producer.close();
    },
  };
}
