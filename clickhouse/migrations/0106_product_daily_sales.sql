-- Product sales: per store, UTC day of the order and product: units sold, orders containing it, revenue
-- (major units). Written by the `orders` processor as signed deltas: an edited order adds its new lines
-- and subtracts its old ones, a cancelled order subtracts everything it added. Grain: (store_id, day,
-- product_id); read with sum(…) GROUP BY. Best sellers = sum(revenue) over the last 7 days.
CREATE TABLE IF NOT EXISTS product_daily_sales
(
    store_id LowCardinality(String),
    day Date,
    product_id UInt64,
    units Int64,
    orders Int64,
    revenue Decimal(38, 6)
)
ENGINE = SummingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (store_id, day, product_id)
SETTINGS non_replicated_deduplication_window = 1000;
