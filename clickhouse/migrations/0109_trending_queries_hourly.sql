-- Trending queries: per store, shopper country ('' = unknown), UTC hour and normalized query, the set of
-- voters (session, else device) who searched it — one vote per voter per hour, however often they
-- search — plus raw search count and zero-result searches. Grain: (store_id, country, bucket, query).
-- Read votes with uniqExactMerge(voters); store-wide = merge across countries (a voter counts once).
CREATE TABLE IF NOT EXISTS trending_queries_hourly
(
    store_id LowCardinality(String),
    country LowCardinality(String),
    bucket DateTime('UTC'),
    query String,
    voters AggregateFunction(uniqExact, String),
    searches SimpleAggregateFunction(sum, UInt64),
    zero_results SimpleAggregateFunction(sum, UInt64),
    results_sum SimpleAggregateFunction(sum, UInt64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(bucket)
ORDER BY (store_id, country, bucket, query)
TTL bucket + INTERVAL 90 DAY
SETTINGS non_replicated_deduplication_window = 1000;
