-- Searched-then-purchased: purchases (beacon `purchase` events) whose session had searched `query`
-- earlier in the same session, per bought product (one count per purchase event, query and product; the
-- 10 most recent queries of the session count). Written by the `events` processor. Grain: (store_id,
-- query, product_id, day).
CREATE TABLE IF NOT EXISTS searched_then_purchased
(
    store_id LowCardinality(String),
    query String,
    product_id UInt64,
    day Date,
    purchases UInt64
)
ENGINE = SummingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (store_id, query, product_id, day)
TTL day + INTERVAL 365 DAY
SETTINGS non_replicated_deduplication_window = 1000;
