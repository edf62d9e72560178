// The store-config writer: every change to a store's configuration is one record on the compacted topic
// `stores.config.v1`, produced with an idempotent producer (acks=all). Used by the admin CLI and tests.
//
// Reads (read-modify-write of the store record, exports, reference checks) go through a private
// ConfigDirectory that this writer starts on first use and that waits for its own writes, so a sequence
// of calls in one process reads its own writes. Two writers changing the same store record at the same
// time: the last write wins (see docs/decisions.md, store configuration).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { monotonicUlids } from '../common/ids.ts';
import {
  CONFIG_KINDS,
  type ConfigKind,
  type ConfigPayload,
  configKey,
  formatPath,
  itemIdOf,
  PREVIEW_TTL_MS,
  StoreId,
  validateConfig,
} from '../../schemas/config.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { type Config, topicName } from '../common/config.ts';
import {
  createKafka,
  createProducerClient,
  ensureTopics,
  type Kafka,
  type LocatingProducerClient,
  topicConfigs,
} from '../common/kafka/index.ts';
import { createLogger, type Logger } from '../common/logger.ts';
import type { StoreRecord } from './api.ts';
import { createEnvelopeCodec, type EnvelopeCodec } from './codec.ts';
import { ConfigDirectory, toStoreRecord } from './directory.ts';

/** A validation or reference error in what the caller asked for; `path` names the offending field. */
export class ConfigInputError extends Error {
  readonly issues: { path: string; message: string }[];
  constructor(issues: { path: string; message: string }[], prefix = '') {
    super(issues.map((i) => `${prefix}${i.path}: ${i.message}`).join('; '));
    this.name = 'ConfigInputError';
    this.issues = issues.map((i) => ({ ...i, path: `${prefix}${i.path}` }));
  }
}

/** The store or item named by the caller does not exist. */
export class NotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotFoundError';
  }
}

export interface WriteResult {
  partition: number;
  /** offset of the record; `GET /internal/store-config/caught-up?offset=…` waits for it */
  offset: string;
}

/** Kinds an export carries: tokens and webhook secrets (secrets, per store) and previews (ephemeral) are not exported. */
export const EXPORTED_KINDS = CONFIG_KINDS.filter(
  (k) => k !== 'store' && k !== 'access_token' && k !== 'merch_preview' && k !== 'webhook_secret',
);

export const EXPORT_FORMAT = 'storefront-discovery/store-config';

export interface ConfigDocument {
  format: typeof EXPORT_FORMAT;
  format_version: 1;
  exported_at: string;
  store_id: string;
  /** the store settings (name, markets mode, autocomplete mode, media preloads, …); no status */
  store: Omit<ConfigPayload<'store'>, 'store_id' | 'status' | 'created_at' | 'suspended_at'>;
  items: { [K in ConfigKind]?: ConfigPayload<K>[] };
}

export interface CreateStoreInput {
  name: string;
  /** default: a new ULID */
  storeId?: string;
  primaryMarket?: string | null;
  marketMode?: ConfigPayload<'store'>['market_mode'];
  autocompleteMode?: ConfigPayload<'store'>['autocomplete_mode'];
  tokenLabel?: string;
}

export type StoreSettingsPatch = Partial<
  Pick<
    ConfigPayload<'store'>,
    'name' | 'primary_market' | 'market_mode' | 'autocomplete_mode' | 'brand_prompt' | 'inline_collection_redirects'
  > & {
    media_preloads: Partial<ConfigPayload<'store'>['media_preloads']>;
  }
>;

export interface WriterOptions {
  brokers: string[];
  registryUrl: string;
  /** KAFKA_TOPIC_PREFIX */
  topicPrefix?: string;
  logger?: Logger;
  clientId?: string;
}

export function writerOptionsFromConfig(config: Config, logger?: Logger): WriterOptions {
  return {
    brokers: config.kafkaBrokers,
    registryUrl: config.schemaRegistryUrl,
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    logger,
  };
}

/** Tokens: `sfat_` + 32 random bytes, base64url. Shown once; only the SHA-256 is written. */
export function generateToken(): string {
  return `sfat_${randomBytes(32).toString('base64url')}`;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

const nextUlid = monotonicUlids();

export class ConfigWriter {
  readonly topic: string;
  private readonly topicPrefix: string;
  private readonly kafka: Kafka;
  private readonly log: Logger;
  private readonly codec: EnvelopeCodec;
  private producer?: LocatingProducerClient;
  private connecting?: Promise<LocatingProducerClient>;
  private directory?: ConfigDirectory;
  private directoryStarting?: Promise<ConfigDirectory>;
  private lastWrite?: WriteResult;

  constructor(opts: WriterOptions) {
    this.log = opts.logger ?? createLogger('store-config-writer', process.env.LOG_LEVEL ?? 'warn');
    this.topicPrefix = opts.topicPrefix ?? '';
    this.topic = topicName({ KAFKA_TOPIC_PREFIX: this.topicPrefix }, TOPICS.storeConfig.name);
    this.kafka = createKafka(opts.brokers, opts.clientId ?? 'store-config-writer', this.log);
    this.codec = createEnvelopeCodec({ registryUrl: opts.registryUrl, topic: this.topic });
  }

  private async getProducer(): Promise<LocatingProducerClient> {
    if (this.producer) return this.producer;
    this.connecting ??= (async () => {
      // the writer runs without the app too (the admin CLI): it creates its own topic when missing
      await ensureTopics(this.kafka, topicConfigs({ KAFKA_TOPIC_PREFIX: this.topicPrefix }, ['storeConfig']), this.log);
      const p = createProducerClient(this.kafka);
      await p.connect();
      this.producer = p;
      return p;
    })();
    return this.connecting;
  }

  /** The writer's own view of the topic, caught up with everything written so far (including own writes). */
  async reader(): Promise<ConfigDirectory> {
    if (!this.directory) {
      this.directoryStarting ??= (async () => {
        const d = new ConfigDirectory({
          kafka: this.kafka,
          topic: this.topic,
          codec: this.codec,
          logger: this.log,
          groupIdPrefix: 'store-config-writer',
        });
        await d.start();
        this.directory = d;
        return d;
      })();
      await this.directoryStarting;
    }
    const d = this.directory as ConfigDirectory;
    await d.ready();
    if (this.lastWrite && !(await d.waitForOffset(this.lastWrite.partition, this.lastWrite.offset, 30_000))) {
      throw new Error(`own write at offset ${this.lastWrite.offset} not visible after 30 s`);
    }
    return d;
  }

  private async produce(
    storeId: string,
    kind: ConfigKind,
    itemId: string,
    payload: unknown | null,
  ): Promise<WriteResult> {
    const producer = await this.getProducer();
    let value: Buffer | null = null;
    if (payload !== null) {
      value = await this.codec.encode({
        store_id: storeId,
        kind,
        item_id: itemId,
        version: nextUlid(),
        written_at: Date.now(),
        payload_json: JSON.stringify(payload),
      });
    }
    const [meta] = await producer.sendLocated([{ topic: this.topic, key: configKey(storeId, kind, itemId), value }]);
    const result = { partition: meta.partition, offset: meta.baseOffset };
    this.lastWrite = result;
    return result;
  }

  private validate<K extends ConfigKind>(kind: K, item: unknown, prefix = ''): ConfigPayload<K> {
    const r = validateConfig(kind, item);
    if (!r.ok) throw new ConfigInputError(r.issues, prefix);
    return r.value;
  }

  private async requireStore(storeId: string): Promise<{ dir: ConfigDirectory; store: ConfigPayload<'store'> }> {
    const dir = await this.reader();
    const store = dir.item(storeId, 'store', storeId);
    if (!store) throw new NotFoundError(`store ${storeId} does not exist`);
    return { dir, store };
  }

  // -------------------------------------------------------------------------------------------------
  // stores and tokens

  async createStore(
    input: CreateStoreInput,
  ): Promise<{ storeId: string; token: string; tokenId: string } & WriteResult> {
    const storeId = input.storeId ?? nextUlid();
    const idCheck = StoreId.safeParse(storeId);
    if (!idCheck.success) throw new ConfigInputError([{ path: 'store_id', message: idCheck.error.issues[0].message }]);
    const dir = await this.reader();
    if (dir.item(storeId, 'store', storeId))
      throw new ConfigInputError([{ path: 'store_id', message: `store ${storeId} already exists` }]);
    const store = this.validate('store', {
      store_id: storeId,
      name: input.name,
      status: 'active',
      primary_market: input.primaryMarket ?? null,
      market_mode: input.marketMode,
      autocomplete_mode: input.autocompleteMode,
      created_at: new Date().toISOString(),
    });
    // the token first: a store record never exists without a way to authenticate
    const { token, tokenId } = await this.writeToken(storeId, input.tokenLabel ?? 'initial');
    const w = await this.produce(storeId, 'store', storeId, store);
    return { storeId, token, tokenId, ...w };
  }

  private async writeToken(
    storeId: string,
    label: string | null,
  ): Promise<{ token: string; tokenId: string } & WriteResult> {
    const token = generateToken();
    const tokenId = nextUlid();
    const record = this.validate('access_token', {
      token_id: tokenId,
      sha256: hashToken(token),
      label,
      created_at: new Date().toISOString(),
      revoked_at: null,
    });
    const w = await this.produce(storeId, 'access_token', tokenId, record);
    return { token, tokenId, ...w };
  }

  async issueToken(
    storeId: string,
    label: string | null = null,
  ): Promise<{ token: string; tokenId: string } & WriteResult> {
    await this.requireStore(storeId);
    return this.writeToken(storeId, label);
  }

  /** Revoking keeps the record (with revoked_at) for audit; the directory stops accepting the token. */
  async revokeToken(storeId: string, tokenId: string): Promise<WriteResult> {
    const { dir } = await this.requireStore(storeId);
    const t = dir.item(storeId, 'access_token', tokenId);
    if (!t) throw new NotFoundError(`token ${tokenId} does not exist in store ${storeId}`);
    if (t.revoked_at) {
      const meta = dir.itemMeta(storeId, 'access_token', tokenId);
      return { partition: 0, offset: meta?.offset ?? '0' };
    }
    return this.produce(storeId, 'access_token', tokenId, { ...t, revoked_at: new Date().toISOString() });
  }

  async suspendStore(storeId: string): Promise<WriteResult> {
    const { store } = await this.requireStore(storeId);
    return this.produce(storeId, 'store', storeId, {
      ...store,
      status: 'suspended',
      suspended_at: new Date().toISOString(),
    });
  }

  async resumeStore(storeId: string): Promise<WriteResult> {
    const { store } = await this.requireStore(storeId);
    return this.produce(storeId, 'store', storeId, { ...store, status: 'active', suspended_at: null });
  }

  /** Change store settings (name, primary market, market mode, autocomplete mode, media preloads, brand prompt). */
  async updateStore(storeId: string, patch: StoreSettingsPatch): Promise<WriteResult & { store: StoreRecord }> {
    const { dir, store } = await this.requireStore(storeId);
    const next = this.validate('store', {
      ...store,
      ...patch,
      store_id: storeId,
      media_preloads: { ...store.media_preloads, ...(patch.media_preloads ?? {}) },
    });
    if (
      next.primary_market &&
      next.primary_market !== store.primary_market &&
      !dir.item(storeId, 'market', next.primary_market)
    ) {
      throw new ConfigInputError([
        { path: 'primary_market', message: `market ${next.primary_market} does not exist in store ${storeId}` },
      ]);
    }
    const w = await this.produce(storeId, 'store', storeId, next);
    return { ...w, store: toStoreRecord(next) };
  }

  // -------------------------------------------------------------------------------------------------
  // items

  /**
   * Validate and write one item of a kind (insert or replace). Store records and tokens have their own
   * functions. References (fallback blocks, sort order codes) must exist in the store.
   */
  async putConfig<K extends ConfigKind>(
    storeId: string,
    kind: K,
    item: unknown,
  ): Promise<WriteResult & { itemId: string; value: ConfigPayload<K> }> {
    if (kind === 'store' || kind === 'access_token') throw new Error(`use the store/token functions for ${kind}`);
    const { dir } = await this.requireStore(storeId);
    let input = item;
    if (kind === 'merch_preview') input = previewInput(item);
    const value = this.validate(kind, input);
    const problems = checkReferences(kind, value, (k, id) => dir.item(storeId, k, id) !== undefined);
    if (problems.length) throw new ConfigInputError(problems);
    const itemId = itemIdOf(kind, value);
    const w = await this.produce(storeId, kind, itemId, value);
    return { ...w, itemId, value };
  }

  /** Delete an item: a tombstone for its key. NotFoundError when it does not exist. */
  async deleteConfig(storeId: string, kind: ConfigKind, itemId: string): Promise<WriteResult> {
    if (kind === 'store') throw new Error('stores are suspended, not deleted (see deleteStore)');
    const { dir, store } = await this.requireStore(storeId);
    if (!dir.itemMeta(storeId, kind, itemId))
      throw new NotFoundError(`${kind} ${itemId} does not exist in store ${storeId}`);
    const users = referencesTo(dir, store, kind, itemId);
    if (users.length) throw new ConfigInputError(users.map((u) => ({ path: itemId, message: `still used by ${u}` })));
    return this.produce(storeId, kind, itemId, null);
  }

  /** Remove a store and everything in it: a tombstone for each of its keys, the store record last. */
  async deleteStore(storeId: string): Promise<WriteResult> {
    const { dir } = await this.requireStore(storeId);
    for (const kind of CONFIG_KINDS) {
      if (kind === 'store') continue;
      for (const v of dir.items(storeId, kind)) await this.produce(storeId, kind, itemIdOf(kind, v), null);
    }
    return this.produce(storeId, 'store', storeId, null);
  }

  /** Tombstone the merchandising previews of a store that have expired. */
  async pruneExpiredPreviews(storeId: string): Promise<number> {
    const { dir } = await this.requireStore(storeId);
    let n = 0;
    for (const id of dir.expiredPreviewIds(storeId)) {
      await this.produce(storeId, 'merch_preview', id, null);
      n++;
    }
    return n;
  }

  // -------------------------------------------------------------------------------------------------
  // export / import

  async exportConfig(storeId: string): Promise<ConfigDocument> {
    const { dir, store } = await this.requireStore(storeId);
    const { store_id: _id, status: _s, created_at: _c, suspended_at: _x, ...settings } = store;
    const items: ConfigDocument['items'] = {};
    for (const kind of EXPORTED_KINDS) {
      const list = dir.items(storeId, kind);
      if (list.length) (items as Record<string, unknown[]>)[kind] = list;
    }
    return {
      format: EXPORT_FORMAT,
      format_version: 1,
      exported_at: new Date().toISOString(),
      store_id: storeId,
      store: settings,
      items,
    };
  }

  /**
   * Import an exported document. Without `storeId`, or when that store does not exist, a new store is
   * created (with a new token, returned once); otherwise the store's settings are replaced and every item
   * of the document is written. With `prune`, items of the exported kinds that the document lacks are
   * deleted. The whole document is validated before anything is written.
   */
  async importConfig(
    doc: unknown,
    opts: { storeId?: string; name?: string; prune?: boolean } = {},
  ): Promise<
    { storeId: string; created: boolean; token?: string; written: number; deleted: number } & Partial<WriteResult>
  > {
    const parsed = parseDocument(doc);
    const dir = await this.reader();
    const targetId = opts.storeId ?? nextUlid();
    const exists = dir.item(targetId, 'store', targetId) !== undefined;
    // validate everything first, with references resolved against the document itself
    const present = new Set<string>();
    const values: { kind: ConfigKind; value: unknown; itemId: string }[] = [];
    const issues: { path: string; message: string }[] = [];
    for (const [kind, list] of Object.entries(parsed.items) as [ConfigKind, unknown[]][]) {
      list.forEach((raw, i) => {
        const r = validateConfig(kind, raw);
        if (!r.ok) {
          for (const is of r.issues) issues.push({ path: `items.${kind}[${i}].${is.path}`, message: is.message });
          return;
        }
        const itemId = itemIdOf(kind, r.value);
        present.add(`${kind}|${itemId}`);
        values.push({ kind, value: r.value, itemId });
      });
    }
    values.forEach(({ kind, value }, i) => {
      for (const p of checkReferences(kind, value as never, (k, id) => present.has(`${k}|${id}`))) {
        issues.push({ path: `items.${kind}(${values[i].itemId}).${p.path}`, message: p.message });
      }
    });
    const settings = validateConfig('store', {
      ...parsed.store,
      name: opts.name ?? parsed.store.name,
      store_id: targetId,
      status: 'active',
      created_at: new Date().toISOString(),
    });
    if (!settings.ok) for (const is of settings.issues) issues.push({ path: `store.${is.path}`, message: is.message });
    else {
      const pm = settings.value.primary_market;
      if (pm && !present.has(`market|${pm}`) && !(exists && !opts.prune && dir.item(targetId, 'market', pm))) {
        issues.push({ path: 'store.primary_market', message: `market ${pm} is not in the document` });
      }
    }
    if (issues.length) throw new ConfigInputError(issues);
    const storeValue = (settings as { value: ConfigPayload<'store'> }).value;

    let token: string | undefined;
    let written = 0;
    let deleted = 0;
    if (!exists) {
      const created = await this.createStore({
        storeId: targetId,
        name: storeValue.name,
        marketMode: storeValue.market_mode,
        autocompleteMode: storeValue.autocomplete_mode,
        tokenLabel: 'import',
      });
      token = created.token;
    }
    for (const v of values) {
      await this.produce(targetId, v.kind, v.itemId, v.value);
      written++;
    }
    if (opts.prune && exists) {
      const current = await this.reader();
      for (const kind of EXPORTED_KINDS) {
        for (const item of current.items(targetId, kind)) {
          const id = itemIdOf(kind, item);
          if (!present.has(`${kind}|${id}`)) {
            await this.produce(targetId, kind, id, null);
            deleted++;
          }
        }
      }
    }
    // settings last, so that the primary market exists when it is set
    const current = await this.reader();
    const store = current.item(targetId, 'store', targetId) as ConfigPayload<'store'>;
    const w = await this.produce(targetId, 'store', targetId, {
      ...store,
      name: storeValue.name,
      primary_market: storeValue.primary_market,
      market_mode: storeValue.market_mode,
      autocomplete_mode: storeValue.autocomplete_mode,
      brand_prompt: storeValue.brand_prompt,
      inline_collection_redirects: storeValue.inline_collection_redirects,
      media_preloads: storeValue.media_preloads,
    });
    return { storeId: targetId, created: !exists, token, written, deleted, ...w };
  }

  /** the last record this writer produced */
  lastWritten(): WriteResult | undefined {
    return this.lastWrite;
  }

  async close(): Promise<void> {
    await this.directory?.stop();
    await this.producer?.close();
  }
}

export function openConfigWriter(opts: WriterOptions): ConfigWriter {
  return new ConfigWriter(opts);
}

function previewInput(item: unknown): unknown {
  const o = (item && typeof item === 'object' ? item : {}) as Record<string, unknown>;
  const created = new Date();
  // a preview's lifetime is fixed: created now, expires one hour later, whatever the caller sent
  return {
    id: o.id ?? randomUUID(),
    rule: o.rule,
    created_at: created.toISOString(),
    expires_at: new Date(created.getTime() + PREVIEW_TTL_MS).toISOString(),
  };
}

/** Cross-item references that must exist in the store. */
export function checkReferences<K extends ConfigKind>(
  kind: K,
  value: ConfigPayload<K>,
  exists: (kind: ConfigKind, id: string) => boolean,
): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  const sortOrder = (code: string | null, path: string) => {
    if (code && code !== 'relevance' && !exists('sort_order', code))
      out.push({ path, message: `sort order ${code} does not exist` });
  };
  if (kind === 'block') {
    const b = value as ConfigPayload<'block'>;
    b.fallback.forEach((f, i) => {
      if (!exists('block', f.block_id))
        out.push({ path: formatPath(['fallback', i, 'block_id']), message: `block ${f.block_id} does not exist` });
    });
  } else if (kind === 'merch_rule') {
    sortOrder((value as ConfigPayload<'merch_rule'>).sort_order_code, 'sort_order_code');
  } else if (kind === 'merch_preview') {
    sortOrder((value as ConfigPayload<'merch_preview'>).rule.sort_order_code, 'rule.sort_order_code');
  } else if (kind === 'search_rule') {
    (value as ConfigPayload<'search_rule'>).actions.forEach((a, i) => {
      if (a.type === 'set_sort_order')
        sortOrder(
          String((a as { sort_order_code?: string }).sort_order_code),
          formatPath(['actions', i, 'sort_order_code']),
        );
    });
  }
  return out;
}

/** Items that refer to `kind`/`id` (deleting it would leave them dangling). */
function referencesTo(dir: ConfigDirectory, store: ConfigPayload<'store'>, kind: ConfigKind, id: string): string[] {
  const storeId = store.store_id;
  const out: string[] = [];
  if (kind === 'market' && store.primary_market === id)
    out.push(`the store's primary_market (change it with stores update --market)`);
  if (kind === 'sort_order') {
    for (const r of dir.items(storeId, 'merch_rule')) if (r.sort_order_code === id) out.push(`merch_rule ${r.id}`);
    for (const r of dir.items(storeId, 'search_rule')) {
      if (
        r.actions.some((a) => a.type === 'set_sort_order' && (a as { sort_order_code?: string }).sort_order_code === id)
      )
        out.push(`search_rule ${r.id}`);
    }
  }
  if (kind === 'block') {
    for (const b of dir.items(storeId, 'block'))
      if (b.fallback.some((f) => f.block_id === id)) out.push(`block ${b.id} (fallback)`);
  }
  return out;
}

function parseDocument(doc: unknown): {
  store: Record<string, unknown> & { name?: string };
  items: Record<string, unknown[]>;
} {
  const issues: { path: string; message: string }[] = [];
  if (!doc || typeof doc !== 'object' || Array.isArray(doc))
    throw new ConfigInputError([{ path: '(root)', message: 'expected a JSON object' }]);
  const d = doc as Record<string, unknown>;
  if (d.format !== EXPORT_FORMAT) issues.push({ path: 'format', message: `expected "${EXPORT_FORMAT}"` });
  if (d.format_version !== 1) issues.push({ path: 'format_version', message: 'expected 1' });
  if (!d.store || typeof d.store !== 'object' || Array.isArray(d.store))
    issues.push({ path: 'store', message: 'expected an object' });
  const items = d.items ?? {};
  if (typeof items !== 'object' || Array.isArray(items))
    issues.push({ path: 'items', message: 'expected an object keyed by kind' });
  else {
    for (const [kind, list] of Object.entries(items)) {
      if (!(EXPORTED_KINDS as string[]).includes(kind))
        issues.push({ path: `items.${kind}`, message: `not an importable kind (${EXPORTED_KINDS.join(', ')})` });
      else if (!Array.isArray(list)) issues.push({ path: `items.${kind}`, message: 'expected an array' });
    }
  }
  if (issues.length) throw new ConfigInputError(issues);
  return { store: d.store as Record<string, unknown>, items: items as Record<string, unknown[]> };
}
