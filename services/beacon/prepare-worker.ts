// Worker-thread entry of the prepare pool: runs prepareBatch (validation, enrichment, Avro encoding)
// off the main thread and, in producing mode, holds the encoded values until the main thread says which
// to produce, then produces them through its own idempotent producer and produce queue. The Avro schemas come registered from the main thread (topic → schema, id), so
// the worker's codec frames values with the same ids without talking to the registry.
import { parentPort, workerData } from 'node:worker_threads';
import { createValueCodec } from '../common/kafka/codec.ts';
import type { RegistryClient } from '../common/kafka/registry-client.ts';
import { createKafka, createProducerClient } from '../common/kafka/index.ts';
import { createLogger } from '../common/logger.ts';
import { batchRecords, type PrepareInput, type PrepareResult, type PrepareSettings, prepareBatch } from './prepare.ts';
import { createProduceQueue, ProduceUnavailableError, type ProduceQueue } from './produce-queue.ts';
import { pack, type WorkerInit } from './prepare-pool.ts';

const init = workerData as WorkerInit;

/** a registry that only knows the schemas the main thread registered (no network from workers) */
function pinnedRegistry(schemas: WorkerInit['schemas']): RegistryClient {
  const bySubject = new Map(schemas.map((s) => [`${s.topic}-value`, s]));
  const byId = new Map(schemas.map((s) => [s.id, s.schema]));
  const unsupported = async (): Promise<never> => {
    throw new Error('not available in a prepare worker');
  };
  return {
    url: 'pinned://',
    async register(subject) {
      const s = bySubject.get(subject);
      if (!s) throw new Error(`no pinned schema for ${subject}`);
      return s.id;
    },
    lookup: unsupported,
    async getSchemaById(id) {
      const s = byId.get(id);
      if (s === undefined) throw new Error(`no pinned schema ${id}`);
      return s;
    },
    getVersion: unsupported,
    getCompatibility: unsupported,
    setCompatibility: unsupported,
  };
}

const codec = createValueCodec({ registryUrl: '', registry: pinnedRegistry(init.schemas) });
for (const s of init.schemas) await codec.register(s.topic, s.schema);
const settings: PrepareSettings = init.settings;

// producing mode: a producer of this worker's own (acks=all, idempotent), batches shared by its requests
const held = new Map<number, { result: Extract<PrepareResult, { ok: true }>; storeId: string }>();
let queue: ProduceQueue | undefined;
if (init.kafka) {
  const k = init.kafka;
  const logger = createLogger('beacon-worker', k.logLevel);
  const kafka = createKafka(k.brokers, k.clientId, logger);
  const producer = createProducerClient(kafka, {
    keyHashPartitioner: true,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1_000 },
  });
  const q = createProduceQueue({
    producer,
    logger,
    lingerMs: k.lingerMs,
    timeoutMs: k.timeoutMs,
    // kafkajs groups a call's messages by partition in time quadratic in messages per partition
    // (groupMessagesPerPartition): a few thousand records per call keep that small
    maxBatchRecords: 4_000,
    onBatch: (batch) => parentPort!.postMessage({ batch, depth: q.depth }),
  });
  queue = q;
  await producer
    .connect()
    .catch((err: Error) => logger.warn({ err: err.message }, 'beacon worker producer: Kafka not reachable yet'));
}

type Op =
  | { op: 'prepare'; id: number; input: PrepareInput }
  | { op: 'produce'; id: number; dup: Uint8Array }
  | { op: 'close' };

parentPort!.on('message', (msg: Op) => {
  if (msg.op === 'close') {
    void (queue?.close() ?? Promise.resolve()).finally(() => parentPort!.postMessage({ closed: true }));
    return;
  }
  if (msg.op === 'produce') {
    const h = held.get(msg.id);
    held.delete(msg.id);
    if (!h || !queue) {
      parentPort!.postMessage({ id: msg.id, error: 'nothing held for this request' });
      return;
    }
    queue.send(batchRecords(h.result, h.storeId, settings.topics, msg.dup)).then(
      () => parentPort!.postMessage({ id: msg.id, produced: true }),
      (err: Error) =>
        parentPort!.postMessage(
          err instanceof ProduceUnavailableError
            ? {
                id: msg.id,
                unavailable: { reason: err.reason, message: err.message, retryAfterSeconds: err.retryAfterSeconds },
              }
            : { id: msg.id, error: err.message },
        ),
    );
    return;
  }
  try {
    const result = prepareBatch(msg.input, settings, codec);
    if (queue && result.ok) {
      held.set(msg.id, { result, storeId: msg.input.server.store_id });
      const { events, rejectedValues, ...rest } = result;
      parentPort!.postMessage({ id: msg.id, ...rest, eventIds: events.map((e) => e.eventId) });
      return;
    }
    const { message, transfer } = pack(msg.id, result);
    parentPort!.postMessage(message, transfer);
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: (err as Error).message });
  }
});
parentPort!.postMessage({ ready: true });
