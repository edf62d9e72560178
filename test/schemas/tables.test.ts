// Every field of a topic's Avro value reaches a column of its raw table, or is listed as not stored with a
// reason (schemas/tables.ts). The columns are read from the real engine after the migrations ran.
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { VALUE_SCHEMAS } from '../../schemas/avro/index.ts';
import { RAW_TABLES, type RawTableContract } from '../../schemas/tables.ts';
import { privateDb } from '../helpers/chdb.ts';

describe('raw tables hold every field of their topic', () => {
  let db: Db;
  beforeAll(async () => {
    db = await privateDb(`tables_${newUlid().toLowerCase()}`);
    await migrate(db);
  });
  afterAll(async () => {
    await db?.close();
  });

  async function columnsOf(table: string): Promise<Set<string>> {
    const rows = await db.query<{ name: string }>(
      'SELECT name FROM system.columns WHERE database = currentDatabase() AND table = {table:String}',
      { table },
    );
    return new Set(rows.map((r) => r.name));
  }

  for (const [key, contract] of Object.entries(RAW_TABLES) as [string, RawTableContract][]) {
    it(`${contract.table}: a column for every field of the ${key} topic's value, or a reason`, async () => {
      const fields = (
        VALUE_SCHEMAS[contract.topic as keyof typeof VALUE_SCHEMAS] as { fields: { name: string }[] }
      ).fields.map((f) => f.name);
      const columns = await columnsOf(contract.table);
      expect(columns.size, `${contract.table} exists`).toBeGreaterThan(0);
      const missing: string[] = [];
      for (const field of fields) {
        if (Object.hasOwn(contract.notStored, field)) continue;
        const mapped = contract.columns[field]?.column ?? field;
        for (const column of typeof mapped === 'string' ? [mapped] : mapped)
          if (!columns.has(column)) missing.push(column === field ? field : `${field} → ${column}`);
      }
      expect(missing, `fields of ${key} without a column in ${contract.table}`).toEqual([]);
      // the contract names only fields the value has, and a reason for each one it does not store
      const named = [...Object.keys(contract.columns), ...Object.keys(contract.notStored)];
      expect(named.filter((f) => !fields.includes(f))).toEqual([]);
      for (const [field, reason] of Object.entries(contract.notStored))
        expect(reason.length, field).toBeGreaterThan(10);
    });
  }
});
