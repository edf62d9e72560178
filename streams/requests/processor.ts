// The `requests` processor: storefront.requests.v1 → requests_raw, and through its materialized views
// searches_served_daily and trending_queries_hourly. After each write it publishes the changed trending
// cells on `agg:trending` (streams/trending/notify.ts) — live mode only, never during a replay.
import { type RequestEvent, RequestEventSchema } from '../../schemas/requests.ts';
import { normalizeOptionalQuery } from '../../schemas/fields.ts';
import type { Decoded, ProcessContext, Processor, ProcessResult } from '../runtime/types.ts';
import { chTime, zodParse } from '../runtime/util.ts';
import { TrendingKeys } from '../trending/notify.ts';

export const requestsProcessor: Processor<RequestEvent> = {
  name: 'requests',
  topic: 'requests',
  // one request event per read API request: chunks gathered over STREAMS_BATCHED_LINGER_MS
  fetch: 'batched',
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
  // request ids are the read API's own (one ULID per request): one repeats only when the emitter's
  // producer retries a send, within seconds. An hour's claims instead of 72 h's: one claim per read request
  // held 1–1.5× the horizon (≈ 100 B each in Redis) would be most of Redis at storefront read rates
  dedupHorizonHours: 1,
  ledger: { table: 'requests_raw', idColumn: 'request_id', timeColumn: 'ts' },
  async process(batch: Decoded<RequestEvent>[], ctx: ProcessContext): Promise<ProcessResult> {
    const rows = batch.map((d) => requestRow(d));
    // the trending cells this chunk may feed (its searches'; the view's filter, 0110, decides which count):
    // the read-back publishes only cells that exist, and an unchanged one is harmless (streams/trending/notify.ts)
    const trending = new TrendingKeys();
    for (const r of rows) trending.add(r.kind, r.store_id, r.geo_country, r.query, r.ts);
    return { writes: [{ table: 'requests_raw', rows }], afterWrite: () => trending.notify(ctx) };
  },
};

function requestRow(d: Decoded<RequestEvent>) {
  const r = d.value;
  const query = normalizeOptionalQuery(r.normalized_query ?? r.query) ?? '';
  return {
    store_id: r.store_id,
    ts: chTime(r.occurred_at),
    request_id: r.request_id,
    kind: r.kind,
    query,
    query_text: r.query,
    search_id: r.search_id,
    session_id: r.session_id ?? '',
    device_id: r.device_id ?? '',
    customer_id: r.customer_id,
    voter: r.session_id ? `s:${r.session_id}` : r.device_id ? `d:${r.device_id}` : `r:${r.request_id}`,
    geo_country: (r.geo_country ?? '').toUpperCase(),
    geo_region: r.geo_region ?? '',
    market: r.market ?? '',
    shopping_channel: r.shopping_channel,
    device_type: r.device_type,
    result_count: r.result_count,
    total_results: r.total_results,
    page: r.page,
    page_size: r.limit,
    sort_order_code: r.sort_order_code,
    result_product_ids: r.result_product_ids,
    collection_handle: r.collection_handle,
    block_id: r.block_id,
    anchor_id: r.anchor_id,
    content_type: r.content_type,
    status_code: r.status_code,
    latency_ms: r.latency_ms,
    cache_hit: r.cache_hit === null ? null : r.cache_hit ? 1 : 0,
    sdk_client: r.sdk_client,
    context_json: r.context_json,
    details_json: r.details_json,
    _partition: d.position.partition,
    _offset: d.position.offset.toString(),
  };
}
