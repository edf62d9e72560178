// The cells a chunk offers the trending read-back (streams/trending/notify.ts TrendingKeys: the searches
// with a query) cover every cell the two trending views write: a grid of request events of every kind and
// engagement events of every type — with and without a query, answered or failed, bots and shoppers —
// inserted into requests_raw and events_raw on the real migrations, where the views decide what counts.
// Every cell in `trending_queries` is one the processors offered, and the rows that cannot vote (most of a
// chunk: views, carts, browse and blocks requests) are not offered, so their chunks read nothing back.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { EVENT_TYPES } from '../../schemas/events.ts';
import { REQUEST_KINDS } from '../../schemas/requests.ts';
import { TrendingKeys } from '../../streams/trending/notify.ts';
import { privateDb } from '../helpers/chdb.ts';

let db: Db;
const STORE = 'st_trending_offered';
const TS = '2026-11-30 10:15:00.000';

beforeAll(async () => {
  db = await privateDb(`trending_offered_${process.pid}`);
  await migrate(db as never);
});

describe('trending cells offered for read-back', () => {
  it('cover every cell the views write, and leave out the rows that cannot vote', async () => {
    const offered = new TrendingKeys();
    const requests: object[] = [];
    const events: object[] = [];
    let n = 0;
    for (const query of ['', 'linen dress'])
      for (const status of [200, 404])
        for (const device of ['desktop', 'bot'] as const)
          for (const country of ['US', ''])
            for (const kind of REQUEST_KINDS) {
              const id = `r${n++}`;
              const q = `${query}${query && ` ${kind}`}`;
              requests.push({
                store_id: STORE,
                ts: TS,
                request_id: id,
                kind,
                query: q,
                session_id: `s${n}`,
                voter: `s:s${n}`,
                geo_country: country,
                device_type: device,
                result_count: 0,
                total_results: status === 200 ? 3 : 0,
                result_product_ids: [],
                status_code: status,
                latency_ms: 1,
                _partition: 0,
                _offset: String(n),
              });
              offered.add(kind, STORE, country, q, TS);
            }
    for (const query of ['', 'wool coat'])
      for (const bot of [0, 1])
        for (const country of ['DE', ''])
          for (const type of EVENT_TYPES) {
            const id = `e${n++}`;
            const q = `${query}${query && ` ${type}`}`;
            events.push({
              store_id: STORE,
              ts: TS,
              event_id: id,
              event_type: type,
              session_id: `s${n}`,
              query: q,
              geo_country: country,
              is_bot: bot,
              _partition: 0,
              _offset: String(n),
            });
            offered.add(type, STORE, country, q, TS);
          }
    await db.insert('requests_raw', requests);
    await db.insert('events_raw', events);

    const written = await db.query<{ country: string; query: string; bucket: string }>(
      `SELECT DISTINCT country, query, formatDateTime(bucket, '%Y-%m-%dT%H:00:00.000Z') AS bucket
       FROM trending_queries WHERE store_id = {s:String} ORDER BY country, query`,
      { s: STORE },
    );
    const cells = new Set(offered.cells().map((k) => `${k.store_id}|${k.country}|${k.query}|${k.bucket}`));
    // the views counted searches of both sources (the grid's answered, non-bot searches with a query)
    expect(written.map((w) => w.query).sort()).toEqual([
      'linen dress search',
      'linen dress search',
      'wool coat search',
      'wool coat search',
    ]);
    for (const w of written)
      expect(cells, `${w.country} ${w.query}`).toContain(`${STORE}|${w.country}|${w.query}|${w.bucket}`);
    // and only searches with a query were offered: 2 countries × each source's search rows with a query
    expect(offered.size).toBe(4);
    expect(requests.length + events.length).toBeGreaterThan(100);
  });
});
