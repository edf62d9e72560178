// After `EXCHANGE TABLES`, replay re-creates the live materialized views from their pre-swap DDL
// (rebindLiveViews), so they read and write the swapped-in tables whichever way the server binds views
// (chDB 26.7 follows names; other ClickHouse versions have followed UUIDs). Here a view is made to point
// at the shadow tables, as a UUID binding would leave it after the swap, and rebinding repairs it.
import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { rebindLiveViews } from '../../streams/replay/replay.ts';
import { privateDb } from '../helpers/chdb.ts';

describe('replay: live materialized views after the swap', () => {
  let db: Db;
  beforeAll(async () => {
    db = await privateDb(`views_${newUlid().toLowerCase()}`);
    for (const t of ['src', 'src__shadow'])
      await db.command(`CREATE TABLE ${t} (store_id String, k UInt64) ENGINE = MergeTree ORDER BY (store_id, k)`);
    for (const t of ['dst', 'dst__shadow'])
      await db.command(
        `CREATE TABLE ${t} (store_id String, k UInt64, n UInt64) ENGINE = SummingMergeTree ORDER BY (store_id, k)`,
      );
  });
  afterAll(async () => {
    await db?.close();
  });

  const counts = async () => {
    const [r] = await db.query<{ live: string; shadow: string }>(
      'SELECT (SELECT sum(n) FROM dst) AS live, (SELECT sum(n) FROM dst__shadow) AS shadow',
    );
    return { live: Number(r.live), shadow: Number(r.shadow) };
  };

  it('re-creates a view left bound to the shadow tables so it feeds the live ones, atomically and idempotently', async () => {
    await db.command(
      'CREATE MATERIALIZED VIEW mv TO dst AS SELECT store_id, k, count() AS n FROM src GROUP BY store_id, k',
    );
    const [{ statement }] = await db.query<{ statement: string }>('SHOW CREATE TABLE mv');
    // what a UUID binding would look like after the swap: the view follows the old tables, now shadows
    await db.command(
      statement
        .replace('CREATE MATERIALIZED VIEW', 'CREATE OR REPLACE MATERIALIZED VIEW')
        .replaceAll('.dst', '.dst__shadow')
        .replaceAll('.src', '.src__shadow'),
    );
    await db.command("INSERT INTO src__shadow VALUES ('s', 1)");
    expect(await counts()).toEqual({ live: 0, shadow: 1 });

    await rebindLiveViews(db, new Map([['mv', statement]]));
    await db.command("INSERT INTO src VALUES ('s', 1), ('s', 2)");
    await db.command("INSERT INTO src__shadow VALUES ('s', 3)");
    expect(await counts()).toEqual({ live: 2, shadow: 1 });
    const [after] = await db.query<{ statement: string }>('SHOW CREATE TABLE mv');
    expect(after.statement).toBe(statement);

    // rebinding a view that is already right changes nothing
    await rebindLiveViews(db, new Map([['mv', statement]]));
    await db.command("INSERT INTO src VALUES ('s', 4)");
    expect(await counts()).toEqual({ live: 3, shadow: 1 });
  });

  it('refuses DDL that is not a materialized view', async () => {
    await expect(rebindLiveViews(db, new Map([['mv', 'DROP TABLE dst']]))).rejects.toThrow(/unexpected DDL of mv/);
    expect(await counts()).toEqual({ live: 3, shadow: 1 });
  });
});
