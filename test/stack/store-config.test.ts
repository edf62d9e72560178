// The admin CLI against the running stack: each configuration kind is written with the CLI (a child
// process), read back with the CLI, and shown to be applied by the app's store directory — through the
// ClickHouse projection it writes (analysts' SQL endpoint) and through token authentication (whoami).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigKind } from '../../schemas/config.ts';
import { stack } from '../helpers/stack.ts';
import {
  closeTestStoreWriter,
  createTestStore,
  testStoreWriter,
  SAMPLE_BLOCK_ID,
  SAMPLE_FALLBACK_BLOCK_ID,
  sampleItems,
  waitForApp,
} from '../helpers/stores.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const NODE = path.join(ROOT, 'node_modules/.bin/node');
const CLI = path.join(ROOT, 'services/admin/cli.ts');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'sd-admin-'));

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(...args: string[]): Promise<CliResult> {
  const s = stack();
  return new Promise((resolve) => {
    execFile(
      NODE,
      [CLI, ...args],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          KAFKA_BROKERS: s.kafkaBrokers.join(','),
          SCHEMA_REGISTRY_URL: s.schemaRegistryUrl,
          KAFKA_TOPIC_PREFIX: '',
          LOG_LEVEL: 'error',
        },
        timeout: 60_000,
      },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** run with --json, expect success, parse stdout */
async function cliJson<T = any>(...args: string[]): Promise<T> {
  const r = await cli('--json', ...args);
  expect(r.stderr, `admin ${args.join(' ')}`).toBe('');
  expect(r.code, `admin ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout) as T;
}

async function appliedByApp(offset: string): Promise<void> {
  await waitForApp({ partition: 0, offset });
}

async function projected(storeId: string): Promise<Map<string, unknown>> {
  const r = await fetch(`${stack().clickhouseUrl}/?param_store=${encodeURIComponent(storeId)}`, {
    method: 'POST',
    body: 'SELECT kind, item_id, payload FROM discovery.store_config_current WHERE store_id = {store:String} ORDER BY kind, item_id FORMAT JSONEachRow',
  });
  const text = await r.text();
  expect(r.status, text).toBe(200);
  const out = new Map<string, unknown>();
  for (const line of text.split('\n').filter(Boolean)) {
    const row = JSON.parse(line) as { kind: string; item_id: string; payload: string };
    out.set(`${row.kind}|${row.item_id}`, JSON.parse(row.payload));
  }
  return out;
}

/**
 * The projection is written right after the in-memory state; poll until `fn` passes. Failed attempts are
 * logged: the analysts' endpoint over chDB has answered a transient 400 ("filesystem error: in file_size:
 * No such file or directory […/data.cmrk4]", a part read while a merge replaced it), which a retry clears.
 */
async function eventually(fn: () => Promise<void>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const seen = new Set<string>();
  for (;;) {
    try {
      await fn();
      if (seen.size) console.log(`eventually passed after failed attempts:\n${[...seen].join('\n')}`);
      return;
    } catch (err) {
      seen.add(
        String((err as Error).message)
          .split('\n')[0]
          .slice(0, 300),
      );
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

const whoami = (token?: string) =>
  fetch(`${stack().httpUrl}/internal/store-config/whoami`, {
    headers: token === undefined ? {} : { 'x-storefront-access-token': token },
  });

afterAll(async () => {
  await closeTestStoreWriter();
});

describe('admin CLI: stores and tokens', () => {
  it('creates a store whose token authenticates; suspend → 402, resume → 200; revoked/unknown/missing → 401', async () => {
    const created = await cliJson<{ store_id: string; token: string; token_id: string; offset: string }>(
      'stores',
      'create',
      '--name',
      'CLI store',
    );
    expect(created.token).toMatch(/^sfat_/);
    await appliedByApp(created.offset);
    const ok = await whoami(created.token);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ store_id: created.store_id, name: 'CLI store', status: 'active' });

    const listed = await cliJson<{ storeId: string }[]>('stores', 'list');
    expect(listed.map((s) => s.storeId)).toContain(created.store_id);

    await appliedByApp((await cliJson('stores', 'suspend', created.store_id)).offset);
    const suspended = await whoami(created.token);
    expect(suspended.status).toBe(402);
    expect(await suspended.json()).toMatchObject({ error: { code: 'store_suspended' } });
    await appliedByApp((await cliJson('stores', 'resume', created.store_id)).offset);
    expect((await whoami(created.token)).status).toBe(200);

    const issued = await cliJson<{ token: string; token_id: string }>(
      'tokens',
      'issue',
      created.store_id,
      '--label',
      'second',
    );
    await appliedByApp((await cliJson('tokens', 'revoke', created.store_id, created.token_id)).offset);
    const revoked = await whoami(created.token);
    expect(revoked.status).toBe(401);
    expect(await revoked.json()).toMatchObject({ error: { code: 'invalid_token' } });
    expect((await whoami(issued.token)).status).toBe(200);
    expect((await whoami('sfat_unknown')).status).toBe(401);
    const missing = await whoami();
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ error: { code: 'missing_token' } });

    const tokens = await cliJson<{ token_id: string; revoked_at: string | null; label: string | null }[]>(
      'tokens',
      'list',
      created.store_id,
    );
    expect(tokens).toHaveLength(2);
    expect(JSON.stringify(tokens)).not.toContain('sfat_');
  }, 180_000);

  it('names the bad flag or field and exits non-zero', async () => {
    const noName = await cli('stores', 'create');
    expect(noName.code).not.toBe(0);
    expect(noName.stderr).toContain("required option '--name <name>'");
    const { storeId } = await createTestStore({ name: 'errors' });
    const badExpr = await cli(
      'sort-orders',
      'put',
      storeId,
      '--code',
      'x',
      '--nickname',
      'X',
      '--expr',
      'price:upwards',
    );
    expect(badExpr.code).toBe(2);
    expect(badExpr.stderr).toContain(
      "option '--expr <attribute:direction[:weight]>' argument 'price:upwards' is invalid",
    );
    const badField = await cli('markets', 'put', storeId, '--code', 'eu', '--countries', 'DEU', '--currency', 'EUR');
    expect(badField.code).toBe(2);
    expect(badField.stderr).toContain('error: countries[0]: expected an ISO 3166-1 alpha-2 country code');
    const noStore = await cli('markets', 'list', 'no-such-store');
    expect(noStore.code).toBe(3);
    expect(noStore.stderr).toContain('store no-such-store does not exist');
    const help = await cli('blocks', 'put', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--strategy <key>');
  }, 180_000);
});

describe('visibility', () => {
  it('a suspension written by the writer reaches the app (polled; the measured latency is printed)', async () => {
    const { storeId, token } = await createTestStore({ name: 'latency' });
    const w = testStoreWriter();
    const samples: number[] = [];
    for (let i = 0; i < 3; i++) {
      const suspend = i % 2 === 0;
      const t0 = performance.now();
      await (suspend ? w.suspendStore(storeId) : w.resumeStore(storeId));
      const deadline = Date.now() + 15_000;
      for (;;) {
        const status = (await whoami(token)).status;
        if (status === (suspend ? 402 : 200)) break;
        if (Date.now() > deadline) throw new Error(`store ${storeId} still answers ${status} 15 s after the write`);
        await new Promise((r) => setTimeout(r, 5));
      }
      samples.push(performance.now() - t0);
    }
    console.log(`store-config write → visible in the app (whoami), ms: ${samples.map((x) => x.toFixed(1)).join(', ')}`);
  });

  it('the caught-up endpoint answers for an offset and names a bad parameter', async () => {
    const base = `${stack().httpUrl}/internal/store-config/caught-up`;
    const ok = (await (await fetch(`${base}?offset=0`)).json()) as { position: string };
    expect(ok).toMatchObject({ caught_up: true, partition: 0 });
    expect(BigInt(ok.position)).toBeGreaterThan(0n);
    const future = await (await fetch(`${base}?offset=99999999999&wait_ms=50`)).json();
    expect(future).toMatchObject({ caught_up: false });
    const bad = await fetch(`${base}?offset=-1&wait_ms=99999`);
    expect(bad.status).toBe(400);
    const body = (await bad.json()) as { error: { code: string; fields: { path: string }[] } };
    expect(body.error.code).toBe('invalid_query');
    expect(body.error.fields.map((f) => f.path).sort()).toEqual(['offset', 'wait_ms']);
  });
});

describe('admin CLI: every configuration kind', () => {
  let storeId: string;
  let token: string;
  const samples = sampleItems();
  const file = (name: string, data: unknown) => {
    const p = path.join(tmp, name);
    writeFileSync(p, JSON.stringify(data));
    return p;
  };

  beforeAll(async () => {
    ({ storeId, token } = await createTestStore({ name: 'Kinds' }));
  });

  it('writes each kind with the CLI, reads it back, and the app applies it', async () => {
    const written = new Map<string, unknown>();
    const put = async (args: string[], kind: ConfigKind) => {
      const r = await cliJson<{ item_id: string; item: unknown; offset: string }>(...args);
      written.set(`${kind}|${r.item_id}`, r.item);
      return r;
    };
    // independent items go in parallel waves (each CLI run is a process); references come after their targets
    await Promise.all([
      put(
        [
          'markets',
          'put',
          storeId,
          '--code',
          'us',
          '--name',
          'United States',
          '--market-id',
          '1001',
          '--countries',
          'US,PR',
          '--currency',
          'usd',
        ],
        'market',
      ),
      put(
        ['sort-orders', 'put', storeId, '--code', 'newest', '--nickname', 'Newest', '--expr', 'published_at:desc'],
        'sort_order',
      ),
      put(['sort-orders', 'put', storeId, '--file', file('best.json', samples.sort_order?.[1])], 'sort_order'),
      put(
        [
          'blocks',
          'put',
          storeId,
          '--id',
          SAMPLE_FALLBACK_BLOCK_ID,
          '--title',
          'Best sellers',
          '--anchor',
          'none',
          '--strategy',
          'best_sellers',
        ],
        'block',
      ),
    ]);
    await Promise.all([
      put(['blocks', 'put', storeId, '--file', file('block.json', samples.block?.[1])], 'block'),
      put(
        ['merch-rules', 'put', storeId, '--file', file('rule.json', samples.merch_rule?.[0]), '--pin', '99@2'],
        'merch_rule',
      ),
      put(
        [
          'search-rules',
          'put',
          storeId,
          '--name',
          'sneakers',
          '--match',
          'exact',
          '--query',
          'sneakers',
          '--replace-query',
          'trainers',
        ],
        'search_rule',
      ),
      put(
        ['redirects', 'put', storeId, '--term', 'Gift Cards', '--url', '/products/gift-card', '--match', 'semantic'],
        'redirect_term',
      ),
    ]);
    await Promise.all([
      put(['synonyms', 'put', storeId, '--id', 'tees', '--terms', 'tee,t-shirt'], 'synonym'),
      put(['synonyms', 'put', storeId, '--id', 'pants', '--term', 'pants', '--to', 'trousers,chinos'], 'synonym'),
      put(
        [
          'breakouts',
          'put',
          storeId,
          '--name',
          'Colours',
          '--option',
          'Color',
          '--applies',
          'collections',
          '--title-value',
          'false',
        ],
        'variant_breakout',
      ),
      put(
        [
          'ranking-rules',
          'put',
          storeId,
          '--name',
          'Classic',
          '--type',
          'pin',
          '--queries',
          'boots',
          '--product-ids',
          '1234',
          '--status',
          'published',
        ],
        'ranking_rule',
      ),
    ]);
    await Promise.all([
      put(
        [
          'b2b',
          'locations',
          'put',
          storeId,
          '--gid',
          'gid://shopify/CompanyLocation/555',
          '--company',
          '77',
          '--catalog',
          'b2b-main',
          '--price-list',
          'wholesale',
        ],
        'b2b_company_location',
      ),
      put(
        ['b2b', 'customers', 'put', storeId, '--customer', 'gid://shopify/Customer/9001', '--companies', '77'],
        'b2b_customer',
      ),
      cliJson<{ item: { query: string }; offset: string }>(
        'autocomplete',
        'curate',
        storeId,
        '--query',
        'T-Shirt',
        '--label',
        'T-shirts',
      ).then((cur) => written.set('autocomplete_curation|t-shirt', cur.item)),
    ]);
    const hook = await cliJson<{ id: string; secret: string }>('webhook-secrets', 'add', storeId, '--label', 'shopify');
    expect(hook.secret).toMatch(/^[0-9a-f]{64}$/);
    const hooks = await cliJson<{ id: string; label: string }[]>('webhook-secrets', 'list', storeId);
    expect(hooks).toEqual([{ id: hook.id, label: 'shopify', created_at: expect.any(String) }]);
    const preview = await cliJson<{ preview_id: string; expires_at: string; offset: string }>(
      'previews',
      'create',
      storeId,
      '--from-rule',
      '01JD0000000000000000000010',
    );
    expect(Date.parse(preview.expires_at) - Date.now()).toBeGreaterThan(59 * 60_000);
    // store-record changes are read-modify-write: one after the other
    await cliJson('autocomplete', 'mode', storeId, 'global');
    await cliJson('stores', 'update', storeId, '--market', 'us', '--market-mode', 'pricing_only');
    const media = await cliJson<{ media_preloads: unknown; offset: string }>(
      'media-preloads',
      'set',
      storeId,
      '--srcset-sizes',
      '320,640',
      '--rewrite-domain',
      'cdn.example.com',
    );
    expect(media.media_preloads).toEqual({
      enabled: true,
      srcsetSizes: [320, 640],
      rewriteDomain: 'cdn.example.com',
      rewriteUrls: true,
    });
    await appliedByApp(media.offset);

    // read back through the CLI
    const blocks = await cliJson<{ id: string; fallback: unknown }[]>('blocks', 'list', storeId);
    expect(blocks.map((b) => b.id)).toEqual([SAMPLE_BLOCK_ID, SAMPLE_FALLBACK_BLOCK_ID].sort());
    expect(await cliJson('markets', 'get', storeId, 'us')).toEqual(written.get('market|us'));
    expect(written.get('market|us')).toMatchObject({
      gid: 'gid://shopify/Market/1001',
      countries: ['US', 'PR'],
      currency: 'USD',
    });
    expect(written.get('variant_breakout|color')).toMatchObject({
      option_code: 'color',
      include_option_value_in_title: false,
    });
    expect(written.get('b2b_customer|9001')).toEqual({ customer_id: '9001', company_ids: ['77'] });
    expect((written.get(`merch_rule|01JD0000000000000000000010`) as { pins: unknown[] }).pins).toEqual([
      { product_id: '99', position: 2, conditions: null },
    ]);
    const previews = await cliJson<{ id: string }[]>('previews', 'list', storeId);
    expect(previews.map((p) => p.id)).toEqual([preview.preview_id]);

    // the app's directory applied all of it: its ClickHouse projection holds exactly these items
    await eventually(async () => {
      const rows = await projected(storeId);
      for (const [key, item] of written) expect(rows.get(key), key).toEqual(item);
      expect(rows.get(`webhook_secret|${hook.id}`)).toMatchObject({ label: 'shopify', secret: '[redacted]' });
      expect(rows.get(`merch_preview|${preview.preview_id}`)).toMatchObject({
        id: preview.preview_id,
        rule: { collection_handle: 'shoes' },
      });
      expect(rows.get(`store|${storeId}`)).toMatchObject({
        autocomplete_mode: 'global',
        primary_market: 'us',
        market_mode: 'pricing_only',
        media_preloads: { srcset_sizes: [320, 640], rewrite_domain: 'cdn.example.com' },
      });
    });
    expect((await whoami(token)).status).toBe(200);

    // export → import into a new store reproduces the configuration
    const out = path.join(tmp, 'export.json');
    const exp = await cli('config', 'export', storeId, '--out', out);
    expect(exp.code).toBe(0);
    const doc = JSON.parse(readFileSync(out, 'utf8'));
    const imported = await cliJson<{
      store_id: string;
      token: string;
      created: boolean;
      written: number;
      offset: string;
    }>('config', 'import', out, '--name', 'Kinds copy');
    expect(imported.created).toBe(true);
    expect(imported.written).toBe(written.size);
    await appliedByApp(imported.offset);
    expect(await (await whoami(imported.token)).json()).toMatchObject({
      store_id: imported.store_id,
      name: 'Kinds copy',
    });
    const again = JSON.parse((await cli('config', 'export', imported.store_id)).stdout);
    expect(again.items).toEqual(doc.items);
    expect({ ...again.store, name: null }).toEqual({ ...doc.store, name: null });

    // tombstones: delete one item of every kind; the app's projection drops them
    const deletes: [string[], string][] = [
      [['markets', 'delete', storeId, 'us'], 'market|us'],
      [['sort-orders', 'delete', storeId, 'newest'], 'sort_order|newest'],
      [['blocks', 'delete', storeId, SAMPLE_BLOCK_ID], `block|${SAMPLE_BLOCK_ID}`],
      [['merch-rules', 'delete', storeId, '01JD0000000000000000000010'], 'merch_rule|01JD0000000000000000000010'],
      [['redirects', 'delete', storeId, 'GIFT cards'], 'redirect_term|gift cards'],
      [['synonyms', 'delete', storeId, 'tees'], 'synonym|tees'],
      [['breakouts', 'delete', storeId, 'color'], 'variant_breakout|color'],
      [['b2b', 'locations', 'delete', storeId, 'gid://shopify/CompanyLocation/555'], 'b2b_company_location|555'],
      [['b2b', 'customers', 'delete', storeId, '9001'], 'b2b_customer|9001'],
      [['autocomplete', 'uncurate', storeId, 't-shirt'], 'autocomplete_curation|t-shirt'],
      [['previews', 'delete', storeId, preview.preview_id], `merch_preview|${preview.preview_id}`],
    ];
    const searchRuleId = [...written.keys()].find((k) => k.startsWith('search_rule|'))?.split('|')[1] as string;
    const rankingRuleId = [...written.keys()].find((k) => k.startsWith('ranking_rule|'))?.split('|')[1] as string;
    deletes.push([['search-rules', 'delete', storeId, searchRuleId], `search_rule|${searchRuleId}`]);
    deletes.push([['ranking-rules', 'delete', storeId, rankingRuleId], `ranking_rule|${rankingRuleId}`]);
    // a market in use as the primary market cannot be deleted
    const inUse = await cli('markets', 'delete', storeId, 'us');
    expect(inUse.code).toBe(2);
    expect(inUse.stderr).toContain("still used by the store's primary_market");
    await cliJson('stores', 'update', storeId, '--market', 'none');
    const offsets: string[] = [];
    for (let i = 0; i < deletes.length; i += 4) {
      const wave = await Promise.all(deletes.slice(i, i + 4).map(([args]) => cliJson<{ offset: string }>(...args)));
      offsets.push(...wave.map((r) => r.offset));
    }
    await appliedByApp(offsets.reduce((a, b) => (BigInt(a) > BigInt(b) ? a : b)));
    await eventually(async () => {
      const rows = await projected(storeId);
      for (const [, key] of deletes) expect(rows.has(key), key).toBe(false);
      expect(rows.has(`block|${SAMPLE_FALLBACK_BLOCK_ID}`)).toBe(true);
      expect(rows.has('sort_order|best_selling')).toBe(true);
    });
    const gone = await cli('markets', 'get', storeId, 'us');
    expect(gone.code).toBe(3);
  }, 300_000);
});

describe('admin CLI: curation, brand prompt, previews prune, import --prune, show and delete', () => {
  it('curate --deny and brand-prompt reach the app; previews prune tombstones only expired previews', async () => {
    const { storeId } = await createTestStore({
      name: 'Curation',
      items: { sort_order: sampleItems().sort_order, merch_rule: sampleItems().merch_rule },
    });
    const denied = await cliJson<{ item: unknown; offset: string }>(
      'autocomplete',
      'curate',
      storeId,
      '--query',
      'Cheap Knockoff',
      '--deny',
    );
    expect(denied.item).toEqual({ query: 'cheap knockoff', allowed: false, display_label: null });
    const both = await cli('autocomplete', 'curate', storeId, '--query', 'x', '--allow', '--deny');
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--allow and --deny exclude each other');
    expect(await cliJson('autocomplete', 'curations', storeId)).toEqual([
      { query: 'cheap knockoff', allowed: false, display_label: null },
    ]);

    await cliJson('autocomplete', 'brand-prompt', storeId, 'Outdoor gear for rainy cities; never suggest knockoffs.');
    // a live preview (the CLI's, one hour) and one whose hour is over: written with the writer's own
    // producer, since the writer stamps every new preview with created_at = now
    const live = await cliJson<{ preview_id: string }>(
      'previews',
      'create',
      storeId,
      '--from-rule',
      '01JD0000000000000000000010',
    );
    const w = testStoreWriter();
    const expiredId = '00000000-0000-4000-8000-000000000001';
    const rule = { id: null, ...(sampleItems().merch_rule?.[0] as object), name: 'Expired preview' };
    const produce = (
      w as unknown as {
        produce(store: string, kind: ConfigKind, id: string, payload: unknown): Promise<{ offset: string }>;
      }
    ).produce.bind(w);
    await produce(storeId, 'merch_preview', expiredId, {
      id: expiredId,
      rule,
      created_at: new Date(Date.now() - 2 * 3_600_000).toISOString(),
      expires_at: new Date(Date.now() - 3_600_000).toISOString(),
    });
    // an expired preview is no longer served or listed, but its record stays until pruned
    expect((await cliJson<{ id: string }[]>('previews', 'list', storeId)).map((p) => p.id)).toEqual([live.preview_id]);
    await eventually(async () =>
      expect((await projected(storeId)).get(`merch_preview|${expiredId}`)).toMatchObject({
        id: expiredId,
        rule: { name: 'Expired preview' },
      }),
    );

    const pruned = await cliJson<{ deleted: number }>('previews', 'prune', storeId);
    expect(pruned).toEqual({ store_id: storeId, deleted: 1 });
    expect((await cliJson<{ id: string }[]>('previews', 'list', storeId)).map((p) => p.id)).toEqual([live.preview_id]);
    expect(await cliJson('previews', 'prune', storeId)).toEqual({ store_id: storeId, deleted: 0 });

    await eventually(async () => {
      const rows = await projected(storeId);
      expect(rows.get('autocomplete_curation|cheap knockoff')).toEqual({
        query: 'cheap knockoff',
        allowed: false,
        display_label: null,
      });
      expect(rows.get(`store|${storeId}`)).toMatchObject({
        brand_prompt: 'Outdoor gear for rainy cities; never suggest knockoffs.',
      });
      expect(rows.has(`merch_preview|${live.preview_id}`)).toBe(true);
      expect(rows.has(`merch_preview|${expiredId}`)).toBe(false);
    });
    // "" clears the brand prompt
    await cliJson('autocomplete', 'brand-prompt', storeId, '');
    await eventually(async () =>
      expect((await projected(storeId)).get(`store|${storeId}`)).toMatchObject({ brand_prompt: null }),
    );
  }, 180_000);

  it('config import --store --prune tombstones what the document lacks; stores show counts; stores delete --yes → 401', async () => {
    const source = await createTestStore({
      name: 'Import source',
      items: { synonym: sampleItems().synonym, redirect_term: sampleItems().redirect_term },
    });
    const target = await createTestStore({
      name: 'Import target',
      items: {
        synonym: [{ id: 'extra', type: 'two_way', terms: ['hoodie', 'sweatshirt'] }],
        sort_order: sampleItems().sort_order?.slice(0, 1),
      },
    });
    const doc = path.join(tmp, 'prune-source.json');
    expect((await cli('config', 'export', source.storeId, '--out', doc)).code).toBe(0);

    const imported = await cliJson<{
      store_id: string;
      created: boolean;
      written: number;
      deleted: number;
      offset: string;
    }>('config', 'import', doc, '--store', target.storeId, '--prune');
    // 2 synonyms + 1 redirect written; the target's own synonym and sort order tombstoned
    expect(imported).toMatchObject({ store_id: target.storeId, created: false, written: 3, deleted: 2 });
    await appliedByApp(imported.offset);
    const synonyms = await cliJson<{ id: string }[]>('synonyms', 'list', target.storeId);
    expect(synonyms.map((x) => x.id).sort()).toEqual(['pants', 'tees']);
    expect((await cli('synonyms', 'get', target.storeId, 'extra')).code).toBe(3);
    await eventually(async () => {
      const rows = await projected(target.storeId);
      expect(rows.has('synonym|extra')).toBe(false);
      expect(rows.has('sort_order|newest')).toBe(false);
      expect(rows.has('synonym|tees')).toBe(true);
      expect(rows.has('redirect_term|gift cards')).toBe(true);
    });
    // without --prune an import keeps what the document lacks
    await cliJson('synonyms', 'put', target.storeId, '--id', 'kept', '--terms', 'cap,hat');
    const kept = await cliJson<{ deleted: number }>('config', 'import', doc, '--store', target.storeId);
    expect(kept).toMatchObject({ written: 3, deleted: 0 });
    expect((await cliJson<{ id: string }[]>('synonyms', 'list', target.storeId)).map((x) => x.id).sort()).toEqual([
      'kept',
      'pants',
      'tees',
    ]);

    const shown = await cliJson<{
      store: { storeId: string; name: string; status: string };
      counts: Record<string, number>;
    }>('stores', 'show', target.storeId);
    expect(shown.store).toMatchObject({ storeId: target.storeId, name: 'Import source', status: 'active' });
    expect(shown.counts).toMatchObject({ synonym: 3, redirect_term: 1, sort_order: 0, market: 0, block: 0 });
    const human = await cli('stores', 'show', target.storeId);
    expect(human.stdout).toContain('synonym: 3');

    expect((await whoami(target.token)).status).toBe(200);
    const unconfirmed = await cli('stores', 'delete', target.storeId);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain('confirm with --yes');
    expect((await whoami(target.token)).status).toBe(200);
    const deleted = await cliJson<{ deleted: boolean; offset: string }>('stores', 'delete', target.storeId, '--yes');
    expect(deleted).toMatchObject({ store_id: target.storeId, deleted: true });
    await appliedByApp(deleted.offset);
    const after = await whoami(target.token);
    expect(after.status).toBe(401);
    expect(await after.json()).toMatchObject({ error: { code: 'invalid_token' } });
    const gone = await cli('stores', 'show', target.storeId);
    expect(gone.code).toBe(3);
    expect(gone.stderr).toContain(`store ${target.storeId} does not exist`);
    await eventually(async () => expect([...(await projected(target.storeId)).keys()]).toEqual([]));
    // the source store is untouched
    expect((await whoami(source.token)).status).toBe(200);
  }, 180_000);
});
