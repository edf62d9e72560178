// compactRows (clickhouse/client.ts): uniform rows become one JSONCompactEachRow body under the first
// row's keys; anything else (different keys or key order, a missing or extra key, an `undefined` value)
// falls back to JSONEachRow. Both insert paths are checked end to end in a private chDB database: what
// was inserted reads back with the same values (and the column default where a key was left out).
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactRows, type Db } from '../../clickhouse/client.ts';
import { privateDb } from '../helpers/chdb.ts';

describe('compactRows', () => {
  it('turns rows with the same keys in the same order into columns and positional JSON lines', () => {
    const out = compactRows([
      { store_id: 's1', n: 1, price: '9.99', tags: ['a', 'b'], note: null },
      { store_id: 's2', n: 2, price: '0.5', tags: [], note: 'x "quoted"\nline' },
    ]);
    expect(out?.columns).toEqual(['store_id', 'n', 'price', 'tags', 'note']);
    expect(out?.body.toString()).toBe('["s1",1,"9.99",["a","b"],null]\n["s2",2,"0.5",[],"x \\"quoted\\"\\nline"]');
  });

  it('a single row is uniform', () => {
    const out = compactRows([{ a: 1 }]);
    expect(out?.columns).toEqual(['a']);
    expect(out?.body.toString()).toBe('[1]');
  });

  it('falls back (undefined) on mixed keys, another key order, a missing or extra key, or an undefined value', () => {
    expect(
      compactRows([
        { a: 1, b: 2 },
        { a: 1, c: 2 },
      ]),
    ).toBeUndefined();
    expect(
      compactRows([
        { a: 1, b: 2 },
        { b: 2, a: 1 },
      ]),
    ).toBeUndefined();
    expect(compactRows([{ a: 1, b: 2 }, { a: 1 }])).toBeUndefined();
    expect(compactRows([{ a: 1 }, { a: 1, b: 2 }])).toBeUndefined();
    expect(
      compactRows([
        { a: 1, b: 2 },
        { a: 1, b: undefined },
      ]),
    ).toBeUndefined();
    expect(compactRows([{ a: undefined }])).toBeUndefined();
  });

  it('refuses a key that is not a plain identifier (it becomes a column name in the INSERT)', () => {
    expect(() => compactRows([{ 'a) SELECT 1 --': 1 }])).toThrow(/not a plain ClickHouse identifier/);
  });
});

describe('Db.insert over chDB: both payload paths round-trip', () => {
  let db: Db;
  beforeAll(async () => {
    db = await privateDb(`compact_${newUlid().toLowerCase()}`);
    await db.command(
      `CREATE TABLE t (
         store_id LowCardinality(String), n UInt64, price Decimal(18, 6), tags Array(String),
         note Nullable(String), label String DEFAULT 'dflt'
       ) ENGINE = MergeTree ORDER BY (store_id, n)`,
    );
  });
  afterAll(async () => {
    await db?.close();
  });

  const read = (store: string) =>
    db.query<{ n: string; price: string; tags: string[]; note: string | null; label: string }>(
      'SELECT toString(n) AS n, toString(price) AS price, tags, note, label FROM t WHERE store_id = {s:String} ORDER BY n',
      { s: store },
    );

  it('uniform rows (JSONCompactEachRow under a column list)', async () => {
    const rows = [
      { store_id: 'uni', n: 1, price: '9.99', tags: ['a', 'b'], note: null, label: 'x' },
      {
        store_id: 'uni',
        n: '18446744073709551615',
        price: '0.000001',
        tags: [],
        note: 'it\'s "quoted"\nand é',
        label: 'y',
      },
    ];
    expect(compactRows(rows)).toBeDefined();
    await db.insert('t', rows);
    expect(await read('uni')).toEqual([
      { n: '1', price: '9.99', tags: ['a', 'b'], note: null, label: 'x' },
      { n: '18446744073709551615', price: '0.000001', tags: [], note: 'it\'s "quoted"\nand é', label: 'y' },
    ]);
  });

  it('mixed keys and undefined values (JSONEachRow; a left-out column gets its default)', async () => {
    const rows = [
      { store_id: 'mix', n: 1, price: '1.5', tags: ['z'], note: 'a' },
      { store_id: 'mix', n: 2, price: '2', tags: [], note: null, label: 'given' },
      { store_id: 'mix', n: 3, price: '3.25', tags: [], note: 'c', label: undefined },
    ];
    expect(compactRows(rows)).toBeUndefined();
    await db.insert('t', rows);
    expect(await read('mix')).toEqual([
      { n: '1', price: '1.5', tags: ['z'], note: 'a', label: 'dflt' },
      { n: '2', price: '2', tags: [], note: null, label: 'given' },
      { n: '3', price: '3.25', tags: [], note: 'c', label: 'dflt' },
    ]);
  });

  it('an undefined value alone sends the batch down the JSONEachRow path, values intact', async () => {
    const rows = [
      { store_id: 'und', n: 1, price: '1', tags: [], note: 'kept', label: 'l1' },
      { store_id: 'und', n: 2, price: '2', tags: [], note: undefined, label: 'l2' },
    ];
    expect(compactRows(rows)).toBeUndefined();
    await db.insert('t', rows);
    expect(await read('und')).toEqual([
      { n: '1', price: '1', tags: [], note: 'kept', label: 'l1' },
      { n: '2', price: '2', tags: [], note: null, label: 'l2' },
    ]);
  });
});
