// The kafkajs adapter: the one place that builds kafkajs clients. It maps kafkajs logs to pino, sets the
// delivery defaults (idempotent producer, acks=all), creates topics (ensureTopics) and builds consumers
// (consumer.ts). swaps.ts is imported first, so its module swaps are in place before kafkajs loads.
import './swaps.ts';
import kafkajs, {
  type Admin,
  type ICustomPartitioner,
  Kafka,
  type KafkaConfig,
  logLevel,
  type Message,
  type PartitionerArgs,
  Partitioners,
  type Producer,
  type ProducerConfig,
} from 'kafkajs';
import type { Logger } from '../../logger.ts';
import type { LocatingProducerClient, ProducedBatch, ProducedRecord, SendOptions } from '../client.ts';
import { type HashedMessage, keyHash } from '../murmur2.ts';
import type { TopicConfig } from '../topics.ts';
import { reportSwaps } from './swaps.ts';

export type { Admin, Consumer, Kafka, Message, Producer } from 'kafkajs';

/**
 * kafkajs warnings about choices made on purpose, logged at debug: the intake, the request events and
 * the catalog writer bound their idempotent producers' retries so that a request answers 503 within its
 * timeout instead of waiting forever (a duplicate from a retried request is dropped downstream by event
 * id or key), and kafkajs warns about that once per producer.
 */
const EXPECTED_WARNINGS = /^Limiting retries for the idempotent producer/;

/**
 * kafkajs logs a broken connection ("Connection error: …", namespace Connection) at error level, though it
 * reconnects and retries the request, and a caller whose operation fails in the end logs that failure
 * itself. A socket closing under a request is routine when a broker or this process stops ("write after
 * end" during shutdown), so it is a warning here, as Kafka's own clients log a lost connection.
 */
const isConnectionLoss = (namespace: string, message: string) =>
  namespace === 'Connection' && message.startsWith('Connection error');

export function createKafka(
  brokers: string[],
  clientId: string,
  logger: Logger,
  extra: Partial<KafkaConfig> = {},
): Kafka {
  reportSwaps(logger);
  return new Kafka({
    clientId,
    brokers,
    connectionTimeout: 3_000,
    requestTimeout: 30_000,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2_000 },
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ namespace, level, log }) => {
        const { message, ...rest } = log;
        const fields = { kafkajs: namespace, ...rest };
        if (level <= logLevel.ERROR && !isConnectionLoss(namespace, message)) logger.error(fields, message);
        else if (level <= logLevel.ERROR) logger.warn(fields, message);
        else if (level === logLevel.WARN && !EXPECTED_WARNINGS.test(message)) logger.warn(fields, message);
        else logger.debug(fields, message);
      },
    ...extra,
  });
}

/** An idempotent producer: acks=all is forced by kafkajs when idempotent is set. */
export function createIdempotentProducer(kafka: Kafka, extra: Partial<ProducerConfig> = {}): Producer {
  return kafka.producer({
    idempotent: true,
    maxInFlightRequests: 5,
    allowAutoTopicCreation: false,
    // kafkajs' default, named so that kafkajs does not warn about its v2 change of default
    createPartitioner: Partitioners.DefaultPartitioner,
    ...extra,
  });
}

/**
 * kafkajs partitioner with the DefaultPartitioner's mapping for keyed messages (explicit partition,
 * else murmur2(key) mod partition count), using the precomputed `keyHash` when the message has one.
 * Keyless messages are not produced by the intake; they go to partition 0 rather than round-robin.
 */
export const HashPartitioner: ICustomPartitioner = () => (args: PartitionerArgs) => {
  const message = args.message as HashedMessage;
  if (message.partition !== undefined && message.partition !== null) return message.partition;
  const n = args.partitionMetadata.length;
  if (message.keyHash !== undefined) return message.keyHash % n;
  const key = message.key;
  if (key === undefined || key === null) return 0;
  const bytes = typeof key === 'string' ? Buffer.from(key) : key;
  return keyHash(bytes) % n;
};

/**
 * A partition per time window for records whose order and placement nothing depends on (the read API's
 * request events): every record produced within one window goes to the same partition, the next
 * window to the next one, starting from a partition chosen per producer. A consumer that writes each
 * partition's chunk as its own insert (streams/runtime) then writes one or two inserts per fetch
 * instead of one per partition, while the load still spreads over all partitions across windows (and
 * producers of several processes start at different partitions). An explicit `partition` wins.
 */
export function windowPartitioner(windowMs: number, now: () => number = Date.now): ICustomPartitioner {
  return () => {
    const start = Math.floor(Math.random() * 1024);
    return (args: PartitionerArgs) => {
      const message = args.message as HashedMessage;
      if (message.partition !== undefined && message.partition !== null) return message.partition;
      return (start + Math.floor(now() / windowMs)) % args.partitionMetadata.length;
    };
  };
}

export interface ProducerClientOptions {
  /** the DefaultPartitioner's key → partition mapping, taking a record's precomputed `keyHash` (HashPartitioner) */
  keyHashPartitioner?: boolean;
  /** instead: a partition per time window (windowPartitioner), for records placed by no key */
  partitionWindow?: { ms: number; now?: () => number };
  /** retries of a produce call (kafkajs' retry: retries, initialRetryTime, maxRetryTime in ms) */
  retry?: { retries: number; initialRetryTime: number; maxRetryTime: number };
  /** produce requests in flight per broker (default 5; 1 keeps strict order across retries) */
  maxInFlightRequests?: number;
}

/** the largest produce request a send makes (under the default 1 MiB max.message.bytes of a batch) */
export const MAX_REQUEST_BYTES = 768 * 1024;

const byteSize = (v: Buffer | string | null | undefined) =>
  v === null || v === undefined ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length;

/** records in order, cut into runs of at most `max` bytes of keys and values (a larger record alone) */
export function chunksByBytes(records: ProducedRecord[], max: number): ProducedRecord[][] {
  const out: ProducedRecord[][] = [];
  let cur: ProducedRecord[] = [];
  let bytes = 0;
  for (const r of records) {
    const n = byteSize(r.value) + byteSize(r.key) + 64;
    if (cur.length && bytes + n > max) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(r);
    bytes += n;
  }
  if (cur.length) out.push(cur);
  return out;
}

/**
 * A ProducerClient over one idempotent kafkajs producer: connects on the first send (and again after a
 * disconnect), one produce request per send (per MAX_REQUEST_BYTES of records) with the records grouped
 * by topic, acks=all.
 */
export function createProducerClient(kafka: Kafka, opts: ProducerClientOptions = {}): LocatingProducerClient {
  const producer = createIdempotentProducer(kafka, {
    ...(opts.keyHashPartitioner ? { createPartitioner: HashPartitioner } : {}),
    ...(opts.partitionWindow
      ? { createPartitioner: windowPartitioner(opts.partitionWindow.ms, opts.partitionWindow.now) }
      : {}),
    ...(opts.retry ? { retry: opts.retry } : {}),
    ...(opts.maxInFlightRequests ? { maxInFlightRequests: opts.maxInFlightRequests } : {}),
  });
  let connected = false;
  let connecting: Promise<void> | undefined;
  producer.on(producer.events.DISCONNECT, () => {
    connected = false;
  });
  function connect(): Promise<void> {
    if (connected) return Promise.resolve();
    connecting ??= producer.connect().then(
      () => {
        connected = true;
        connecting = undefined;
      },
      (err: Error) => {
        connecting = undefined;
        throw err;
      },
    );
    return connecting;
  }
  async function sendLocated(records: ProducedRecord[], opts: SendOptions = {}): Promise<ProducedBatch[]> {
    if (records.length === 0) return [];
    await connect();
    // a record batch larger than the topic's max.message.bytes (1 MiB by default) is refused whole: send
    // the records in chunks of at most MAX_REQUEST_BYTES, one after the other (order kept); the offset
    // reported per partition is the first chunk's
    const located = new Map<string, ProducedBatch>();
    for (const chunk of chunksByBytes(records, MAX_REQUEST_BYTES))
      for (const b of await sendChunk(chunk, opts)) {
        const k = `${b.topic}\u0000${b.partition}`;
        if (!located.has(k)) located.set(k, b);
      }
    return [...located.values()];
  }
  async function sendChunk(records: ProducedRecord[], opts: SendOptions): Promise<ProducedBatch[]> {
    const byTopic = new Map<string, Message[]>();
    for (const r of records) {
      let list = byTopic.get(r.topic);
      if (!list) byTopic.set(r.topic, (list = []));
      // the record itself is the message: kafkajs reads key, value, partition, headers, timestamp, and
      // HashPartitioner reads keyHash
      list.push(r as Message);
    }
    const meta = await producer.sendBatch({
      topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
      acks: -1,
      ...(opts.timeoutMs === undefined ? {} : { timeout: opts.timeoutMs }),
    });
    return meta.map((m) => ({
      topic: m.topicName,
      partition: m.partition,
      baseOffset: String(m.baseOffset ?? m.offset),
    }));
  }
  return {
    connect,
    sendLocated,
    async send(records: ProducedRecord[], opts?: SendOptions) {
      await sendLocated(records, opts);
    },
    async close() {
      await (connecting ?? Promise.resolve()).catch(() => {});
      if (connected) await producer.disconnect().catch(() => {});
      connected = false;
    },
  };
}

/**
 * Create the topics of `topics` that do not exist yet, with their configuration (topics.ts); existing
 * topics are left as they are. Safe to run from several processes at once.
 */
export async function ensureTopics(kafka: Kafka, topics: TopicConfig[], logger: Logger): Promise<void> {
  if (topics.length === 0) return;
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const created: string[] = [];
    // create only what is missing: asking kafkajs to create an existing topic makes it log an error
    for (const t of topics) {
      if (existing.has(t.name)) continue;
      try {
        // not kafkajs' waitForLeaders: it retries LEADER_NOT_AVAILABLE only, and an Apache Kafka (KRaft)
        // broker whose metadata has not caught up yet answers UNKNOWN_TOPIC_OR_PARTITION (waitForTopics)
        await admin.createTopics({
          waitForLeaders: false,
          topics: [
            {
              topic: t.name,
              numPartitions: t.partitions,
              configEntries: [
                { name: 'cleanup.policy', value: t.cleanupPolicy },
                { name: 'retention.ms', value: String(t.retentionMs) },
              ],
            },
          ],
        });
        created.push(t.name);
        logger.info({ topic: t.name, partitions: t.partitions, cleanupPolicy: t.cleanupPolicy }, 'created topic');
      } catch (err) {
        // another process created it between listTopics and createTopics
        if (
          (err as { type?: string }).type !== 'TOPIC_ALREADY_EXISTS' &&
          !/already exists/i.test(String((err as Error).message))
        )
          throw err;
      }
    }
    await waitForTopics(admin, created);
  } finally {
    await admin.disconnect();
  }
}

/** Until the metadata of every topic in `names` names a leader for each partition (30 s at most). */
async function waitForTopics(admin: Admin, names: string[]): Promise<void> {
  if (names.length === 0) return;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: names });
      if (topics.length === names.length && topics.every((t) => t.partitions.every((p) => p.leader >= 0))) return;
    } catch (err) {
      const type = (err as { type?: string }).type;
      if (type !== 'UNKNOWN_TOPIC_OR_PARTITION' && type !== 'LEADER_NOT_AVAILABLE') throw err;
    }
    if (Date.now() > deadline) throw new Error(`topics without leaders after 30 s: ${names.join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A topic's cleanup.policy as the broker reports it (undefined when the broker does not say). */
export async function topicCleanupPolicy(kafka: Kafka, topic: string): Promise<string | undefined> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const res = await admin.describeConfigs({
      includeSynonyms: false,
      // a default-import member: Node's CommonJS export detection does not see this one
      resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configNames: ['cleanup.policy'] }],
    });
    return res.resources[0]?.configEntries.find((e) => e.configName === 'cleanup.policy')?.configValue;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}
