// The `requests` processor: storefront.requests.v1 → requests_raw, and through its materialized views
// searches_served_daily and trending_queries_hourly. After each write it publishes the changed trending
// cells on `agg:trending` (streams/trending/notify.ts) — live mode only, never during a replay.
import { type RequestEvent, RequestEventSchema } from '../../schemas/requests.ts';
import { normalizeQuery } from '../../schemas/requests.ts';
import type { Decoded, ProcessContext, Processor, ProcessResult } from '../runtime/types.ts';
import { chTime, zodParse } from '../runtime/util.ts';
import { publishTrending, type TrendingDelta } from '../trending/notify.ts';

export const requestsProcessor: Processor<RequestEvent> = {
  name: 'requests',
  topic: 'requests',
  tables: {
    written: ['requests_raw'],
    views: [
      { view: 'searches_served_daily_mv', target: 'searches_served_daily' },
      { view: 'trending_queries_hourly_mv', target: 'trending_queries_hourly' },
    ],
    compare: {
      requests_raw: { day: 'ts', measure: 'count()' },
      searches_served_daily: { day: 'day', measure: 'sum(searches)' },
      trending_queries_hourly: { day: 'bucket', measure: 'sum(searches)' },
    },
  },
  parse: (value) => zodParse(RequestEventSchema, value),
  dedupKey: (r) => `${r.store_id}:${r.request_id}`,
  async process(batch: Decoded<RequestEvent>[], ctx: ProcessContext): Promise<ProcessResult> {
    const rows = batch.map((d) => requestRow(d));
    const trendingKeys = new Map<string, { store_id: string; country: string; query: string; bucket: string }>();
    for (const r of rows) {
      if (r.kind !== 'search' || r.query === '' || r.status_code >= 400 || r.device_type === 'bot') continue;
      const bucket = `${r.ts.slice(0, 13)}:00:00`;
      trendingKeys.set(`${r.store_id}|${r.geo_country}|${r.query}|${bucket}`, { store_id: r.store_id, country: r.geo_country, query: r.query, bucket });
    }
    return {
      writes: [{ table: 'requests_raw', rows }],
      afterWrite: async () => {
        if (ctx.replay || trendingKeys.size === 0) return;
        try {
          await notify();
        } catch (err) {
          // the write is committed regardless; subscribers reconcile on their periodic reload
          ctx.logger.warn({ err: (err as Error).message }, 'trending notification failed');
        }
      },
    };

    async function notify() {
      const keys = [...trendingKeys.values()];
      const current = await ctx.db.query<{ store_id: string; country: string; query: string; bucket_text: string; votes: string | number }>(
        `SELECT store_id, country, query, toString(bucket) AS bucket_text, uniqExactMerge(voters) AS votes
         FROM ${ctx.table('trending_queries_hourly')}
         WHERE store_id IN {stores:Array(String)} AND bucket IN {buckets:Array(DateTime('UTC'))} AND query IN {queries:Array(String)}
         GROUP BY store_id, country, query, bucket_text`,
        {
          stores: [...new Set(keys.map((k) => k.store_id))],
          buckets: [...new Set(keys.map((k) => k.bucket))],
          queries: [...new Set(keys.map((k) => k.query))],
        },
      );
      const deltas: TrendingDelta[] = [];
      for (const c of current) {
        if (!trendingKeys.has(`${c.store_id}|${c.country}|${c.query}|${c.bucket_text}`)) continue;
        deltas.push({ store_id: c.store_id, country: c.country, query: c.query, bucket: `${c.bucket_text.replace(' ', 'T')}.000Z`, votes: Number(c.votes) });
      }
      await publishTrending(ctx.redis, deltas);
    }
  },
};

function requestRow(d: Decoded<RequestEvent>) {
  const r = d.value;
  const query = normalizeQuery(r.normalized_query ?? r.query) ?? '';
  return {
    store_id: r.store_id,
    ts: chTime(r.occurred_at),
    request_id: r.request_id,
    kind: r.kind,
    query,
    session_id: r.session_id ?? '',
    device_id: r.device_id ?? '',
    customer_id: r.customer_id,
    voter: r.session_id ? `s:${r.session_id}` : r.device_id ? `d:${r.device_id}` : `r:${r.request_id}`,
    geo_country: (r.geo_country ?? '').toUpperCase(),
    market: r.market ?? '',
    device_type: r.device_type,
    result_count: r.result_count,
    total_results: r.total_results,
    result_product_ids: r.result_product_ids,
    collection_handle: r.collection_handle,
    block_id: r.block_id,
    anchor_id: r.anchor_id,
    status_code: r.status_code,
    latency_ms: r.latency_ms,
    cache_hit: r.cache_hit === null ? null : r.cache_hit ? 1 : 0,
    _partition: d.position.partition,
    _offset: d.position.offset.toString(),
  };
}
