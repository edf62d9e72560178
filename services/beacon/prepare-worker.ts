// Worker-thread entry of the prepare pool: runs prepareBatch (validation, enrichment, Avro encoding)
// off the main thread. The Avro schemas come registered from the main thread (topic → schema, id), so
// the worker's codec frames values with the same ids without talking to the registry.
import { parentPort, workerData } from 'node:worker_threads';
import { createValueCodec } from '../../schemas/codec.ts';
import type { RegistryClient } from '../../schemas/registry-client.ts';
import { type PrepareInput, type PrepareSettings, prepareBatch } from './prepare.ts';
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

parentPort!.on('message', (msg: { id: number; input: PrepareInput }) => {
  try {
    const result = prepareBatch(msg.input, settings, codec);
    const { message, transfer } = pack(msg.id, result);
    parentPort!.postMessage(message, transfer);
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: (err as Error).message });
  }
});
parentPort!.postMessage({ ready: true });
