-- Co-purchase pairs: how many orders contained both products (the first 20 distinct products of an
-- order). Both directions; the diagonal (a = b) = orders containing the product. Written by the `orders`
-- processor as signed deltas (edits and cancellations subtract). Grain: (store_id, product_a, product_b,
-- day of the order).
CREATE TABLE IF NOT EXISTS co_purchase_pairs
(
    store_id LowCardinality(String),
    product_a UInt64,
    product_b UInt64,
    day Date,
    orders Int64
)
ENGINE = SummingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (store_id, product_a, product_b, day)
TTL day + INTERVAL 365 DAY
SETTINGS non_replicated_deduplication_window = 1000;
