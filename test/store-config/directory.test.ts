// The store-config writer and directory against a real embedded broker: tokens, suspension, every kind
// written and read back, tombstones, export/import, and a restart of broker and directory (the compacted
// topic is replayed into the same state). The ClickHouse projection is a stream processor
// (test/streams/store-config.test.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_KINDS, type ConfigKind, itemIdOf, validateConfig } from '../../schemas/config.ts';
import { createKafka } from '../../services/common/kafka/index.ts';
import { type Broker, startBroker } from '../../services/kafka-broker/index.ts';
import { createEnvelopeCodec } from '../../services/store-config/codec.ts';
import { type RunningSchemaRegistry, startSchemaRegistry } from '../../services/schema-registry/index.ts';
import { ConfigDirectory } from '../../services/store-config/directory.ts';
import {
  ConfigInputError,
  type ConfigWriter,
  EXPORTED_KINDS,
  NotFoundError,
  openConfigWriter,
} from '../../services/store-config/writer.ts';
import { SAMPLE_BLOCK_ID, SAMPLE_FALLBACK_BLOCK_ID, sampleItems } from '../helpers/stores.ts';

const logger = pino({ level: process.env.TEST_LOG ?? 'warn' });
const TOPIC = 'stores.config.v1';
let dataDir: string;
let broker: Broker;
let writer: ConfigWriter;
let directory: ConfigDirectory;
let registry: RunningSchemaRegistry;

function newDirectory(b: Broker): ConfigDirectory {
  const kafka = createKafka([`127.0.0.1:${b.port}`], 'test-directory', logger);
  return new ConfigDirectory({
    kafka,
    topic: TOPIC,
    codec: createEnvelopeCodec({ registryUrl: registry.url, topic: TOPIC }),
    logger,
  });
}

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'sd-store-config-'));
  broker = await startBroker({ port: 0, dataDir, logger, groupOptions: { initialRebalanceDelayMs: 50 } });
  registry = await startSchemaRegistry({ brokers: [`127.0.0.1:${broker.port}`], topic: '_schemas', port: 0, logger });
  writer = openConfigWriter({ brokers: [`127.0.0.1:${broker.port}`], registryUrl: registry.url, logger });
  directory = newDirectory(broker);
  await directory.start();
  await directory.ready();
});

afterAll(async () => {
  await writer?.close();
  await directory?.stop();
  await registry?.close();
  await broker?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function seen(w: { partition: number; offset: string }) {
  expect(await directory.waitForOffset(w.partition, w.offset, 15_000)).toBe(true);
}

describe('tokens and store status', () => {
  it('authenticates the token shown at creation; 402 while suspended; 401 when revoked, unknown or missing', async () => {
    const created = await writer.createStore({ name: 'Auth store' });
    expect(created.token).toMatch(/^sfat_[A-Za-z0-9_-]{43}$/);
    await seen(created);
    const ok = directory.authenticate(created.token);
    expect(ok).toMatchObject({
      ok: true,
      store: {
        storeId: created.storeId,
        name: 'Auth store',
        status: 'active',
        marketMode: 'ignore',
        autocompleteMode: 'per_region',
      },
    });

    expect(directory.authenticate(undefined)).toMatchObject({ ok: false, status: 401, code: 'missing_token' });
    expect(directory.authenticate('')).toMatchObject({ ok: false, status: 401, code: 'missing_token' });
    expect(directory.authenticate(`${created.token}x`)).toMatchObject({
      ok: false,
      status: 401,
      code: 'invalid_token',
    });
    expect(directory.authenticate('x'.repeat(10_000))).toMatchObject({ ok: false, status: 401, code: 'invalid_token' });

    await seen(await writer.suspendStore(created.storeId));
    expect(directory.authenticate(created.token)).toMatchObject({ ok: false, status: 402, code: 'store_suspended' });
    expect(directory.getStore(created.storeId)?.status).toBe('suspended');
    await seen(await writer.resumeStore(created.storeId));
    expect(directory.authenticate(created.token).ok).toBe(true);

    const second = await writer.issueToken(created.storeId, 'ci');
    await seen(second);
    expect(directory.authenticate(second.token)).toMatchObject({ ok: true });
    await seen(await writer.revokeToken(created.storeId, created.tokenId));
    expect(directory.authenticate(created.token)).toMatchObject({ ok: false, status: 401, code: 'invalid_token' });
    expect(directory.authenticate(second.token)).toMatchObject({ ok: true });
    // the revoked record stays for audit; the token's hash is all that is stored
    const tokens = directory.items(created.storeId, 'access_token');
    expect(tokens.map((t) => [t.token_id, t.revoked_at !== null])).toEqual(
      expect.arrayContaining([
        [created.tokenId, true],
        [second.tokenId, false],
      ]),
    );
    expect(JSON.stringify(tokens)).not.toContain(created.token);
  });

  it('refuses a duplicate store id and names the field', async () => {
    const a = await writer.createStore({ name: 'dup', storeId: `dup-${process.pid}` });
    await seen(a);
    await expect(writer.createStore({ name: 'dup', storeId: a.storeId })).rejects.toMatchObject({
      name: 'ConfigInputError',
      issues: [{ path: 'store_id' }],
    });
    await expect(writer.createStore({ name: 'bad', storeId: 'has|pipe' })).rejects.toBeInstanceOf(ConfigInputError);
  });
});

describe('configuration items', () => {
  let storeId: string;
  beforeAll(async () => {
    storeId = (await writer.createStore({ name: 'Items store' })).storeId;
  });

  it('writes every kind and reads it back validated and typed', async () => {
    const samples = sampleItems();
    for (const kind of [
      'market',
      'sort_order',
      'block',
      'merch_rule',
      'search_rule',
      'redirect_term',
      'synonym',
      'variant_breakout',
      'autocomplete_curation',
      'b2b_company_location',
      'b2b_customer',
      'ranking_rule',
    ] as ConfigKind[]) {
      for (const item of samples[kind] ?? []) await writer.putConfig(storeId, kind, item);
    }
    const preview = await writer.putConfig(storeId, 'merch_preview', {
      rule: { ...samples.merch_rule?.[0], id: null },
    });
    await seen(preview);

    expect(directory.items(storeId, 'market')).toEqual([
      {
        code: 'us',
        name: 'United States',
        market_id: '1001',
        gid: 'gid://shopify/Market/1001',
        countries: ['US'],
        currency: 'USD',
        price_list_id: null,
      },
    ]);
    expect(directory.items(storeId, 'sort_order').map((s) => s.code)).toEqual(['best_selling', 'newest']);
    const block = directory.item(storeId, 'block', SAMPLE_BLOCK_ID);
    expect(block).toMatchObject({
      id: SAMPLE_BLOCK_ID,
      anchor_type: 'product',
      strategy_type: 'interaction',
      strategy_key: 'frequently_bought_together',
      safeguards: { min_products: 2, max_products: 8 },
      fallback: [{ block_id: SAMPLE_FALLBACK_BLOCK_ID, mode: 'fill' }],
    });
    expect(directory.item(storeId, 'block', SAMPLE_FALLBACK_BLOCK_ID)).toMatchObject({
      strategy_type: 'popularity',
      status: 'published',
      safeguards: { min_products: 1, max_products: 24 },
    });
    expect(directory.items(storeId, 'merch_rule')[0].banners[0]).toMatchObject({
      mode: 'inject',
      sort_index: 0,
      banner_type: 'link',
    });
    expect(directory.items(storeId, 'search_rule')[0].actions).toEqual([
      { type: 'replace_query', query: 'trainers' },
      { type: 'future_action', anything: 1 },
    ]);
    expect(directory.items(storeId, 'redirect_term')).toEqual([
      { term: 'gift cards', url: '/products/gift-card', match: 'exact' },
    ]);
    expect(directory.item(storeId, 'synonym', 'pants')).toEqual({
      id: 'pants',
      type: 'one_way',
      term: 'pants',
      synonyms: ['trousers', 'chinos'],
    });
    expect(directory.item(storeId, 'variant_breakout', 'color')).toMatchObject({
      option_code: 'color',
      applies: 'collections',
      include_option_value_in_title: false,
    });
    expect(directory.item(storeId, 'autocomplete_curation', 'tshirt')).toEqual({
      query: 'tshirt',
      allowed: true,
      display_label: 'T-shirts',
    });
    expect(directory.item(storeId, 'b2b_company_location', '555')).toMatchObject({
      company_id: '77',
      catalog_id: 'catalog-b2b',
    });
    expect(directory.item(storeId, 'b2b_customer', '9001')).toEqual({ customer_id: '9001', company_ids: ['77'] });
    expect(directory.items(storeId, 'ranking_rule')[0]).toMatchObject({ queries: ['boots'], type: 'pin' });
    const p = directory.item(storeId, 'merch_preview', preview.itemId);
    expect(p?.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(p?.expires_at ?? '') - Date.parse(p?.created_at ?? '')).toBe(3_600_000);
    expect(directory.getConfig(storeId, 'sort_order')).toHaveLength(2);
    expect(directory.getConfig(storeId, 'no_such_kind')).toEqual([]);
  });

  it('rejects invalid items with the field path, and dangling references', async () => {
    const bad = writer.putConfig(storeId, 'sort_order', { code: 'Bad Code', nickname: '', expressions: [] });
    await expect(bad).rejects.toBeInstanceOf(ConfigInputError);
    const err = (await bad.catch((e) => e)) as ConfigInputError;
    expect(err.issues.map((i) => i.path).sort()).toEqual(['code', 'expressions', 'nickname']);

    const dangling = await writer
      .putConfig(storeId, 'block', {
        id: '01JD00000000000000000000ZZ',
        title: 'x',
        anchor_type: 'home',
        strategy_key: 'trending_now',
        fallback: [{ block_id: '01JD00000000000000000000YY' }],
      })
      .catch((e) => e);
    expect(dangling).toMatchObject({
      issues: [{ path: 'fallback[0].block_id', message: expect.stringContaining('does not exist') }],
    });

    const wrongType = validateConfig('block', {
      id: SAMPLE_BLOCK_ID,
      title: 'x',
      anchor_type: 'product',
      strategy_type: 'similarity',
      strategy_key: 'customers_also_viewed',
    });
    expect(wrongType).toMatchObject({ ok: false, issues: [{ path: 'strategy_type' }] });
    const tooManyBanners = validateConfig('merch_rule', {
      id: '01JD0000000000000000000010',
      name: 'x',
      collection_handle: 'shoes',
      banners: Array.from({ length: 6 }, () => sampleItems().merch_rule?.[0].banners?.[0]),
    });
    expect(tooManyBanners).toMatchObject({
      ok: false,
      issues: [{ path: 'banners', message: 'at most 5 banners per rule' }],
    });
    await expect(
      writer.putConfig('no-such-store', 'synonym', { id: 'a', type: 'two_way', terms: ['a', 'b'] }),
    ).rejects.toBeInstanceOf(NotFoundError);
  });

  it('deletes an item with a tombstone', async () => {
    const w = await writer.putConfig(storeId, 'synonym', {
      id: 'to-delete',
      type: 'two_way',
      terms: ['hoodie', 'sweatshirt'],
    });
    await seen(w);
    expect(directory.item(storeId, 'synonym', 'to-delete')).toBeDefined();
    const changes: string[] = [];
    const off = directory.onChange((c) => changes.push(`${c.kind}:${c.itemId}:${c.deleted}`));
    await seen(await writer.deleteConfig(storeId, 'synonym', 'to-delete'));
    off();
    expect(directory.item(storeId, 'synonym', 'to-delete')).toBeUndefined();
    expect(directory.items(storeId, 'synonym').map((s) => s.id)).not.toContain('to-delete');
    expect(changes).toContain('synonym:to-delete:true');
    await expect(writer.deleteConfig(storeId, 'synonym', 'to-delete')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('exports and imports into a new store with the same configuration', async () => {
    await seen(
      await writer.updateStore(storeId, {
        primary_market: 'us',
        market_mode: 'strict',
        autocomplete_mode: 'global',
        media_preloads: { srcset_sizes: [400, 800] },
      }),
    );
    await writer.putConfig(storeId, 'webhook_secret', { id: 'hook-1', secret: 'a-very-secret-webhook-key' });
    const doc = await writer.exportConfig(storeId);
    expect(doc.items.webhook_secret).toBeUndefined();
    expect(JSON.stringify(doc)).not.toContain('a-very-secret-webhook-key');
    expect(doc.items.access_token).toBeUndefined();
    expect(doc.items.merch_preview).toBeUndefined();
    const imported = await writer.importConfig(JSON.parse(JSON.stringify(doc)), { name: 'Imported copy' });
    expect(imported.created).toBe(true);
    expect(imported.token).toMatch(/^sfat_/);
    await seen(imported as { partition: number; offset: string });
    expect(directory.authenticate(imported.token)).toMatchObject({
      ok: true,
      store: {
        storeId: imported.storeId,
        name: 'Imported copy',
        primaryMarket: 'us',
        marketMode: 'strict',
        autocompleteMode: 'global',
        mediaPreloads: { srcsetSizes: [400, 800] },
      },
    });
    const again = await writer.exportConfig(imported.storeId);
    expect(again.items).toEqual(doc.items);
    expect({ ...again.store, name: 'x' }).toEqual({ ...doc.store, name: 'x' });
    for (const kind of EXPORTED_KINDS)
      expect(directory.items(imported.storeId, kind)).toEqual(directory.items(storeId, kind));

    // a document with a bad item is refused as a whole, naming the item's field
    const broken = JSON.parse(JSON.stringify(doc));
    broken.items.sort_order[0].scope = 'everywhere';
    const refused = await writer.importConfig(broken).catch((e) => e);
    expect(refused).toBeInstanceOf(ConfigInputError);
    expect(refused.issues).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: 'items.sort_order[0].scope' })]),
    );
  });

  it('refuses to delete what other items still use', async () => {
    const used = async (kind: ConfigKind, id: string) =>
      ((await writer.deleteConfig(storeId, kind, id).catch((e) => e)) as ConfigInputError).issues?.map(
        (i) => i.message,
      );
    expect(await used('sort_order', 'best_selling')).toEqual(['still used by merch_rule 01JD0000000000000000000010']);
    expect(await used('block', SAMPLE_FALLBACK_BLOCK_ID)).toEqual([
      `still used by block ${SAMPLE_BLOCK_ID} (fallback)`,
    ]);
    expect(await used('market', 'us')).toEqual([expect.stringContaining("the store's primary_market")]);
    expect(directory.item(storeId, 'sort_order', 'best_selling')).toBeDefined();
  });
});

describe('restart', () => {
  it('rebuilds the same state from the compacted topic after a broker and directory restart', async () => {
    const snapshot = (d: ConfigDirectory) =>
      d.listStores().map((s) => ({
        s,
        items: Object.fromEntries(CONFIG_KINDS.map((k) => [k, d.items(s.storeId, k).map((v) => itemIdOf(k, v))])),
      }));
    const before = snapshot(directory);
    expect(before.length).toBeGreaterThanOrEqual(4);
    await writer.close();
    await directory.stop();
    await registry.close();
    await broker.runMaintenance();
    await broker.close();

    broker = await startBroker({ port: 0, dataDir, logger, groupOptions: { initialRebalanceDelayMs: 50 } });
    registry = await startSchemaRegistry({ brokers: [`127.0.0.1:${broker.port}`], topic: '_schemas', port: 0, logger });
    directory = newDirectory(broker);
    await directory.start();
    await directory.ready();
    expect(snapshot(directory)).toEqual(before);
    writer = openConfigWriter({ brokers: [`127.0.0.1:${broker.port}`], registryUrl: registry.url, logger });
  });
});
