// Kafka value codec: Avro with the Confluent wire framing (magic byte 0, 4-byte big-endian schema id,
// Avro binary body), schemas in a Confluent-compatible registry under `<topic>-value`.
//
// - register(topic, schema) once at start-up (idempotent in the registry: same schema → same id);
//   encode() is then synchronous and does no registry round-trip (the beacon path encodes ~100k/s).
// - decode() fetches unknown writer ids once (cached, concurrent look-ups shared) and resolves the
//   writer schema to the topic's reader schema with avsc resolvers, so a consumer built against an
//   older schema reads newer data, and a newer one reads old data with the defaults.
import type { Resolver, Schema, Type } from 'avsc';
import type { Config } from '../config.ts';
import { topicName } from '../config.ts';
import { avroType, VALUE_SCHEMAS, valueSubject } from '../../../schemas/avro/index.ts';
import { createRegistryClient, type RegistryClient } from './registry-client.ts';
import { TOPICS, type TopicKey } from '../../../schemas/topics.ts';

export const MAGIC_BYTE = 0;
const HEADER_BYTES = 5;

export class CodecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CodecError';
  }
}

/** an Avro schema as a JS value (any JSON object, e.g. parsed from an .avsc) or as JSON text */
export type AvroSchemaInput = Schema | object | string;

export interface DecodedValue<T = unknown> {
  schemaId: number;
  value: T;
}

export interface ValueCodec {
  readonly registry: RegistryClient;
  /** register `schema` under `<topic>-value` (idempotent) and use it to encode and decode this topic */
  register(topic: string, schema: AvroSchemaInput): Promise<number>;
  /** decode this topic's values into `schema` without registering it (a consumer pinned to a schema) */
  useReaderSchema(topic: string, schema: AvroSchemaInput): void;
  /** the schema id `encode` writes for a topic, once registered */
  schemaId(topic: string): number | undefined;
  /** Confluent-framed Avro; synchronous, throws when the topic is not registered or the value is invalid */
  encode(topic: string, value: unknown): Buffer;
  /** decode a framed value; with `topic`, into that topic's reader schema, else into the writer's */
  decode<T = unknown>(buf: Buffer, topic?: string): Promise<DecodedValue<T>>;
  /** `decode` without awaiting when the writer schema is already known; undefined when it is not */
  decodeCached<T = unknown>(buf: Buffer, topic?: string): DecodedValue<T> | undefined;
}

export interface ValueCodecOptions {
  registryUrl: string;
  /** or a ready client (tests) */
  registry?: RegistryClient;
}

export function createValueCodec(opts: ValueCodecOptions): ValueCodec {
  const registry = opts.registry ?? createRegistryClient({ url: opts.registryUrl });
  const writers = new Map<string, { id: number; type: Type; header: Buffer }>();
  const readers = new Map<string, Type>();
  const byId = new Map<number, Type>();
  const pending = new Map<number, Promise<Type>>();
  // reader type → (writer id → resolver); WeakMap so replaced reader types are collected
  const resolvers = new WeakMap<Type, Map<number, Resolver>>();
  let scratch = Buffer.allocUnsafe(16 * 1024);

  const writerType = (id: number): Promise<Type> => {
    const known = byId.get(id);
    if (known) return Promise.resolve(known);
    let p = pending.get(id);
    if (!p) {
      p = registry
        .getSchemaById(id)
        .then((s) => {
          const t = avroType(s);
          byId.set(id, t);
          return t;
        })
        .finally(() => pending.delete(id));
      pending.set(id, p);
    }
    return p;
  };

  const frameId = (buf: Buffer): number => {
    if (!Buffer.isBuffer(buf) || buf.length < HEADER_BYTES)
      throw new CodecError(`value too short for the Confluent framing (${buf?.length ?? 0} bytes)`);
    if (buf[0] !== MAGIC_BYTE) throw new CodecError(`unknown magic byte ${buf[0]} (expected ${MAGIC_BYTE})`);
    return buf.readUInt32BE(1);
  };

  const decodeWith = <T>(buf: Buffer, id: number, writer: Type, topic?: string): DecodedValue<T> => {
    const body = buf.subarray(HEADER_BYTES);
    const reader = topic !== undefined ? readers.get(topic) : undefined;
    try {
      if (!reader || reader === writer) return { schemaId: id, value: writer.fromBuffer(body) as T };
      let perReader = resolvers.get(reader);
      if (!perReader) resolvers.set(reader, (perReader = new Map()));
      let resolver = perReader.get(id);
      if (!resolver) {
        resolver = reader.createResolver(writer);
        perReader.set(id, resolver);
      }
      return { schemaId: id, value: reader.fromBuffer(body, resolver) as T };
    } catch (err) {
      throw new CodecError(
        `cannot decode value with schema ${id}${topic ? ` for ${topic}` : ''}: ${(err as Error).message}`,
      );
    }
  };

  return {
    registry,
    async register(topic, schema) {
      const text = typeof schema === 'string' ? schema : JSON.stringify(schema);
      const type = avroType(text);
      const id = await registry.register(valueSubject(topic), text);
      // the registry may already hold an equivalent schema under this id: decode with ours
      if (!byId.has(id)) byId.set(id, type);
      const header = Buffer.alloc(HEADER_BYTES);
      header[0] = MAGIC_BYTE;
      header.writeUInt32BE(id, 1);
      writers.set(topic, { id, type, header });
      readers.set(topic, type);
      return id;
    },
    useReaderSchema(topic, schema) {
      readers.set(topic, avroType(typeof schema === 'string' ? schema : (schema as Schema)));
    },
    schemaId(topic) {
      return writers.get(topic)?.id;
    },
    encode(topic, value) {
      const w = writers.get(topic);
      if (!w) throw new CodecError(`no schema registered for topic ${topic}; call register() first`);
      w.header.copy(scratch, 0);
      let end = w.type.encode(value, scratch, HEADER_BYTES);
      while (end < 0) {
        // avsc returns -(bytes missing) when the buffer is too small
        scratch = Buffer.allocUnsafe(Math.max(scratch.length * 2, scratch.length - end));
        w.header.copy(scratch, 0);
        end = w.type.encode(value, scratch, HEADER_BYTES);
      }
      return Buffer.from(scratch.subarray(0, end));
    },
    async decode<T>(buf: Buffer, topic?: string) {
      const id = frameId(buf);
      const writer = byId.get(id) ?? (await writerType(id));
      return decodeWith<T>(buf, id, writer, topic);
    },
    decodeCached<T>(buf: Buffer, topic?: string) {
      const id = frameId(buf);
      const writer = byId.get(id);
      return writer ? decodeWith<T>(buf, id, writer, topic) : undefined;
    },
  };
}

/** The physical topic name of each platform value schema (prefix applied). */
export function platformTopics(config: Pick<Config, 'KAFKA_TOPIC_PREFIX'>): Record<keyof typeof VALUE_SCHEMAS, string> {
  const out = {} as Record<keyof typeof VALUE_SCHEMAS, string>;
  for (const key of Object.keys(VALUE_SCHEMAS) as (keyof typeof VALUE_SCHEMAS)[]) {
    out[key] = topicName(config, TOPICS[key as TopicKey].name);
  }
  return out;
}

/**
 * Register every platform value schema (`<topic>-value`) and make the codec ready to encode them.
 * Returns the schema id per topic key.
 */
export async function registerPlatformSchemas(
  codec: ValueCodec,
  config: Pick<Config, 'KAFKA_TOPIC_PREFIX'>,
): Promise<Record<keyof typeof VALUE_SCHEMAS, number>> {
  const topics = platformTopics(config);
  const ids = {} as Record<keyof typeof VALUE_SCHEMAS, number>;
  for (const key of Object.keys(VALUE_SCHEMAS) as (keyof typeof VALUE_SCHEMAS)[]) {
    ids[key] = await codec.register(topics[key], VALUE_SCHEMAS[key]);
  }
  return ids;
}
