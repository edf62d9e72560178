// The registry-backed value decoder: Confluent framing + Avro, resolved into the reader schema this code
// was built against (READER_SCHEMAS in schemas/avro: the platform topics and the catalog topics), so
// processors read older and newer writer schemas alike.
import { READER_SCHEMAS } from '../../schemas/avro/index.ts';
import { CodecError, createValueCodec, type ValueCodec } from '../../services/common/kafka/codec.ts';
import { RegistryError } from '../../services/common/kafka/registry-client.ts';
import type { TopicKey } from '../../schemas/topics.ts';
import { UndecodableError, type ValueDecoder } from './types.ts';

export function registryDecoder(
  registryUrl: string,
  topics: { key: TopicKey; name: string }[],
  codec?: ValueCodec,
): ValueDecoder {
  const c = codec ?? createValueCodec({ registryUrl });
  for (const { key, name } of topics) {
    const schema = (READER_SCHEMAS as Partial<Record<TopicKey, unknown>>)[key];
    if (schema) c.useReaderSchema(name, schema as Parameters<ValueCodec['useReaderSchema']>[1]);
  }
  const poison = (err: unknown): never => {
    // deterministic failures are poison; an unreachable registry is not (the chunk is retried)
    if (err instanceof CodecError) throw new UndecodableError(err.message);
    if (err instanceof RegistryError && err.status >= 400 && err.status < 500) throw new UndecodableError(err.message);
    throw err;
  };
  return {
    decode(buf, topic) {
      // a known writer schema decodes synchronously: no promise (and no turn of the microtask queue) per
      // message; the first value of a new schema id waits for the registry
      let cached: ReturnType<typeof c.decodeCached>;
      try {
        cached = c.decodeCached(buf, topic);
      } catch (err) {
        return poison(err);
      }
      if (cached) return cached.value;
      return c.decode(buf, topic).then((d) => d.value, poison);
    },
  };
}
