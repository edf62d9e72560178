-- Orders from commerce-platform webhooks and imports (topic commerce.orders.v1), one row per order line,
-- written by the `orders` processor. An order written again (edit, cancellation) gets new rows with a
-- higher _version (its log offset); lines that disappeared and every line of a cancelled order are
-- written with is_deleted = 1. Read the current state with FINAL. Grain: one order line.
-- Money in major units (Decimal). Retention from EVENTS_RETENTION_DAYS.
CREATE TABLE IF NOT EXISTS orders_raw
(
    store_id LowCardinality(String),
    ts DateTime64(3, 'UTC'),
    order_id String,
    line_no UInt16,
    product_id UInt64,
    variant_id Nullable(UInt64),
    quantity UInt32,
    price Decimal(18, 6),
    line_total Decimal(18, 6),
    currency LowCardinality(String),
    customer_id Nullable(String),
    session_id String DEFAULT '',
    cancelled UInt8 DEFAULT 0,
    source LowCardinality(String) DEFAULT '',
    is_deleted UInt8 DEFAULT 0,
    _version UInt64,
    _partition UInt16,
    _offset UInt64
)
ENGINE = ReplacingMergeTree(_version, is_deleted)
PARTITION BY toYYYYMM(ts)
ORDER BY (store_id, ts, order_id, line_no)
TTL toDateTime(ts) + INTERVAL 395 DAY
SETTINGS non_replicated_deduplication_window = 1000;
