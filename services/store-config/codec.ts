// The one place where a store-config record value is turned into bytes and back: the Avro envelope
// `StoreConfigEvent` (schemas/config.ts) with the Confluent framing, through the registry codec of
// services/common/kafka/codec.ts under the subject `<topic>-value`. Keys are plain UTF-8 strings (`store|kind|item`).
import type { Schema } from 'avsc';
import { createValueCodec, type ValueCodec } from '../common/kafka/codec.ts';
import { STORE_CONFIG_AVRO, StoreConfigEnvelope } from '../../schemas/config.ts';

export interface EnvelopeCodec {
  encode(envelope: StoreConfigEnvelope): Promise<Buffer>;
  decode(value: Buffer): Promise<StoreConfigEnvelope>;
}

export interface CodecOptions {
  registryUrl: string;
  /** the physical topic name (prefixed); the registry subject is `<topic>-value` */
  topic: string;
  /** an existing value codec to share (its registry client and caches) */
  codec?: ValueCodec;
}

export function createEnvelopeCodec(opts: CodecOptions): EnvelopeCodec {
  const codec = opts.codec ?? createValueCodec({ registryUrl: opts.registryUrl });
  const schema = STORE_CONFIG_AVRO as unknown as Schema;
  // readers resolve any registered writer version of the envelope to this one
  codec.useReaderSchema(opts.topic, schema);
  let registering: Promise<number> | undefined;
  return {
    async encode(envelope) {
      if (codec.schemaId(opts.topic) === undefined) {
        registering ??= codec.register(opts.topic, schema).finally(() => {
          registering = undefined;
        });
        await registering;
      }
      return codec.encode(opts.topic, envelope);
    },
    async decode(value) {
      const { value: v } = await codec.decode<Record<string, unknown>>(value, opts.topic);
      // the platform's timestamp-millis logical type decodes to an ISO string; the envelope carries ms
      const writtenAt = typeof v.written_at === 'string' ? Date.parse(v.written_at) : v.written_at;
      return StoreConfigEnvelope.parse({ ...v, written_at: writtenAt });
    },
  };
}
