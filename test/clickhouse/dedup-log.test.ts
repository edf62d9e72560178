// Dangling deduplication records (docs/streams.md, "Known limitation"): the parser of the log and of part
// names, and a real chDB table whose records all have their parts — before and after a merge.
import { appendFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { danglingParts, parsePartName, scanLostBlocks } from '../../clickhouse/dedup-log.ts';
import { privateDb } from '../helpers/chdb.ts';

describe('deduplication log', () => {
  it('parses part names with and without a mutation version', () => {
    expect(parsePartName('202611_4_9_1')).toEqual({ partition: '202611', min: 4, max: 9 });
    expect(parsePartName('all_12_12_0_15')).toEqual({ partition: 'all', min: 12, max: 12 });
    expect(parsePartName('tmp_insert')).toBeUndefined();
  });

  it('reports added parts that no active part covers and no drop removed', () => {
    const log = [
      '1\t202611_1_1_0\ta',
      '1\t202611_2_2_0\tb',
      '1\t202611_3_3_0\tc',
      '1\t202610_7_7_0\td',
      '2\t202610_7_7_0\td',
      '',
    ].join('\n');
    // 1 and 2 merged into 1_2_1; 3 is gone (the crash case); 7 was dropped on purpose
    expect(danglingParts([log], ['202611_1_2_1'])).toEqual(['202611_3_3_0']);
    // a later file continues the earlier one
    expect(danglingParts([log, '1\t202611_4_4_0\te\n'], ['202611_1_4_2'])).toEqual([]);
    // same block range in another partition does not cover
    expect(danglingParts(['1\t202611_5_5_0\tf\n'], ['202612_5_5_0'])).toEqual(['202611_5_5_0']);
  });

  describe('on a real table', () => {
    // where privateDb keeps this worker's chDB directory (test/helpers/chdb.ts)
    const chdbPath = path.join(os.tmpdir(), `sd-chdb-${process.pid}`);
    let db: Db;
    beforeAll(async () => {
      db = await privateDb('dedup_log_test');
      await db.command(
        'CREATE TABLE IF NOT EXISTS s (k UInt8, v UInt64) ENGINE = SummingMergeTree PARTITION BY k ORDER BY k SETTINGS non_replicated_deduplication_window = 100',
      );
    });
    afterAll(async () => {
      await db?.command('DROP TABLE IF EXISTS s SYNC');
      await db?.close();
    });

    it('finds no dangling record after token inserts, a repeated token and a merge', async () => {
      for (let i = 0; i < 4; i++)
        await db.insert(
          's',
          [
            { k: 1, v: 1 },
            { k: 2, v: 1 },
          ],
          { dedupToken: `t-${i}` },
        );
      await db.insert(
        's',
        [
          { k: 1, v: 1 },
          { k: 2, v: 1 },
        ],
        { dedupToken: 't-0' },
      ); // dropped as a duplicate
      expect(await db.query('SELECT k, sum(v) AS v FROM s GROUP BY k ORDER BY k')).toEqual([
        { k: 1, v: 4 },
        { k: 2, v: 4 },
      ]);
      expect(scanLostBlocks(chdbPath, 'dedup_log_test').get('s')).toBeUndefined();
      await db.command('OPTIMIZE TABLE s FINAL');
      expect(scanLostBlocks(chdbPath, 'dedup_log_test').get('s')).toBeUndefined();
    });

    it('reads the log where the table keeps it: a record whose part never became active is reported', async () => {
      // what a kill between the dedup record and the part commit leaves behind, written the way the
      // engine writes it (the record only: the part does not exist)
      const [{ paths }] = await db.query<{ paths: string[] }>(
        "SELECT data_paths AS paths FROM system.tables WHERE database = currentDatabase() AND name = 's'",
      );
      const dir = path.join(paths[0], 'deduplication_logs');
      const newest = readdirSync(dir)
        .sort((a, b) => Number(a.match(/\d+/)?.[0]) - Number(b.match(/\d+/)?.[0]))
        .at(-1) as string;
      appendFileSync(path.join(dir, newest), '1\t1_999_999_0\t1_0_0\n');
      expect(scanLostBlocks(chdbPath, 'dedup_log_test').get('s')).toEqual(['1_999_999_0']);
    });
  });
});
