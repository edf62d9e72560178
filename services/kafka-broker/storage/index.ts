// The broker's log store: topics (metadata in `<dataDir>/__meta/topics.json`, written atomically) and
// their partitions (`<dataDir>/<topic>-<partition>/`), plus the timers for interval fsync and maintenance.

import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  InvalidConfigError,
  InvalidPartitionsError,
  InvalidTopicError,
  type LogStore,
  type LogStoreOptions,
  type PartitionStore,
  type TopicConfig,
  TopicExistsError,
  type TopicInfo,
  UnknownTopicError,
} from './api.ts';
import { KAFKA_DEFAULT_TOPIC_CONFIG, resolveConfig, validateConfig } from './config.ts';
import { fsyncDir, SerialQueue, writeFileAtomic } from './fs-util.ts';
import { type Logger, Partition } from './partition.ts';
import { IndexCache } from './segment.ts';

export * from './api.ts';
export { KAFKA_DEFAULT_TOPIC_CONFIG } from './config.ts';
export {
  type DecodedRecord,
  decodeBatchRecords,
  type EncodeBatchOptions,
  encodeRecordBatch,
  type RecordInput,
  splitBatches,
} from './record-batch.ts';

const META_DIR = '__meta';
const TOPICS_FILE = 'topics.json';
const MAX_PARTITIONS = 10_000;
const TOPIC_NAME = /^[a-zA-Z0-9._-]+$/;

const silentLogger: Logger = { info() {}, warn() {}, error() {} };

interface TopicState {
  info: TopicInfo;
  overrides: Partial<TopicConfig>;
  partitions: Partition[];
}

interface TopicsFile {
  version: 1;
  topics: { name: string; topicId: string; partitions: number; internal: boolean; config: Partial<TopicConfig> }[];
}

export async function openLogStore(opts: LogStoreOptions): Promise<LogStore> {
  const store = new FileLogStore(opts);
  await store.init();
  return store;
}

class FileLogStore implements LogStore {
  private readonly dataDir: string;
  private readonly opts: LogStoreOptions;
  private readonly defaults: TopicConfig;
  private readonly logger: Logger;
  private readonly cache: IndexCache;
  private readonly topics = new Map<string, TopicState>();
  /** serializes topic metadata changes */
  private readonly metaQueue = new SerialQueue();
  private readonly maintenanceQueue = new SerialQueue();
  private maintenanceRunning = false;
  private maintenanceTimer: NodeJS.Timeout | null = null;
  private flushTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(opts: LogStoreOptions) {
    if (opts.fsync !== 'always' && !(typeof opts.fsync === 'number' && opts.fsync > 0)) {
      throw new InvalidConfigError(
        `fsync must be 'always' or a positive number of milliseconds, got ${String(opts.fsync)}`,
      );
    }
    this.opts = opts;
    this.dataDir = path.resolve(opts.dataDir);
    this.defaults = resolveConfig(KAFKA_DEFAULT_TOPIC_CONFIG, validateConfig(opts.defaultTopicConfig));
    this.logger = opts.logger ?? silentLogger;
    this.cache = new IndexCache(opts.indexCacheBytes ?? 64 * 1024 * 1024);
  }

  async init(): Promise<void> {
    await fs.mkdir(path.join(this.dataDir, META_DIR), { recursive: true });
    // finish deletions interrupted by a crash
    for (const n of await fs.readdir(this.dataDir)) {
      if (n.endsWith('-delete')) await fs.rm(path.join(this.dataDir, n), { recursive: true, force: true });
    }
    const file = await this.readTopicsFile();
    for (const t of file.topics) {
      const overrides = validateConfig(t.config);
      const state: TopicState = {
        info: {
          name: t.name,
          topicId: Buffer.from(t.topicId, 'hex'),
          partitions: t.partitions,
          config: resolveConfig(this.defaults, overrides),
          internal: t.internal,
          configOverrides: overrides,
        },
        overrides,
        partitions: [],
      };
      this.topics.set(t.name, state);
      for (let p = 0; p < t.partitions; p++) state.partitions.push(await this.openPartition(state, p));
    }
    this.maintenanceTimer = setInterval(() => {
      if (!this.maintenanceRunning) void this.runMaintenance();
    }, this.opts.maintenanceIntervalMs ?? 30_000);
    this.maintenanceTimer.unref();
    if (typeof this.opts.fsync === 'number') {
      this.flushTimer = setInterval(() => void this.flushAll(), this.opts.fsync);
      this.flushTimer.unref();
    }
  }

  private async readTopicsFile(): Promise<TopicsFile> {
    try {
      const parsed = JSON.parse(
        await fs.readFile(path.join(this.dataDir, META_DIR, TOPICS_FILE), 'utf8'),
      ) as TopicsFile;
      if (parsed.version !== 1 || !Array.isArray(parsed.topics)) throw new Error('unsupported topics.json version');
      return parsed;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, topics: [] };
      throw new Error(
        `cannot read topic metadata ${path.join(this.dataDir, META_DIR, TOPICS_FILE)}: ${(err as Error).message}`,
      );
    }
  }

  private async persistTopics(): Promise<void> {
    const file: TopicsFile = {
      version: 1,
      topics: [...this.topics.values()].map((t) => ({
        name: t.info.name,
        topicId: t.info.topicId.toString('hex'),
        partitions: t.info.partitions,
        internal: t.info.internal,
        config: t.overrides,
      })),
    };
    await writeFileAtomic(path.join(this.dataDir, META_DIR, TOPICS_FILE), JSON.stringify(file, null, 2));
  }

  private partitionDir(topic: string, p: number): string {
    return path.join(this.dataDir, `${topic}-${p}`);
  }

  private openPartition(state: TopicState, p: number): Promise<Partition> {
    return Partition.open({
      topic: state.info.name,
      partition: p,
      dir: this.partitionDir(state.info.name, p),
      config: () => state.info.config,
      fsync: this.opts.fsync,
      cache: this.cache,
      logger: this.logger,
      producerIdExpirationMs: this.opts.producerIdExpirationMs ?? 24 * 3600 * 1000,
    });
  }

  /** Moves a partition directory out of the way and removes it (a crash mid-way is finished on open). */
  private async removePartitionDir(dir: string): Promise<void> {
    const doomed = `${dir}.${randomBytes(4).toString('hex')}-delete`;
    try {
      await fs.rename(dir, doomed);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    await fsyncDir(this.dataDir);
    await fs.rm(doomed, { recursive: true, force: true });
  }

  private copy(info: TopicInfo): TopicInfo {
    return { ...info, config: { ...info.config }, configOverrides: { ...info.configOverrides } };
  }

  // ------------------------------------------------------------------------------------------ topics

  listTopics(): TopicInfo[] {
    return [...this.topics.values()].map((t) => this.copy(t.info));
  }

  getTopic(name: string): TopicInfo | undefined {
    const t = this.topics.get(name);
    return t ? this.copy(t.info) : undefined;
  }

  partition(topic: string, partition: number): PartitionStore | undefined {
    return this.topics.get(topic)?.partitions[partition];
  }

  createTopic(name: string, partitions: number, config?: Partial<TopicConfig>, internal = false): Promise<TopicInfo> {
    return this.metaQueue.run(async () => {
      this.assertOpen();
      validateTopicName(name);
      if (!Number.isInteger(partitions) || partitions < 1 || partitions > MAX_PARTITIONS) {
        throw new InvalidPartitionsError(
          `number of partitions must be an integer in [1, ${MAX_PARTITIONS}], got ${partitions}`,
        );
      }
      if (this.topics.has(name)) throw new TopicExistsError(`topic '${name}' already exists`);
      const overrides = stripUndefined(validateConfig(config));
      const state: TopicState = {
        info: {
          name,
          topicId: newTopicId(),
          partitions,
          config: resolveConfig(this.defaults, overrides),
          internal,
          configOverrides: overrides,
        },
        overrides,
        partitions: [],
      };
      try {
        for (let p = 0; p < partitions; p++) {
          // a directory left behind by an interrupted delete must not leak old data into the new topic
          await this.removePartitionDir(this.partitionDir(name, p));
          state.partitions.push(await this.openPartition(state, p));
        }
        await fsyncDir(this.dataDir);
        this.topics.set(name, state);
        await this.persistTopics();
      } catch (err) {
        this.topics.delete(name);
        for (const p of state.partitions) await p.close({ discard: true });
        for (let p = 0; p < partitions; p++)
          await this.removePartitionDir(this.partitionDir(name, p)).catch(() => undefined);
        throw err;
      }
      this.logger.info({ topic: name, partitions }, 'topic created');
      return this.copy(state.info);
    });
  }

  deleteTopic(name: string): Promise<void> {
    return this.metaQueue.run(async () => {
      this.assertOpen();
      const state = this.topics.get(name);
      if (!state) throw new UnknownTopicError(`unknown topic '${name}'`);
      this.topics.delete(name);
      await this.persistTopics();
      for (const p of state.partitions) {
        await p.close({ discard: true });
        await this.removePartitionDir(p.dir);
      }
      this.logger.info({ topic: name }, 'topic deleted');
    });
  }

  createPartitions(name: string, totalCount: number): Promise<void> {
    return this.metaQueue.run(async () => {
      this.assertOpen();
      const state = this.topics.get(name);
      if (!state) throw new UnknownTopicError(`unknown topic '${name}'`);
      const current = state.info.partitions;
      if (!Number.isInteger(totalCount) || totalCount <= current || totalCount > MAX_PARTITIONS) {
        throw new InvalidPartitionsError(
          `topic '${name}' has ${current} partitions; the new count must be larger (got ${totalCount})`,
        );
      }
      const added: Partition[] = [];
      try {
        for (let p = current; p < totalCount; p++) {
          await this.removePartitionDir(this.partitionDir(name, p));
          added.push(await this.openPartition(state, p));
        }
        await fsyncDir(this.dataDir);
        state.info.partitions = totalCount;
        state.partitions.push(...added);
        await this.persistTopics();
      } catch (err) {
        state.info.partitions = current;
        state.partitions.length = current;
        for (const p of added) await p.close({ discard: true });
        throw err;
      }
    });
  }

  alterTopicConfig(name: string, config: Partial<TopicConfig>): Promise<TopicInfo> {
    return this.metaQueue.run(async () => {
      this.assertOpen();
      const state = this.topics.get(name);
      if (!state) throw new UnknownTopicError(`unknown topic '${name}'`);
      // incremental: listed keys are set; a key given as undefined returns to the default
      const changes = validateConfig(config);
      const overrides: Partial<TopicConfig> = { ...state.overrides };
      for (const [k, v] of Object.entries(changes)) {
        if (v === undefined) delete (overrides as Record<string, unknown>)[k];
        else (overrides as Record<string, unknown>)[k] = v;
      }
      const previous = { overrides: state.overrides, config: state.info.config };
      state.overrides = overrides;
      state.info.configOverrides = overrides;
      state.info.config = resolveConfig(this.defaults, overrides);
      try {
        await this.persistTopics();
      } catch (err) {
        state.overrides = previous.overrides;
        state.info.configOverrides = previous.overrides;
        state.info.config = previous.config;
        throw err;
      }
      return this.copy(state.info);
    });
  }

  // ------------------------------------------------------------------------------------ maintenance

  runMaintenance(nowMs?: number): Promise<void> {
    return this.maintenanceQueue.run(async () => {
      if (this.closed) return;
      this.maintenanceRunning = true;
      try {
        for (const t of [...this.topics.values()]) {
          for (const p of t.partitions) {
            try {
              await p.maintain(nowMs ?? Date.now());
            } catch (err) {
              this.logger.error({ err, topic: p.topic, partition: p.partition }, 'log maintenance failed');
            }
          }
        }
      } finally {
        this.maintenanceRunning = false;
      }
    });
  }

  private async flushAll(): Promise<void> {
    for (const t of this.topics.values()) for (const p of t.partitions) await p.flush();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.maintenanceTimer) clearInterval(this.maintenanceTimer);
    if (this.flushTimer) clearInterval(this.flushTimer);
    await this.metaQueue.idle();
    // closing a partition stops a running compaction at the next segment boundary
    for (const t of this.topics.values()) for (const p of t.partitions) await p.close();
    await this.maintenanceQueue.idle();
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('log store is closed');
  }
}

function validateTopicName(name: string): void {
  if (
    typeof name !== 'string' ||
    name.length === 0 ||
    name.length > 249 ||
    !TOPIC_NAME.test(name) ||
    name === '.' ||
    name === '..'
  ) {
    throw new InvalidTopicError(`invalid topic name '${name}': 1-249 characters of [a-zA-Z0-9._-], not '.' or '..'`);
  }
}

function stripUndefined(cfg: Partial<TopicConfig>): Partial<TopicConfig> {
  return Object.fromEntries(Object.entries(cfg).filter(([, v]) => v !== undefined)) as Partial<TopicConfig>;
}

/** 16 random bytes, never all zero (the null UUID) */
function newTopicId(): Buffer {
  for (;;) {
    const id = randomBytes(16);
    if (!id.equals(Buffer.alloc(16))) return id;
  }
}
