// The store-config projection: consumes the compacted topic `stores.config.v1` from the beginning into
// memory and answers `StoreDirectory` (token → store, store configuration). The analysts' ClickHouse
// projection of the same topic (`store_config`) is a stream processor: streams/store-config/processor.ts.
//
// - One consumer (services/common/kafka) per process with a unique group id, `fromBeginning`, no offset commits: every
//   process rebuilds the full state from the compacted log at start (small: configuration only).
// - `ready()` resolves once the consumed position reached the high watermarks read at call time.
// - Tokens: a Map from SHA-256(token) hex → token; the match is confirmed with crypto.timingSafeEqual on
//   the digest bytes. Tokens themselves never reach the log or memory.
import { createHash, timingSafeEqual } from 'node:crypto';
import { newUlid } from '../common/ids.ts';
import {
  CONFIG_SCHEMAS,
  type ConfigKind,
  type ConfigPayload,
  isConfigKind,
  itemIdOf,
  parseConfigKey,
} from '../../schemas/config.ts';
import {
  type ConsumerClient,
  createConsumerClient,
  IDLE_FETCH_WAIT_MS,
  ensureTopics,
  type Kafka,
  type SourceBatch,
  topicConfig,
} from '../common/kafka/index.ts';
import type { Logger } from '../common/logger.ts';
import { counter, gauge } from '../common/metrics.ts';
import type { AuthResult, ConfigChange, StoreDirectory, StoreRecord } from './api.ts';
import type { EnvelopeCodec } from './codec.ts';

const MAX_TOKEN_LENGTH = 512;

const recordsApplied = counter('store_config_records_total', 'stores.config.v1 records applied by the directory', [
  'result',
]);
const positionGauge = gauge('store_config_position', 'next offset the store-config directory will read', ['partition']);

interface Item {
  version: string;
  writtenAt: number;
  offset: string;
  value: unknown;
}

interface StoreState {
  record?: StoreRecord;
  items: Map<ConfigKind, Map<string, Item>>;
}

export interface DirectoryOptions {
  kafka: Kafka;
  /** physical topic name (prefixed) */
  topic: string;
  codec: EnvelopeCodec;
  logger: Logger;
  /** consumer group id prefix; a unique suffix is added per instance */
  groupIdPrefix?: string;
  /** create the topic when it does not exist (default true) */
  ensureTopic?: boolean;
}

export class ConfigDirectory implements StoreDirectory {
  private readonly opts: DirectoryOptions;
  private readonly log: Logger;
  private readonly stores = new Map<string, StoreState>();
  /** sha256 hex → token owner */
  private readonly tokens = new Map<string, { storeId: string; tokenId: string; digest: Buffer }>();
  /** `${storeId}|${tokenId}` → sha256 hex, to drop the previous hash when a token record changes */
  private readonly tokenHashById = new Map<string, string>();
  /** partition → next offset to read */
  private readonly positions = new Map<number, bigint>();
  private readonly waiters = new Set<() => void>();
  private readonly listeners = new Set<(c: ConfigChange) => void>();
  private consumer?: ConsumerClient;
  private started = false;
  private stopped = false;
  private failure?: Error;

  constructor(opts: DirectoryOptions) {
    this.opts = opts;
    this.log = opts.logger.child({ component: 'store-config-directory' });
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const { kafka, topic } = this.opts;
    const groupId = `${this.opts.groupIdPrefix ?? 'store-config-directory'}-${newUlid()}`;
    const consumer = createConsumerClient(kafka, this.log, {
      groupId,
      topics: [topic],
      fromBeginning: true,
      lingerMs: 250,
      idleWaitMs: IDLE_FETCH_WAIT_MS,
      sessionTimeoutMs: 30_000,
      heartbeatIntervalMs: 3_000,
      autoResolve: true,
      onCrash: (err, restart) => {
        this.log.error({ err, restart }, 'store-config consumer crashed');
        if (!restart) this.fail(err);
      },
    });
    this.consumer = consumer;
    if (this.opts.ensureTopic !== false) await ensureTopics(kafka, [topicConfig('storeConfig', topic)], this.log);
    await consumer.start((batch) => this.onBatch(batch));
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.consumer?.stop();
    for (const w of this.waiters) w();
  }

  // -------------------------------------------------------------------------------------------------
  // consuming

  private async onBatch(batch: SourceBatch): Promise<void> {
    const partition = batch.partition;
    for (const message of batch.messages) {
      // a rejoin without committed offsets starts over from the beginning: never apply a record twice
      // (that would briefly bring back older values, e.g. a revoked token)
      if (BigInt(message.offset) < this.position(partition)) continue;
      await this.applyRecord(partition, message.offset, message.key, message.value, message.timestamp);
      this.positions.set(partition, BigInt(message.offset) + 1n);
    }
    positionGauge.set({ partition: String(partition) }, Number(this.positions.get(partition) ?? 0n));
    this.notify();
    await batch.heartbeat();
  }

  /** Apply one record to the in-memory state (and queue it for ClickHouse). Exposed for replay tools. */
  async applyRecord(
    partition: number,
    offset: string,
    keyBuf: Buffer | null,
    valueBuf: Buffer | null,
    _timestamp: string,
  ): Promise<void> {
    const key = keyBuf ? parseConfigKey(keyBuf.toString('utf8')) : undefined;
    if (!key || !isConfigKind(key.kind)) {
      recordsApplied.inc({ result: 'bad_key' });
      this.log.warn(
        { partition, offset, key: keyBuf?.toString('utf8') },
        'store-config record with an unusable key skipped',
      );
      return;
    }
    const kind = key.kind;
    if (valueBuf === null) {
      this.remove(key.storeId, kind, key.itemId);
      recordsApplied.inc({ result: 'tombstone' });
      this.emit({ storeId: key.storeId, kind, itemId: key.itemId, deleted: true, offset });
      return;
    }
    let value: unknown;
    let envelope: {
      store_id: string;
      kind: string;
      item_id: string;
      version: string;
      written_at: number;
      payload_json: string;
    };
    try {
      envelope = await this.opts.codec.decode(valueBuf);
      if (envelope.store_id !== key.storeId || envelope.kind !== kind || envelope.item_id !== key.itemId) {
        throw new Error(`envelope names ${envelope.store_id}|${envelope.kind}|${envelope.item_id}`);
      }
      value = (CONFIG_SCHEMAS[kind] as { parse(v: unknown): unknown }).parse(JSON.parse(envelope.payload_json));
      if (itemIdOf(kind, value as never) !== key.itemId)
        throw new Error(`payload names item ${itemIdOf(kind, value as never)}`);
      if (kind === 'store' && (value as { store_id: string }).store_id !== key.storeId)
        throw new Error('payload names another store');
    } catch (err) {
      // The registry being unreachable is not the record's fault: fail the batch, kafkajs retries it
      // (records already applied are skipped on the retry).
      if (isTransient(err)) throw err;
      // A record that does not decode or validate is skipped (every process would skip it alike); the
      // previous state of the item stays. The writer validates before producing, so this means a
      // foreign producer or an incompatible schema change.
      recordsApplied.inc({ result: 'invalid' });
      this.log.error(
        { err, partition, offset, key: `${key.storeId}|${kind}|${key.itemId}` },
        'invalid store-config record skipped',
      );
      return;
    }
    this.put(key.storeId, kind, key.itemId, {
      version: envelope.version,
      writtenAt: envelope.written_at,
      offset,
      value,
    });
    recordsApplied.inc({ result: 'applied' });
    this.emit({ storeId: key.storeId, kind, itemId: key.itemId, deleted: false, offset });
  }

  private state(storeId: string): StoreState {
    let s = this.stores.get(storeId);
    if (!s) {
      s = { items: new Map() };
      this.stores.set(storeId, s);
    }
    return s;
  }

  private put(storeId: string, kind: ConfigKind, itemId: string, item: Item): void {
    const s = this.state(storeId);
    let m = s.items.get(kind);
    if (!m) {
      m = new Map();
      s.items.set(kind, m);
    }
    m.set(itemId, item);
    if (kind === 'store') s.record = toStoreRecord(item.value as ConfigPayload<'store'>);
    if (kind === 'access_token') {
      const t = item.value as ConfigPayload<'access_token'>;
      this.dropToken(storeId, itemId);
      if (!t.revoked_at) {
        this.tokens.set(t.sha256, { storeId, tokenId: t.token_id, digest: Buffer.from(t.sha256, 'hex') });
        this.tokenHashById.set(`${storeId}|${itemId}`, t.sha256);
      }
    }
  }

  private remove(storeId: string, kind: ConfigKind, itemId: string): void {
    const s = this.stores.get(storeId);
    if (!s) return;
    s.items.get(kind)?.delete(itemId);
    if (kind === 'store') s.record = undefined;
    if (kind === 'access_token') this.dropToken(storeId, itemId);
    if (!s.record && [...s.items.values()].every((m) => m.size === 0)) this.stores.delete(storeId);
  }

  private dropToken(storeId: string, tokenId: string): void {
    const k = `${storeId}|${tokenId}`;
    const hash = this.tokenHashById.get(k);
    if (hash) {
      const owner = this.tokens.get(hash);
      if (owner && owner.storeId === storeId && owner.tokenId === tokenId) this.tokens.delete(hash);
      this.tokenHashById.delete(k);
    }
  }

  private emit(change: ConfigChange): void {
    for (const l of this.listeners) {
      try {
        l(change);
      } catch (err) {
        this.log.error({ err }, 'store-config change listener failed');
      }
    }
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  private fail(err: Error): void {
    this.failure = err;
    this.notify();
  }

  // -------------------------------------------------------------------------------------------------
  // progress

  /** next offset to read in a partition (0 when nothing was read) */
  position(partition = 0): bigint {
    return this.positions.get(partition) ?? 0n;
  }

  /** true once the record at `offset` in `partition` is applied */
  hasApplied(partition: number, offset: bigint | string | number): boolean {
    return this.position(partition) > BigInt(offset);
  }

  /** wait until the record at `offset` is applied; false on timeout */
  async waitForOffset(partition: number, offset: bigint | string | number, timeoutMs = 10_000): Promise<boolean> {
    return this.waitUntil(() => this.hasApplied(partition, offset), timeoutMs);
  }

  private waitUntil(cond: () => boolean, timeoutMs: number): Promise<boolean> {
    if (cond()) return Promise.resolve(true);
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.failure) {
          done();
          reject(this.failure);
        } else if (cond()) {
          done();
          resolve(true);
        } else if (this.stopped) {
          done();
          resolve(false);
        }
      };
      const timer = setTimeout(() => {
        done();
        resolve(cond());
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
    });
  }

  async ready(timeoutMs = 60_000): Promise<void> {
    if (!this.started) throw new Error('store directory not started');
    const marks = await (this.consumer as ConsumerClient).watermarks(this.opts.topic);
    const caughtUp = () =>
      [...marks].every(([partition, { low, high }]) => high <= low || this.position(partition) >= high);
    if (!(await this.waitUntil(caughtUp, timeoutMs))) {
      throw new Error(`store directory did not catch up with ${this.opts.topic} within ${timeoutMs} ms`);
    }
  }

  // -------------------------------------------------------------------------------------------------
  // StoreDirectory

  authenticate(token: string | undefined | null): AuthResult {
    if (typeof token !== 'string' || token.trim() === '') {
      return { ok: false, status: 401, code: 'missing_token', message: 'X-Storefront-Access-Token is required' };
    }
    const invalid: AuthResult = {
      ok: false,
      status: 401,
      code: 'invalid_token',
      message: 'the access token is not valid',
    };
    if (token.length > MAX_TOKEN_LENGTH) return invalid;
    const digest = createHash('sha256').update(token, 'utf8').digest();
    const owner = this.tokens.get(digest.toString('hex'));
    if (!owner || !timingSafeEqual(owner.digest, digest)) return invalid;
    const store = this.stores.get(owner.storeId)?.record;
    if (!store) return invalid;
    if (store.status === 'suspended') {
      return { ok: false, status: 402, code: 'store_suspended', message: 'the store is suspended' };
    }
    return { ok: true, store };
  }

  getStore(storeId: string): StoreRecord | undefined {
    return this.stores.get(storeId)?.record;
  }

  listStores(): StoreRecord[] {
    const out: StoreRecord[] = [];
    for (const s of this.stores.values()) if (s.record) out.push(s.record);
    return out.sort((a, b) => a.storeId.localeCompare(b.storeId));
  }

  getConfig<K extends string>(storeId: string, kind: K): unknown[] {
    if (!isConfigKind(kind)) return [];
    return this.items(storeId, kind);
  }

  /** Every live item of a kind, typed, in item-id order (expired previews left out). */
  items<K extends ConfigKind>(storeId: string, kind: K): ConfigPayload<K>[] {
    const m = this.stores.get(storeId)?.items.get(kind);
    if (!m) return [];
    const now = Date.now();
    const out: ConfigPayload<K>[] = [];
    for (const id of [...m.keys()].sort()) {
      const v = m.get(id)?.value as ConfigPayload<K>;
      if (kind === 'merch_preview' && Date.parse((v as ConfigPayload<'merch_preview'>).expires_at) <= now) continue;
      out.push(v);
    }
    return out;
  }

  /** One item by id (expired previews are undefined). */
  item<K extends ConfigKind>(storeId: string, kind: K, itemId: string): ConfigPayload<K> | undefined {
    const v = this.stores.get(storeId)?.items.get(kind)?.get(itemId)?.value as ConfigPayload<K> | undefined;
    if (v && kind === 'merch_preview' && Date.parse((v as ConfigPayload<'merch_preview'>).expires_at) <= Date.now())
      return undefined;
    return v;
  }

  /** ids of merchandising previews that have expired but are not deleted yet */
  expiredPreviewIds(storeId: string): string[] {
    const m = this.stores.get(storeId)?.items.get('merch_preview');
    if (!m) return [];
    const now = Date.now();
    return [...m.entries()]
      .filter(([, it]) => Date.parse((it.value as ConfigPayload<'merch_preview'>).expires_at) <= now)
      .map(([id]) => id);
  }

  /** Item metadata: version (ULID of the write), when it was written, its offset. */
  itemMeta(
    storeId: string,
    kind: ConfigKind,
    itemId: string,
  ): { version: string; writtenAt: number; offset: string } | undefined {
    const it = this.stores.get(storeId)?.items.get(kind)?.get(itemId);
    return it ? { version: it.version, writtenAt: it.writtenAt, offset: it.offset } : undefined;
  }

  /** Subscribe to applied changes (rebuild per-store indexes); returns the unsubscribe function. */
  onChange(listener: (change: ConfigChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

function isTransient(err: unknown): boolean {
  const e = err as { name?: string; status?: number };
  return e?.name === 'RegistryError' && (e.status === 0 || (e.status ?? 0) >= 500 || e.status === 429);
}

export function toStoreRecord(s: ConfigPayload<'store'>): StoreRecord {
  return {
    storeId: s.store_id,
    name: s.name,
    status: s.status,
    primaryMarket: s.primary_market,
    marketMode: s.market_mode,
    autocompleteMode: s.autocomplete_mode,
    mediaPreloads: {
      enabled: s.media_preloads.enabled,
      srcsetSizes: s.media_preloads.srcset_sizes,
      rewriteDomain: s.media_preloads.rewrite_domain,
      rewriteUrls: s.media_preloads.rewrite_urls,
    },
    brandPrompt: s.brand_prompt,
    inlineCollectionRedirects: s.inline_collection_redirects,
    createdAt: s.created_at,
  };
}
