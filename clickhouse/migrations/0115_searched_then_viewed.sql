-- Searched-then-viewed: sessions that searched `query` and then viewed or clicked `product_id` in the
-- same session (one count per session, query and product). Grain: (store_id, query, product_id, day).
CREATE TABLE IF NOT EXISTS searched_then_viewed
(
    store_id LowCardinality(String),
    query String,
    product_id UInt64,
    day Date,
    sessions UInt64
)
ENGINE = SummingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (store_id, query, product_id, day)
TTL day + INTERVAL 180 DAY
SETTINGS non_replicated_deduplication_window = 1000;
