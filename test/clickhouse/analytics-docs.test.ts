// Every example query in docs/analytics.md runs against the migrated schema (a private chDB database
// with all migrations applied): a renamed column or table in a migration breaks this test, not an
// analyst's afternoon. Parameters ({store:String}, …) are bound server-side as the docs show them.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { privateDb } from '../helpers/chdb.ts';

const DOC = path.resolve(import.meta.dirname, '../../docs/analytics.md');

/** the SQL blocks of the doc, split into statements */
function examples(): string[] {
  const text = readFileSync(DOC, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/```sql\n([\s\S]*?)```/g)) {
    const body = m[1]
      .split('\n')
      .map((l) => l.replace(/--.*$/, ''))
      .join('\n');
    for (const stmt of body.split(/;\s*(?:\n|$)/)) if (stmt.trim()) out.push(stmt.trim());
  }
  return out;
}

describe('docs/analytics.md example queries', () => {
  let db: Db;
  beforeAll(async () => {
    db = await privateDb(`docs_${newUlid().toLowerCase()}`);
    await migrate(db);
  });
  afterAll(async () => {
    await db?.close();
  });

  it('covers the 01xx and 02xx tables', () => {
    const all = examples().join('\n');
    for (const t of [
      'events_raw',
      'product_daily_sales',
      'searches_served_daily',
      'store_config_current',
      'catalog_products_current',
      'catalog_collection_products',
      'catalog_prices_current',
      'catalog_b2b_scope',
    ]) {
      expect(all, t).toContain(t);
    }
  });

  it('every example runs on an empty store', async () => {
    const failures: string[] = [];
    const list = examples();
    expect(list.length).toBeGreaterThan(15);
    for (const sql of list) {
      try {
        const rows = await db.query(sql, { store: 'docs_store' });
        expect(Array.isArray(rows)).toBe(true);
      } catch (err) {
        failures.push(`${sql.slice(0, 120)}\n  → ${(err as Error).message.split('\n')[0]}`);
      }
    }
    expect(failures).toEqual([]);
  });
});
