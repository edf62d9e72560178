// A small pool of worker threads running prepareBatch, so validation, enrichment and Avro encoding use
// the other cores while the main thread does HTTP and Redis. Each request's body goes to the least busy
// worker. Two modes:
//   producing (WorkerInit.kafka set)  the worker also owns an idempotent producer and a produce queue
//       (kafkajs' record encoding, partitioning and CRC are the intake's largest CPU cost after
//       validation): the encoded values stay in the worker, the main thread gets the event ids, asks
//       Redis which are duplicates and tells the worker what to produce; the worker answers once Kafka
//       acknowledged (or why not).
//   transfer  the values come back in one transferred ArrayBuffer (no copy) and the main thread produces.
// A worker that dies fails its requests (503) and is replaced.
import { Worker } from 'node:worker_threads';
import type { Logger } from '../common/logger.ts';
import type { Prepared, PrepareInput, PrepareResult, PrepareSettings } from './prepare.ts';
import { ProduceUnavailableError, type UnavailableReason } from './produce-queue.ts';

export interface WorkerInit {
  /** the Avro value schemas registered by the main thread */
  schemas: { topic: string; schema: string; id: number }[];
  settings: PrepareSettings;
  /** producing mode: each worker connects its own idempotent producer */
  kafka?: { brokers: string[]; clientId: string; lingerMs: number; timeoutMs: number; logLevel: string };
}

/** worker → main in producing mode */
export type ProducingMessage =
  | {
      id: number;
      ok: true;
      eventIds: string[];
      rejections: OkResult['rejections'];
      batchDuplicates: number;
      clamped: number;
      slow: number;
    }
  | { id: number; produced: true }
  | { id: number; unavailable: { reason: UnavailableReason; message: string; retryAfterSeconds: number } }
  | { batch: { records: number; bytes: number; seconds: number; ok: boolean }; depth: number }
  | { closed: true };

type OkResult = Extract<PrepareResult, { ok: true }>;

interface PackedOk {
  id: number;
  ok: true;
  /** every value and key of the request */
  buffer: ArrayBuffer;
  eventIds: string[];
  /** per event: key offset, key length, key hash, value offset, value length; then per rejected value: offset, length */
  meta: Int32Array;
  rejections: OkResult['rejections'];
  batchDuplicates: number;
  clamped: number;
  slow: number;
}

type WorkerMessage =
  | PackedOk
  | ProducingMessage
  | { id: number; ok: false; result: PrepareResult }
  | { id: number; error: string }
  | { ready: true };

const EVENT_FIELDS = 5;

/**
 * worker side: the values and keys stay in the buffer prepareBatch wrote them to, which is transferred
 * (not copied) with a table of offsets; values from elsewhere are copied into one buffer first
 */
export function pack(id: number, result: PrepareResult): { message: WorkerMessage; transfer: ArrayBuffer[] } {
  if (!result.ok) return { message: { id, ok: false, result }, transfer: [] };
  const { events, rejectedValues } = result;
  let buffer = (events[0]?.value ?? rejectedValues[0])?.buffer as ArrayBuffer | undefined;
  const shared =
    buffer instanceof ArrayBuffer &&
    events.every((e) => e.key.buffer === buffer && e.value.buffer === buffer) &&
    rejectedValues.every((v) => v.buffer === buffer);
  const meta = new Int32Array(events.length * EVENT_FIELDS + rejectedValues.length * 2);
  if (shared && buffer) {
    let m = 0;
    for (const e of events) {
      meta[m++] = e.key.byteOffset;
      meta[m++] = e.key.length;
      meta[m++] = e.keyHash;
      meta[m++] = e.value.byteOffset;
      meta[m++] = e.value.length;
    }
    for (const v of rejectedValues) {
      meta[m++] = v.byteOffset;
      meta[m++] = v.length;
    }
  } else {
    let total = 0;
    for (const e of events) total += e.key.length + e.value.length;
    for (const v of rejectedValues) total += v.length;
    buffer = new ArrayBuffer(total);
    const bytes = new Uint8Array(buffer);
    let off = 0;
    let m = 0;
    const put = (b: Uint8Array) => {
      bytes.set(b, off);
      meta[m++] = off;
      meta[m++] = b.length;
      off += b.length;
    };
    for (const e of events) {
      put(e.key);
      meta[m++] = e.keyHash;
      put(e.value);
    }
    for (const v of rejectedValues) put(v);
  }
  return {
    message: {
      id,
      ok: true,
      buffer,
      eventIds: events.map((e) => e.eventId),
      meta,
      rejections: result.rejections,
      batchDuplicates: result.batchDuplicates,
      clamped: result.clamped,
      slow: result.slow,
    },
    transfer: [buffer, meta.buffer as ArrayBuffer],
  };
}

function unpack(m: PackedOk): OkResult {
  const { buffer, meta, eventIds } = m;
  const events = new Array<OkResult['events'][number]>(eventIds.length);
  let i = 0;
  for (; i < eventIds.length; i++) {
    const b = i * EVENT_FIELDS;
    events[i] = {
      eventId: eventIds[i],
      key: Buffer.from(buffer, meta[b], meta[b + 1]),
      keyHash: meta[b + 2],
      value: Buffer.from(buffer, meta[b + 3], meta[b + 4]),
    };
  }
  const rejectedValues: Buffer[] = [];
  for (let b = i * EVENT_FIELDS; b < meta.length; b += 2)
    rejectedValues.push(Buffer.from(buffer, meta[b], meta[b + 1]));
  return {
    ok: true,
    events,
    rejectedValues,
    rejections: m.rejections,
    batchDuplicates: m.batchDuplicates,
    clamped: m.clamped,
    slow: m.slow,
  };
}

export class PrepareWorkerError extends Error {}

/** the parent's Node flags minus those that only make sense for an --eval entry point */
function workerExecArgv(): string[] {
  const out: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-e' || a === '--eval' || a === '-p' || a === '--print') {
      i++; // and its code
      continue;
    }
    if (a.startsWith('--input-type') || a.startsWith('--eval=') || a.startsWith('--print=')) continue;
    out.push(a);
  }
  return out;
}

interface Slot {
  worker: Worker;
  pending: Map<number, { resolve(r: any): void; reject(e: Error): void }>;
  depth: number;
  closed?: () => void;
}

export interface PreparePool {
  /** transfer mode: the values come back */
  prepare(input: PrepareInput): Promise<PrepareResult>;
  /** producing mode: the values stay in the worker; `produce` sends them */
  prepareAndHold(input: PrepareInput): Promise<Prepared>;
  readonly size: number;
  /** records waiting or in flight in the workers' produce queues (producing mode) */
  readonly depth: number;
  /** drain the workers' produce queues (producing mode), then stop them */
  close(): Promise<void>;
}

export interface PreparePoolOptions {
  size: number;
  init: WorkerInit;
  logger: Logger;
  /** producing mode: each produce call of a worker */
  onBatch?: (info: { records: number; bytes: number; seconds: number; ok: boolean }) => void;
}

export async function createPreparePool(opts: PreparePoolOptions): Promise<PreparePool> {
  const url = new URL('./prepare-worker.ts', import.meta.url);
  const slots: Slot[] = [];
  let nextId = 1;
  let closing = false;

  const spawn = (index: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const worker = new Worker(url, {
        workerData: opts.init,
        name: `beacon-prepare-${index}`,
        execArgv: workerExecArgv(),
      });
      const slot: Slot = { worker, pending: new Map(), depth: 0 };
      slots[index] = slot;
      let ready = false;
      worker.on('message', (m: WorkerMessage) => {
        if ('ready' in m) {
          ready = true;
          resolve();
          return;
        }
        if ('batch' in m) {
          slot.depth = m.depth;
          opts.onBatch?.(m.batch);
          return;
        }
        if ('closed' in m) {
          slot.closed?.();
          return;
        }
        const p = slot.pending.get(m.id);
        if (!p) return;
        slot.pending.delete(m.id);
        if ('error' in m) p.reject(new PrepareWorkerError(m.error));
        else if ('produced' in m) p.resolve(undefined);
        else if ('unavailable' in m)
          p.reject(
            new ProduceUnavailableError(m.unavailable.reason, m.unavailable.message, m.unavailable.retryAfterSeconds),
          );
        else if ('buffer' in m) p.resolve(unpack(m));
        else if ('eventIds' in m) p.resolve(held(slot, m));
        else p.resolve(m.result);
      });
      const fail = (err: Error) => {
        for (const p of slot.pending.values())
          p.reject(new PrepareWorkerError(`prepare worker failed: ${err.message}`));
        slot.pending.clear();
        if (!ready) {
          reject(err);
          return;
        }
        if (!closing) {
          opts.logger.error({ err: err.message, worker: index }, 'beacon prepare worker died; replacing it');
          spawn(index).catch((e: Error) =>
            opts.logger.error({ err: e.message }, 'beacon prepare worker could not be replaced'),
          );
        }
      };
      worker.on('error', fail);
      worker.on('exit', (code) => {
        if (!closing || slot.pending.size > 0) fail(new Error(`exited with code ${code}`));
      });
    });

  /** a prepared batch held in the worker of `slot` */
  function held(slot: Slot, m: Extract<ProducingMessage, { eventIds: string[] }>): Prepared {
    return {
      ok: true,
      eventIds: m.eventIds,
      rejections: m.rejections,
      batchDuplicates: m.batchDuplicates,
      clamped: m.clamped,
      slow: m.slow,
      produce(duplicate) {
        const dup = new Uint8Array(m.eventIds.length);
        for (let i = 0; i < dup.length; i++) dup[i] = duplicate?.[i] ? 1 : 0;
        return new Promise<void>((resolve, reject) => {
          if (!slots.includes(slot)) {
            reject(new PrepareWorkerError('prepare worker was replaced'));
            return;
          }
          slot.pending.set(m.id, { resolve, reject });
          slot.worker.postMessage({ op: 'produce', id: m.id, dup }, [dup.buffer]);
        });
      },
    };
  }

  await Promise.all(Array.from({ length: opts.size }, (_, i) => spawn(i)));

  const send = <T>(input: PrepareInput): Promise<T> => {
    if (closing) return Promise.reject(new PrepareWorkerError('intake is shutting down'));
    // least busy worker
    let slot = slots[0];
    for (const s of slots) if (s.pending.size < slot.pending.size) slot = s;
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      slot.pending.set(id, { resolve, reject });
      slot.worker.postMessage({ op: 'prepare', id, input });
    });
  };

  return {
    size: opts.size,
    get depth() {
      let n = 0;
      for (const s of slots) n += s.depth;
      return n;
    },
    prepare: (input) => send<PrepareResult>(input),
    prepareAndHold: (input) => send<Prepared>(input),
    async close() {
      closing = true;
      if (opts.init.kafka) {
        // let each worker drain its produce queue and disconnect its producer
        await Promise.all(
          slots.map(
            (s) =>
              new Promise<void>((resolve) => {
                const t = setTimeout(resolve, (opts.init.kafka?.timeoutMs ?? 5_000) + 2_000);
                s.closed = () => {
                  clearTimeout(t);
                  resolve();
                };
                s.worker.postMessage({ op: 'close' });
              }),
          ),
        );
      }
      await Promise.all(slots.map((s) => s.worker.terminate()));
    },
  };
}
