CREATE MATERIALIZED VIEW IF NOT EXISTS trending_search_events_hourly_mv TO trending_search_events_hourly AS
SELECT
    store_id,
    geo_country AS country,
    toStartOfHour(ts) AS bucket,
    query,
    -- voters spelled as in requests_raw.voter, so a shopper who searched through the API and reported
    -- the search to /beacon votes once
    uniqExactState(multiIf(session_id != '', concat('s:', session_id), ifNull(device_id, '') != '', concat('d:', assumeNotNull(device_id)), concat('e:', event_id))) AS voters,
    toUInt64(0) AS searches,
    toUInt64(0) AS zero_results,
    toUInt64(0) AS results_sum
FROM events_raw
WHERE event_type = 'search' AND query != '' AND is_bot = 0
GROUP BY store_id, country, bucket, query;
