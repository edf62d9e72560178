-- Viewed-then-bought: purchases (beacon `purchase` events) whose session had viewed `viewed_id` earlier
-- in the same session, per bought product (viewed_id ≠ bought_id; one count per purchase event and pair;
-- the 20 most recent viewed products of the session count). Written by the `events` processor.
-- Grain: (store_id, viewed_id, bought_id, day).
CREATE TABLE IF NOT EXISTS viewed_then_bought
(
    store_id LowCardinality(String),
    viewed_id UInt64,
    bought_id UInt64,
    day Date,
    purchases UInt64
)
ENGINE = SummingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (store_id, viewed_id, bought_id, day)
TTL day + INTERVAL 365 DAY
SETTINGS non_replicated_deduplication_window = 1000;
