-- Trending votes from `search` engagement events sent to POST /beacon (storefronts whose search box
-- reports searches themselves, or searches served elsewhere). Same shape and grain as
-- trending_queries_hourly: (store_id, country, bucket, query), one vote per voter (session, else device,
-- else the event) per hour. `searches`, `zero_results` and `results_sum` stay 0 here: they count
-- searches our API served (requests_raw), so a search both served and reported is counted once.
-- Read both sources through the view `trending_queries`.
CREATE TABLE IF NOT EXISTS trending_search_events_hourly
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
