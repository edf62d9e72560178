CREATE MATERIALIZED VIEW IF NOT EXISTS trending_search_events_hourly_mv TO trending_search_events_hourly AS
SELECT
    store_id,
    geo_country AS country,
    toStartOfHour(ts) AS bucket,
    query,
    uniqExactState(if(session_id != '', session_id, ifNull(device_id, event_id))) AS voters,
    toUInt64(0) AS searches,
    toUInt64(0) AS zero_results,
    toUInt64(0) AS results_sum
FROM events_raw
WHERE event_type = 'search' AND query != '' AND is_bot = 0
GROUP BY store_id, country, bucket, query;
