// The autocomplete feed with real components: trending cells in a private chDB database (the real
// migrations, the real load query), live deltas over real Redis pub/sub on `agg:trending`.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { migrate } from '../../clickhouse/migrate.ts';
import { createLogger } from '../../services/common/logger.ts';
import { TrendingFeed } from '../../services/storefront/autocomplete/feed.ts';
import { AutocompleteIndex } from '../../services/storefront/autocomplete/index.ts';
import { loadTrendingCells } from '../../clickhouse/queries/trending.ts';
import { publishTrending } from '../../streams/trending/notify.ts';
import { privateDb } from '../helpers/chdb.ts';
import { type RedisServer, startRedis } from './harness.ts';

const HOUR = 3_600_000;
let db: Db;
let redis: RedisServer;
let publisher: Redis;
let feed: TrendingFeed;
const index = new AutocompleteIndex({ rebuildDebounceMs: 10, minRegionQueries: 1 });
const STORE = `feed-${process.pid}`;
const hourIso = (ms: number) => new Date(Math.floor(ms / HOUR) * HOUR).toISOString();

async function cell(store: string, country: string, query: string, bucketMs: number, voters: number) {
  await db.command(
    `INSERT INTO trending_queries_hourly (store_id, country, bucket, query, voters, searches)
     SELECT {store:String}, {country:String}, toStartOfHour(toDateTime({bucket:UInt32}, 'UTC')), {query:String}, uniqExactState(v), toUInt64(count())
     FROM (SELECT arrayJoin({voters:Array(String)}) AS v)`,
    {
      store,
      country,
      bucket: Math.floor(bucketMs / 1000),
      query,
      voters: Array.from({ length: voters }, (_, i) => `v${i}`),
    },
  );
}

const suggest = (q: string | null, country: string | null = null) =>
  index.suggest(STORE, { query: q, country, mode: 'per_region' });

async function eventually(fn: () => boolean, ms = 3_000) {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

beforeAll(async () => {
  db = await privateDb(`sf_feed_${process.pid}`);
  await migrate(db);
  redis = await startRedis();
  publisher = new Redis(redis.url);
  const now = Date.now();
  await cell(STORE, 'US', 'winter boots', now, 5);
  await cell(STORE, 'DE', 'regenjacke', now - HOUR, 3);
  await cell(STORE, 'US', 'ancient fad', now - 10 * 24 * HOUR, 50);
  feed = new TrendingFeed({
    index,
    loadCells: (sinceMs) => loadTrendingCells(db, { sinceMs }),
    subscriber: new Redis(redis.url),
    logger: createLogger('feed-test', 'silent'),
    refreshMs: 60_000,
  });
  await feed.start();
});

afterAll(async () => {
  await feed?.stop();
  index.close();
  publisher?.disconnect();
  await redis?.stop();
  await db?.close();
});

describe('trending feed', () => {
  it('loads the window from ClickHouse at start: per-country and store-wide sets, old hours left out', () => {
    expect(suggest(null)).toEqual(['winter boots', 'regenjacke']);
    expect(suggest(null, 'DE')).toEqual(['regenjacke']);
    expect(suggest('anc')).toEqual([]);
    expect(feed.lastLoadAt).toBeGreaterThan(0);
  });

  it('applies agg:trending deltas: the increase over the last known votes, repeats add nothing', async () => {
    const bucket = hourIso(Date.now());
    await publishTrending(publisher, [{ store_id: STORE, country: 'US', query: 'snow boots', bucket, votes: 4 }]);
    await eventually(() => suggest('boo').includes('snow boots'));
    expect(suggest('boo')).toEqual(['winter boots', 'snow boots']);
    // the same cell again, and an older value: no change
    await publishTrending(publisher, [{ store_id: STORE, country: 'US', query: 'snow boots', bucket, votes: 4 }]);
    await publishTrending(publisher, [{ store_id: STORE, country: 'US', query: 'snow boots', bucket, votes: 2 }]);
    await new Promise((r) => setTimeout(r, 100));
    expect(suggest('boo')).toEqual(['winter boots', 'snow boots']);
    // grows past winter boots
    await publishTrending(publisher, [{ store_id: STORE, country: 'US', query: 'snow boots', bucket, votes: 9 }]);
    await eventually(() => suggest('boo')[0] === 'snow boots');
  });

  it('a new store appears from deltas alone; a full reload reconciles with ClickHouse', async () => {
    const other = `${STORE}-b`;
    await publishTrending(publisher, [
      { store_id: other, country: '', query: 'gift card', bucket: hourIso(Date.now()), votes: 2 },
    ]);
    await eventually(() => index.suggest(other, { query: 'gif', country: null, mode: 'global' }).length === 1);
    // ClickHouse does not have that store: the reload drops it; it does have a new query for STORE
    await cell(STORE, 'US', 'wool socks', Date.now(), 7);
    await feed.refresh();
    expect(index.suggest(other, { query: 'gif', country: null, mode: 'global' })).toEqual([]);
    expect(suggest('wool')).toEqual(['wool socks']);
  });
});
