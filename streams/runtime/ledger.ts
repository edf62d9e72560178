// Keyed state Redis no longer has, read back from the processor's ledger (its raw table).
//
// A processor that keeps state per business id in Redis (the orders processor: each order's last applied
// contribution) treats a missing state as "never applied". That is true of a new id, and false after
// Redis lost its data (FLUSHALL, a fresh instance, a restore without the AOF, an eviction): an order
// re-sent then would be counted again, an edit or a cancellation would subtract nothing. The ledger — the
// raw table where the processor wrote every id it applied, with its log position — still knows. The
// runtime hands each chunk `ctx.ledgerRows(ids)`: the ledger rows of those ids at the latest log position
// *before this chunk*, one query per call, scoped by store and by the ids' exact event times (the raw
// tables' sort keys begin with `store_id, <time>`, so only the granules holding them are read), values as
// server-side parameters.
//
// Rows at or after the chunk's first offset in any of its partitions are left out: they were written by an
// earlier attempt of this very chunk (a crash between its writes and its state save), and counting them
// as applied would skip what that attempt may not have finished writing. Left out, the re-read chunk sees
// the state its first attempt saw, and reproduces the same rows and dedup tokens.
import { assertIdentifier, type Db } from '../../clickhouse/client.ts';
import type { ProcessorLedger } from './claims.ts';

export interface LedgerLookup {
  store_id: string;
  /** the id (the ledger's `idColumn`) */
  id: string;
  /** the id's event time, ISO 8601 UTC with milliseconds: the value every row of the id carries in the
   *  ledger's `timeColumn` (for orders: created_at) */
  time: string;
}

export interface LedgerEntry {
  /** the log position of the latest rows of the id before the chunk */
  partition: number;
  offset: bigint;
  /** the rows written at that position: the ledger's `columns`, as text */
  rows: Record<string, string>[];
}

/** `<store_id>:<id>` → the id's latest rows before the chunk (`before`: its first offset per partition);
 *  ids the ledger does not hold are absent. */
export async function readLedger(
  db: Db,
  table: string,
  spec: ProcessorLedger,
  items: LedgerLookup[],
  before: ReadonlyMap<number, bigint>,
): Promise<Map<string, LedgerEntry>> {
  const out = new Map<string, LedgerEntry>();
  if (items.length === 0) return out;
  if (before.size === 0) throw new Error('ledger lookup: a chunk without a partition');
  const columns = spec.columns ?? [];
  for (const c of [table, spec.idColumn, spec.timeColumn, ...columns]) assertIdentifier(c);
  const times = items.map((i) => Date.parse(i.time));
  if (!times.every(Number.isFinite)) throw new Error('ledger lookup: an id without a valid time');
  const chTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace(/Z$/, '');
  const rows = await db.query<Record<string, string>>(
    `SELECT store_id AS __store, ${spec.idColumn} AS __id, _partition AS __p, toString(_offset) AS __o
       ${columns.map((c) => `, toString(${c}) AS __c_${c}`).join('')}
     FROM ${table}
     WHERE store_id IN {stores:Array(String)} AND ${spec.idColumn} IN {ids:Array(String)}
       AND ${spec.timeColumn} IN {times:Array(DateTime64(3, 'UTC'))}
       AND NOT (${[...before.keys()].map((_, k) => `(_partition = {p${k}:UInt32} AND _offset >= {o${k}:UInt64})`).join(' OR ')})`,
    {
      stores: [...new Set(items.map((i) => i.store_id))],
      ids: [...new Set(items.map((i) => i.id))],
      // the exact times (milliseconds, as the column keeps them): the sort key's second column narrows the
      // read to the granules holding them
      times: [...new Set(times)].map(chTime),
      ...Object.fromEntries(
        [...before].flatMap(([p, o], k) => [
          [`p${k}`, p],
          [`o${k}`, o.toString()],
        ]),
      ),
    },
  );
  const wanted = new Set(items.map((i) => `${i.store_id}:${i.id}`));
  for (const r of rows) {
    const key = `${r.__store}:${r.__id}`;
    if (!wanted.has(key)) continue; // another store's id of the same value
    const partition = Number(r.__p);
    const offset = BigInt(r.__o);
    // (aliases of their own: an alias named like a column would replace it in WHERE)
    const row: Record<string, string> = {};
    for (const c of columns) row[c] = r[`__c_${c}`];
    const prev = out.get(key);
    // unmerged older versions are still in the table: keep only the latest position's rows
    if (!prev || offset > prev.offset || (offset === prev.offset && partition > prev.partition))
      out.set(key, { partition, offset, rows: [row] });
    else if (offset === prev.offset && partition === prev.partition) prev.rows.push(row);
  }
  return out;
}
