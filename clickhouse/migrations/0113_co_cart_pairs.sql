-- Relaxed co-purchase: products added to cart in the same session on the same UTC day (add_to_cart
-- events). Same layout as co_view_pairs (both directions, diagonal = sessions that carted the product,
-- at most 20 recent cart products pair with a new one). Grain: (store_id, product_a, product_b, day).
CREATE TABLE IF NOT EXISTS co_cart_pairs
(
    store_id LowCardinality(String),
    product_a UInt64,
    product_b UInt64,
    day Date,
    sessions UInt64
)
ENGINE = SummingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (store_id, product_a, product_b, day)
TTL day + INTERVAL 180 DAY
SETTINGS non_replicated_deduplication_window = 1000;
