-- Product popularity from engagement: per store, UTC day and product, how many views, clicks,
-- add-to-carts and impressions. Grain: (store_id, day, product_id). Filled by the materialized view
-- product_daily_engagement_mv from events_raw (already event_id-deduplicated). Read with sum(…) GROUP BY.
CREATE TABLE IF NOT EXISTS product_daily_engagement
(
    store_id LowCardinality(String),
    day Date,
    product_id UInt64,
    views UInt64,
    clicks UInt64,
    add_to_carts UInt64,
    impressions UInt64
)
ENGINE = SummingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (store_id, day, product_id)
SETTINGS non_replicated_deduplication_window = 1000;
