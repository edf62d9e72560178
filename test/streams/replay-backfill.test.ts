import { newUlid } from '../../services/common/ids.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../clickhouse/client.ts';
import { loadMigrations } from '../../clickhouse/migrate.ts';
import { requestEvent } from '../../schemas/requests.ts';
import { runReplay } from '../../streams/replay/replay.ts';
import {
  enrichedEvent,
  type Infra,
  order,
  produce,
  type StreamsHarness,
  startStreamsHarness,
  waitCaughtUp,
} from './helpers.ts';

const STORE = 'backfill';
const AT = '2026-11-20T10:00:00.000Z';

/** the columns each migration added, as the migration files name them */
const ADDED = {
  events_raw: [
    'marketing_term',
    'marketing_content',
    'content_handle',
    'banner_type',
    'banner_mode',
    'web_position',
    'mobile_position',
  ],
  requests_raw: [
    'query_text',
    'search_id',
    'geo_region',
    'shopping_channel',
    'page',
    'page_size',
    'sort_order_code',
    'content_type',
    'sdk_client',
    'context_json',
    'details_json',
  ],
  orders_raw: ['updated_at', 'total_price'],
};

describe('replay backfills the columns added after the data was logged', () => {
  let harness: StreamsHarness;
  let infra: Infra;
  let db: Db;

  beforeAll(async () => {
    harness = await startStreamsHarness('backfill', { processors: 'events,requests,orders' });
    ({ infra, db } = harness);
  });
  afterAll(() => harness?.stop());

  it('events, requests and orders: the new columns hold the logged values after a replay', {
    timeout: 180_000,
  }, async () => {
    const banner = enrichedEvent({
      event_type: 'banner_impression',
      store_id: STORE,
      session_id: 'sess-1',
      timestamp: AT,
      banner_id: '01JBANNER00000000000000000',
      banner_type: 'promo-tile',
      banner_mode: 'inject',
      web_position: 3,
      mobile_position: 1,
      marketing_term: 'boots',
      marketing_content: 'hero',
    });
    const content = enrichedEvent({
      event_type: 'content_view',
      store_id: STORE,
      session_id: 'sess-1',
      timestamp: AT,
      content_type: 'article',
      content_id: '77',
      content_handle: 'winter-guide',
    });
    const request = requestEvent({
      request_id: newUlid(),
      store_id: STORE,
      kind: 'search',
      occurred_at: AT,
      device_type: 'mobile',
      status_code: 200,
      latency_ms: 4.5,
      session_id: 'sess-1',
      query: '  Snow Boots ',
      normalized_query: 'snow boots',
      search_id: 'srch-1',
      geo_country: 'DE',
      geo_region: 'BE',
      shopping_channel: 'app',
      page: 2,
      limit: 24,
      sort_order_code: 'price-asc',
      content_type: null,
      sdk_client: 'sdk/1.2.3',
      context_json: '{"geo":{"country":"DE"}}',
      details_json: '{"applied_rules":["r1"]}',
      result_product_ids: ['1'],
    });
    const placed = order({
      store_id: STORE,
      order_id: 'o-1',
      created_at: AT,
      updated_at: '2026-11-20T11:00:00.000Z',
      total_price: '59.90',
      line_items: [{ product_id: '1', variant_id: null, quantity: 2, price: '24.95' }],
    });
    await produce(infra, 'events', [
      { key: `${STORE}:sess-1`, value: banner },
      { key: `${STORE}:sess-1`, value: content },
    ]);
    await produce(infra, 'requests', [{ key: `${STORE}:sess-1`, value: request }]);
    await produce(infra, 'orders', [{ key: `${STORE}:o-1`, value: placed }]);
    await waitCaughtUp(
      infra.kafka,
      (['events', 'requests', 'orders'] as const).map((k) => ({ group: `streams.${k}`, topic: infra.topic(k) })),
      60_000,
    );

    // the rows as they were before the migrations: the columns did not exist, so they read the defaults
    const migrations = loadMigrations().filter((m) => m.version >= 123 && m.version <= 125);
    expect(migrations.map((m) => m.file)).toEqual([
      '0123_events_raw_columns.sql',
      '0124_requests_raw_columns.sql',
      '0125_orders_raw_columns.sql',
    ]);
    for (const [table, columns] of Object.entries(ADDED))
      await db.command(`ALTER TABLE ${table} ${columns.map((c) => `DROP COLUMN \`${c}\``).join(', ')}`);
    for (const m of migrations) for (const statement of m.statements) await db.command(statement);

    const read = async () => {
      const events = await db.query<Record<string, unknown>>(
        `SELECT event_type, marketing_term, marketing_content, content_handle, banner_type, banner_mode, web_position, mobile_position
         FROM events_raw WHERE store_id = {store:String} ORDER BY event_type`,
        { store: STORE },
      );
      const requests = await db.query<Record<string, unknown>>(
        `SELECT query, query_text, search_id, geo_region, shopping_channel, page, page_size, sort_order_code, content_type,
                sdk_client, context_json, details_json
         FROM requests_raw WHERE store_id = {store:String}`,
        { store: STORE },
      );
      const orders = await db.query<Record<string, unknown>>(
        `SELECT toString(updated_at) AS updated_at, toString(total_price) AS total_price
         FROM orders_raw FINAL WHERE store_id = {store:String}`,
        { store: STORE },
      );
      return { events, requests, orders };
    };

    const before = await read();
    expect(before.events).toEqual([
      {
        event_type: 'banner_impression',
        marketing_term: null,
        marketing_content: null,
        content_handle: null,
        banner_type: null,
        banner_mode: null,
        web_position: null,
        mobile_position: null,
      },
      {
        event_type: 'content_view',
        marketing_term: null,
        marketing_content: null,
        content_handle: null,
        banner_type: null,
        banner_mode: null,
        web_position: null,
        mobile_position: null,
      },
    ]);
    expect(before.requests).toEqual([
      {
        query: 'snow boots',
        query_text: null,
        search_id: null,
        geo_region: '',
        shopping_channel: null,
        page: null,
        page_size: null,
        sort_order_code: null,
        content_type: null,
        sdk_client: null,
        context_json: '{}',
        details_json: null,
      },
    ]);
    expect(before.orders).toEqual([{ updated_at: null, total_price: null }]);

    const env = harness.replayEnv();
    for (const processor of ['events', 'requests', 'orders']) {
      const result = await runReplay(env, { processor, from: { kind: 'earliest' } }, () => {});
      expect({ processor, swapped: result.swapped, differences: result.differences }).toEqual({
        processor,
        swapped: true,
        differences: 0,
      });
    }

    const after = await read();
    expect(after.events).toEqual([
      {
        event_type: 'banner_impression',
        marketing_term: 'boots',
        marketing_content: 'hero',
        content_handle: null,
        banner_type: 'promo-tile',
        banner_mode: 'inject',
        web_position: 3,
        mobile_position: 1,
      },
      {
        event_type: 'content_view',
        marketing_term: null,
        marketing_content: null,
        content_handle: 'winter-guide',
        banner_type: null,
        banner_mode: null,
        web_position: null,
        mobile_position: null,
      },
    ]);
    expect(after.requests).toEqual([
      {
        query: 'snow boots',
        query_text: '  Snow Boots ',
        search_id: 'srch-1',
        geo_region: 'BE',
        shopping_channel: 'app',
        page: 2,
        page_size: 24,
        sort_order_code: 'price-asc',
        content_type: null,
        sdk_client: 'sdk/1.2.3',
        context_json: '{"geo":{"country":"DE"}}',
        details_json: '{"applied_rules":["r1"]}',
      },
    ]);
    expect(after.orders).toEqual([{ updated_at: '2026-11-20 11:00:00.000', total_price: '59.9' }]);
  });
});
