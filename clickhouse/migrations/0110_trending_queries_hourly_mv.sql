CREATE MATERIALIZED VIEW IF NOT EXISTS trending_queries_hourly_mv TO trending_queries_hourly AS
SELECT
    store_id,
    geo_country AS country,
    toStartOfHour(ts) AS bucket,
    query,
    uniqExactState(voter) AS voters,
    toUInt64(count()) AS searches,
    toUInt64(countIf(total_results = 0)) AS zero_results,
    toUInt64(sum(ifNull(total_results, 0))) AS results_sum
FROM requests_raw
WHERE kind = 'search' AND query != '' AND status_code < 400 AND device_type != 'bot'
GROUP BY store_id, country, bucket, query;
