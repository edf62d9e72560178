// A small pool of worker threads running prepareBatch, so validation, enrichment and Avro encoding
// (most of the intake's CPU per event) use the other cores while the main thread does HTTP, Redis and
// Kafka. Each request's body text goes to the least busy worker; the encoded values come back in one
// transferred ArrayBuffer (no copy). A worker that dies fails its requests (503) and is replaced.
import { Worker } from 'node:worker_threads';
import type { Logger } from '../common/logger.ts';
import type { PrepareInput, PrepareResult, PrepareSettings } from './prepare.ts';

export interface WorkerInit {
  /** the Avro value schemas registered by the main thread */
  schemas: { topic: string; schema: string; id: number }[];
  settings: PrepareSettings;
}

type OkResult = Extract<PrepareResult, { ok: true }>;

interface PackedOk {
  id: number;
  ok: true;
  buffer: ArrayBuffer;
  events: { eventId: string; key: string; off: number; len: number }[];
  rejected: { off: number; len: number }[];
  rejections: OkResult['rejections'];
  batchDuplicates: number;
  clamped: number;
}

type WorkerMessage = PackedOk | { id: number; ok: false; result: PrepareResult } | { id: number; error: string } | { ready: true };

/** worker side: one ArrayBuffer with every value, transferred to the main thread */
export function pack(id: number, result: PrepareResult): { message: WorkerMessage; transfer: ArrayBuffer[] } {
  if (!result.ok) return { message: { id, ok: false, result }, transfer: [] };
  let total = 0;
  for (const e of result.events) total += e.value.length;
  for (const v of result.rejectedValues) total += v.length;
  const buffer = new ArrayBuffer(total);
  const bytes = new Uint8Array(buffer);
  let off = 0;
  const events = result.events.map((e) => {
    bytes.set(e.value, off);
    const item = { eventId: e.eventId, key: e.key, off, len: e.value.length };
    off += e.value.length;
    return item;
  });
  const rejected = result.rejectedValues.map((v) => {
    bytes.set(v, off);
    const item = { off, len: v.length };
    off += v.length;
    return item;
  });
  return {
    message: { id, ok: true, buffer, events, rejected, rejections: result.rejections, batchDuplicates: result.batchDuplicates, clamped: result.clamped },
    transfer: [buffer],
  };
}

function unpack(m: PackedOk): OkResult {
  return {
    ok: true,
    events: m.events.map((e) => ({ eventId: e.eventId, key: e.key, value: Buffer.from(m.buffer, e.off, e.len) })),
    rejectedValues: m.rejected.map((r) => Buffer.from(m.buffer, r.off, r.len)),
    rejections: m.rejections,
    batchDuplicates: m.batchDuplicates,
    clamped: m.clamped,
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
  pending: Map<number, { resolve(r: PrepareResult): void; reject(e: Error): void }>;
}

export interface PreparePool {
  prepare(input: PrepareInput): Promise<PrepareResult>;
  readonly size: number;
  close(): Promise<void>;
}

export async function createPreparePool(opts: { size: number; init: WorkerInit; logger: Logger }): Promise<PreparePool> {
  const url = new URL('./prepare-worker.ts', import.meta.url);
  const slots: Slot[] = [];
  let nextId = 1;
  let closing = false;

  const spawn = (index: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const worker = new Worker(url, { workerData: opts.init, name: `beacon-prepare-${index}`, execArgv: workerExecArgv() });
      const slot: Slot = { worker, pending: new Map() };
      slots[index] = slot;
      let ready = false;
      worker.on('message', (m: WorkerMessage) => {
        if ('ready' in m) {
          ready = true;
          resolve();
          return;
        }
        const p = slot.pending.get(m.id);
        if (!p) return;
        slot.pending.delete(m.id);
        if ('error' in m) p.reject(new PrepareWorkerError(m.error));
        else if (m.ok) p.resolve(unpack(m));
        else p.resolve(m.result);
      });
      const fail = (err: Error) => {
        for (const p of slot.pending.values()) p.reject(new PrepareWorkerError(`prepare worker failed: ${err.message}`));
        slot.pending.clear();
        if (!ready) {
          reject(err);
          return;
        }
        if (!closing) {
          opts.logger.error({ err: err.message, worker: index }, 'beacon prepare worker died; replacing it');
          spawn(index).catch((e: Error) => opts.logger.error({ err: e.message }, 'beacon prepare worker could not be replaced'));
        }
      };
      worker.on('error', fail);
      worker.on('exit', (code) => {
        if (!closing || slot.pending.size > 0) fail(new Error(`exited with code ${code}`));
      });
    });

  await Promise.all(Array.from({ length: opts.size }, (_, i) => spawn(i)));

  return {
    size: opts.size,
    prepare(input) {
      if (closing) return Promise.reject(new PrepareWorkerError('intake is shutting down'));
      // least busy worker
      let slot = slots[0];
      for (const s of slots) if (s.pending.size < slot.pending.size) slot = s;
      const id = nextId++;
      return new Promise<PrepareResult>((resolve, reject) => {
        slot.pending.set(id, { resolve, reject });
        slot.worker.postMessage({ id, input });
      });
    },
    async close() {
      closing = true;
      await Promise.all(slots.map((s) => s.worker.terminate()));
    },
  };
}
