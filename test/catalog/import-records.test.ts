// The import's line → records mapping and JSON-array line numbering (the Kafka side is in
// test/stack/catalog-import.test.ts).
import { describe, expect, it } from 'vitest';
import { arrayElementStarts, recordsForImport } from '../../services/catalog/importer.ts';
import { shopifyCollection, shopifyProduct } from './fixtures.ts';

const now = '2026-01-01T00:00:00.000Z';

describe('import records', () => {
  it('maps each type to its topic and key', () => {
    const product = recordsForImport(
      's',
      {
        type: 'product',
        ...shopifyProduct({
          variants: [{ id: 1, price: '1', inventory_item_id: 9, inventory_levels: [{ location_id: 3, available: 2 }] }],
        }),
      },
      now,
    );
    expect(product.ok && product.records.map((r) => [r.topic, r.key])).toEqual([
      ['products', 's:632910392'],
      ['inventory', 's:i9:3'],
    ]);
    const collection = recordsForImport(
      's',
      { type: 'collection', ...shopifyCollection({ product_ids: [1, 2] }) },
      now,
    );
    expect(collection.ok && collection.records.map((r) => r.key)).toEqual(['s:841564295', 's:841564295:members']);
    const price = recordsForImport(
      's',
      { type: 'price', market: 'ca', variant_id: 1, currency: 'CAD', price: '2.00' },
      now,
    );
    expect(price.ok && price.records.map((r) => [r.topic, r.key])).toEqual([['pricing', 's:price:market-ca:1']]);
    const del = recordsForImport('s', { type: 'collection', id: 'gid://shopify/Collection/5', deleted: true }, now);
    expect(del.ok && del.records.map((r) => [r.key, r.value])).toEqual([
      ['s:5', null],
      ['s:5:members', null],
    ]);
    const priceDel = recordsForImport('s', { type: 'price', price_list_id: 'pl', variant_id: '7', deleted: true }, now);
    expect(priceDel.ok && priceDel.records.map((r) => r.key)).toEqual(['s:price:pl:7']);
  });

  it('names the offending field', () => {
    const unknown = recordsForImport('s', { type: 'widget' }, now);
    expect(!unknown.ok && unknown.issues[0].path).toBe('type');
    const bad = recordsForImport('s', { type: 'product', id: 5, variants: [{ id: 1, price: '-3' }] }, now);
    expect(!bad.ok && bad.issues.map((i) => i.path)).toEqual(['variants[0].price']);
    const noId = recordsForImport('s', { type: 'product', deleted: true }, now);
    expect(!noId.ok && noId.issues[0].path).toBe('id');
  });

  it('finds where each element of a JSON array starts', () => {
    const text = '[\n  {"a": "x,]}"},\n  {"b": [1, {"c": 2}]}\n, 3,\n"s"]';
    const starts = arrayElementStarts(text);
    expect(starts.map((i) => text[i])).toEqual(['{', '{', '3', '"']);
    expect(arrayElementStarts('[]')).toEqual([]);
  });
});
