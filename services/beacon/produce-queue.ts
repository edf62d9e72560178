// Many concurrent requests, few Kafka produce calls: every request hands its records to this queue and
// awaits a promise that resolves when Kafka acknowledged all of them (acks=all, idempotent producer).
//
// One produce call is in flight at a time (kafkajs serialises idempotent produce calls per broker
// anyway); records arriving meanwhile wait and go out together in the next call, which starts as soon
// as the previous one returns. With nothing in flight, the first record waits at most `lingerMs` for
// company. A call that fails or times out rejects every request in it: none of them may answer success.
import type { ProducedRecord, ProducerClient } from '../common/kafka/index.ts';
import type { Logger } from '../common/logger.ts';

export interface QueuedRecord extends ProducedRecord {
  key: string | Buffer;
  value: Buffer;
  /** murmur2 hash of the key when already known (the keyHash partitioner uses it) */
  keyHash?: number;
}

export type UnavailableReason = 'kafka_error' | 'timeout' | 'failing' | 'overloaded' | 'shutdown';

export class ProduceUnavailableError extends Error {
  readonly reason: UnavailableReason;
  /** seconds a client should wait before retrying */
  readonly retryAfterSeconds: number;
  constructor(reason: UnavailableReason, message: string, retryAfterSeconds = 1) {
    super(message);
    this.name = 'ProduceUnavailableError';
    this.reason = reason;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

interface Entry {
  records: QueuedRecord[];
  bytes: number;
  resolve(): void;
  reject(err: Error): void;
  /** the request gave up (timed out) before its records were handed to Kafka: do not send them */
  cancelled: boolean;
}

export interface ProduceQueueOptions {
  /** the producer the batches go to (one send in flight at a time) */
  producer: ProducerClient;
  logger: Logger;
  lingerMs: number;
  /** per-request wait for the acknowledgement; also the broker-side produce timeout */
  timeoutMs: number;
  /** upper bound of one produce call */
  maxBatchRecords?: number;
  maxBatchBytes?: number;
  /** refuse new records beyond this many waiting (back-pressure instead of unbounded memory) */
  maxQueuedRecords?: number;
  /** after a failed produce call, refuse at once for this long instead of letting requests wait (default 500 ms) */
  failFastMs?: number;
  onBatch?: (info: { records: number; bytes: number; seconds: number; ok: boolean }) => void;
}

export interface ProduceQueue extends ProducerClient {
  /** resolves when Kafka acknowledged every record; rejects with ProduceUnavailableError otherwise */
  send(records: QueuedRecord[]): Promise<void>;
  /** records waiting or in flight */
  readonly depth: number;
  /** send what is queued, then disconnect the producer */
  close(): Promise<void>;
}

export function createProduceQueue(opts: ProduceQueueOptions): ProduceQueue {
  const { producer, logger } = opts;
  const maxBatchRecords = opts.maxBatchRecords ?? 10_000;
  const maxBatchBytes = opts.maxBatchBytes ?? 8 * 1024 * 1024;
  const maxQueued = opts.maxQueuedRecords ?? 200_000;
  const failFastMs = opts.failFastMs ?? 500;
  let failingUntil = 0;

  const queue: Entry[] = [];
  let queuedRecords = 0;
  let inFlight = 0; // records in the produce call under way
  let sending = false;
  let timer: (() => void) | undefined; // cancels the scheduled flush
  let closed = false;

  function schedule() {
    if (sending || timer || queue.length === 0) return;
    if (opts.lingerMs <= 0) {
      const h = setImmediate(flush);
      timer = () => clearImmediate(h);
    } else {
      const h = setTimeout(flush, opts.lingerMs);
      timer = () => clearTimeout(h);
    }
  }

  function take(): Entry[] {
    const batch: Entry[] = [];
    let records = 0;
    let bytes = 0;
    while (queue.length > 0) {
      const e = queue[0];
      if (e.cancelled) {
        queue.shift();
        queuedRecords -= e.records.length;
        continue;
      }
      if (batch.length > 0 && (records + e.records.length > maxBatchRecords || bytes + e.bytes > maxBatchBytes)) break;
      queue.shift();
      queuedRecords -= e.records.length;
      batch.push(e);
      records += e.records.length;
      bytes += e.bytes;
    }
    return batch;
  }

  async function flush() {
    timer = undefined;
    if (sending) return;
    const batch = take();
    if (batch.length === 0) return;
    sending = true;
    const out: QueuedRecord[] = [];
    let bytes = 0;
    for (const e of batch) {
      bytes += e.bytes;
      for (const r of e.records) out.push(r);
    }
    const records = out.length;
    inFlight = records;
    const t0 = performance.now();
    let ok = false;
    try {
      await producer.send(out, { timeoutMs: opts.timeoutMs });
      ok = true;
      failingUntil = 0;
      for (const e of batch) e.resolve();
    } catch (err) {
      const error = new ProduceUnavailableError(
        'kafka_error',
        `Kafka did not acknowledge the write: ${(err as Error).message}`,
      );
      logger.warn({ err: (err as Error).message, records }, 'beacon produce failed');
      // Kafka just failed a call that kafkajs already retried: refuse new requests for a moment
      // rather than have each of them wait for the timeout; the next request after that probes again
      failingUntil = Date.now() + failFastMs;
      for (const e of batch) e.reject(error);
    } finally {
      inFlight = 0;
      sending = false;
      opts.onBatch?.({ records, bytes, seconds: (performance.now() - t0) / 1000, ok });
    }
    // whatever queued up while this call was in flight has already waited: send it now
    if (queue.length > 0) setImmediate(flush);
  }

  return {
    connect: () => producer.connect(),
    get depth() {
      return queuedRecords + inFlight;
    },
    send(records) {
      if (records.length === 0) return Promise.resolve();
      if (closed) return Promise.reject(new ProduceUnavailableError('shutdown', 'intake is shutting down', 5));
      if (failingUntil > Date.now()) {
        return Promise.reject(
          new ProduceUnavailableError('failing', 'Kafka is failing; not accepting for a moment', 1),
        );
      }
      if (queuedRecords + records.length > maxQueued) {
        return Promise.reject(new ProduceUnavailableError('overloaded', 'intake queue is full', 1));
      }
      let bytes = 0;
      for (const r of records) bytes += r.value.length + r.key.length + 64;
      return new Promise<void>((resolve, reject) => {
        const entry: Entry = {
          records,
          bytes,
          resolve: () => settle(resolve),
          reject: (e) => settle(() => reject(e)),
          cancelled: false,
        };
        let settled = false;
        let deadline: NodeJS.Timeout | undefined;
        function settle(fn: () => void) {
          if (settled) return;
          settled = true;
          clearTimeout(deadline);
          fn();
        }
        deadline = setTimeout(() => {
          // still waiting in the queue: take it out so nothing of it is sent after the client was told no;
          // already in a produce call: it may still land, and a retry is dropped by event_id downstream
          entry.cancelled = true;
          settle(() =>
            reject(new ProduceUnavailableError('timeout', `Kafka did not acknowledge within ${opts.timeoutMs} ms`, 2)),
          );
        }, opts.timeoutMs);
        queue.push(entry);
        queuedRecords += records.length;
        schedule();
      });
    },
    async close() {
      closed = true;
      timer?.();
      timer = undefined;
      // drain: wait for the call in flight, then send what is left
      const deadline = Date.now() + opts.timeoutMs;
      while ((sending || queue.some((e) => !e.cancelled)) && Date.now() < deadline) {
        if (!sending) await flush();
        else await new Promise((r) => setTimeout(r, 5));
      }
      await producer.close();
    },
  };
}
