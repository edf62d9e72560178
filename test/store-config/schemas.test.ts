// The configuration schemas on their own: keys, normalization, defaults and the rules that cross fields.
import { describe, expect, it } from 'vitest';
import {
  CONFIG_KINDS,
  configKey,
  gidNumericId,
  itemIdOf,
  normalizeTerm,
  parseConfigKey,
  STRATEGY_KEYS,
  validateConfig,
} from '../../schemas/config.ts';
import { sampleItems } from '../helpers/stores.ts';

describe('record keys', () => {
  it('round-trip store|kind|item, with "|" allowed only inside nothing but the item id', () => {
    expect(parseConfigKey(configKey('acme', 'redirect_term', 'gift cards'))).toEqual({
      storeId: 'acme',
      kind: 'redirect_term',
      itemId: 'gift cards',
    });
    expect(parseConfigKey('acme|block|')).toBeUndefined();
    expect(parseConfigKey('acme')).toBeUndefined();
    expect(parseConfigKey('|block|x')).toBeUndefined();
  });

  it('derive the item id from the payload', () => {
    const samples = sampleItems();
    for (const kind of CONFIG_KINDS) {
      for (const raw of samples[kind] ?? []) {
        const r = validateConfig(kind, raw);
        expect(r.ok, `${kind}: ${JSON.stringify(r)}`).toBe(true);
        if (r.ok) expect(itemIdOf(kind, r.value)).not.toContain('|');
      }
    }
    const loc = validateConfig('b2b_company_location', {
      gid: 'gid://shopify/CompanyLocation/42',
      company_id: 'gid://shopify/Company/7',
      catalog_id: 'c',
    });
    expect(loc.ok && itemIdOf('b2b_company_location', loc.value)).toBe('42');
    expect(loc.ok && loc.value.company_id).toBe('7');
  });
});

describe('normalization and defaults', () => {
  it('normalizes terms, option codes, countries and currencies', () => {
    expect(normalizeTerm('  Gift   CARDS ')).toBe('gift cards');
    expect(gidNumericId('gid://shopify/Customer/12', 'Customer')).toBe('12');
    expect(gidNumericId('gid://shopify/Product/12', 'Customer')).toBeUndefined();
    const b = validateConfig('variant_breakout', { id: 'x', name: 'Size', option_code: ' Shoe Size ' });
    expect(b.ok && b.value).toMatchObject({
      option_code: 'shoe_size',
      applies: 'both',
      include_option_value_in_title: true,
      status: 'published',
    });
    const m = validateConfig('market', {
      code: 'eu',
      countries: ['de', 'FR'],
      currency: 'eur',
      gid: 'gid://shopify/Market/9',
    });
    expect(m.ok && m.value).toMatchObject({
      countries: ['DE', 'FR'],
      currency: 'EUR',
      gid: 'gid://shopify/Market/9',
      market_id: null,
    });
  });

  it('fills store defaults: ignore markets, per-region autocomplete, preloads on with the reference widths', () => {
    const s = validateConfig('store', { store_id: 'acme', name: 'Acme', created_at: '2026-01-01T00:00:00Z' });
    expect(s.ok && s.value).toMatchObject({
      status: 'active',
      market_mode: 'ignore',
      autocomplete_mode: 'per_region',
      media_preloads: {
        enabled: true,
        srcset_sizes: [360, 540, 720, 900, 1080],
        rewrite_domain: null,
        rewrite_urls: true,
      },
    });
  });
});

describe('rules across fields', () => {
  it('blocks: strategy type derived from the key, min ≤ max, no self-fallback, manual needs products', () => {
    const base = { id: '01JD0000000000000000000001', title: 'x', anchor_type: 'product' };
    const ok = validateConfig('block', { ...base, strategy_key: 'customers_also_viewed' });
    expect(ok.ok && ok.value.strategy_type).toBe(STRATEGY_KEYS.customers_also_viewed);
    const issues = (input: object) => {
      const r = validateConfig('block', { ...base, ...input });
      return r.ok ? [] : r.issues.map((i) => i.path);
    };
    expect(issues({ strategy_key: 'best_sellers', safeguards: { min_products: 9, max_products: 4 } })).toEqual([
      'safeguards.min_products',
    ]);
    expect(issues({ strategy_key: 'best_sellers', fallback: [{ block_id: base.id }] })).toEqual([
      'fallback[0].block_id',
    ]);
    expect(issues({ strategy_key: 'manual_curation' })).toEqual(['strategy_params.product_ids']);
    expect(issues({ strategy_key: 'no_such_strategy' })).toEqual(['strategy_key']);
    expect(issues({ strategy_key: 'best_sellers', anchor_type: 'homepage' })).toEqual(['anchor_type']);
    expect(issues({ strategy_key: 'best_sellers', surprise: 1, safeguards: { min_prods: 1 } })).toEqual([
      'safeguards.min_prods',
      'surprise',
    ]); // typos are refused
  });

  it('search rules: known action types are checked, unknown ones kept for unsupported_action_type', () => {
    const rule = (actions: unknown[]) =>
      validateConfig('search_rule', { id: '01JD0000000000000000000020', name: 'r', targeting: {}, actions });
    expect(rule([{ type: 'replace_query' }])).toMatchObject({ ok: false, issues: [{ path: 'actions[0].query' }] });
    expect(rule([{ type: 'teleport', where: 'moon' }])).toMatchObject({
      ok: true,
      value: { actions: [{ type: 'teleport', where: 'moon' }] },
    });
  });

  it('banners: at most 5, link only when injecting, schedule end after start', () => {
    const banner = sampleItems().merch_rule?.[0].banners?.[0] as Record<string, unknown>;
    const rule = (banners: unknown[]) =>
      validateConfig('merch_rule', { id: '01JD0000000000000000000010', name: 'r', collection_handle: 'c', banners });
    expect(rule([{ ...banner, mode: 'overtake' }])).toMatchObject({ ok: false, issues: [{ path: 'banners[0].link' }] });
    expect(
      rule([{ ...banner, schedule_start_at: '2026-02-01T00:00:00Z', schedule_end_at: '2026-01-01T00:00:00Z' }]),
    ).toMatchObject({
      ok: false,
      issues: [{ path: 'banners[0].schedule_end_at' }],
    });
    expect(rule(Array(5).fill(banner)).ok).toBe(true);
  });

  it('ranking rules: pins need products, promote/demote need conditions', () => {
    const r = (input: object) =>
      validateConfig('ranking_rule', { id: '01JD0000000000000000000030', name: 'r', ...input });
    expect(r({ type: 'pin' })).toMatchObject({ ok: false, issues: [{ path: 'product_ids' }] });
    expect(r({ type: 'demote' })).toMatchObject({ ok: false, issues: [{ path: 'match' }] });
    expect(r({ type: 'pin', product_ids: ['1'] })).toMatchObject({ ok: true, value: { status: 'draft', queries: [] } });
  });

  it('sort orders: a collection default names collection handles and is refused on a search-only order', () => {
    const s = (input: object) =>
      validateConfig('sort_order', {
        code: 'price_asc',
        nickname: 'Price',
        expressions: [{ attribute: 'price', direction: 'asc' }],
        ...input,
      });
    expect(s({})).toMatchObject({ ok: true, value: { default_for_collections: [] } });
    expect(s({ scope: 'collection', default_for_collections: ['shoes', 'summer-edit'] })).toMatchObject({
      ok: true,
      value: { default_for_collections: ['shoes', 'summer-edit'] },
    });
    expect(s({ scope: 'search', default_for_collections: ['shoes'] })).toEqual({
      ok: false,
      issues: [
        {
          path: 'default_for_collections',
          message: 'a sort order of the search scope cannot be the default of a collection',
        },
      ],
    });
    expect(s({ default_for_collections: ['Shoes!'] })).toMatchObject({
      ok: false,
      issues: [{ path: 'default_for_collections[0]' }],
    });
  });
});
