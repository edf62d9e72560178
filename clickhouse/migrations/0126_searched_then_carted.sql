-- Searched-then-carted: sessions that searched `query` and then added `product_id` to the cart in the
-- same session (one count per session, query and product; the 10 most recent queries of the session
-- count). Written by the `events` processor. Grain: (store_id, query, product_id, day). Read with
-- sum(sessions) GROUP BY the columns you need; search's learned relevance reads it next to
-- searched_then_viewed and searched_then_purchased (clickhouse/queries/learned.ts).
CREATE TABLE IF NOT EXISTS searched_then_carted
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
