-- Engagement events accepted by POST /beacon (topic storefront.events.v1), one row per event (the
-- beacon's enriched event, flat), written by the `events` processor after event_id deduplication: a
-- duplicate event_id within the dedup horizon never reaches this table or anything derived from it.
-- Grain: one event. Retention: TTL on event time, set at start-up from EVENTS_RETENTION_DAYS
-- (ALTER … MODIFY TTL); 395 days below is the default. _partition/_offset = the row's log position.
CREATE TABLE IF NOT EXISTS events_raw
(
    store_id LowCardinality(String),
    ts DateTime64(3, 'UTC'),
    event_id String,
    event_type LowCardinality(String),
    session_id String,
    customer_id Nullable(String),
    device_id Nullable(String),
    attribution_token Nullable(String),
    shopping_channel LowCardinality(String),
    product_id Nullable(UInt64),
    variant_id Nullable(UInt64),
    position Nullable(Int32),
    block_id Nullable(String),
    query String DEFAULT '',
    collection_handle Nullable(String),
    content_type LowCardinality(Nullable(String)),
    content_id Nullable(String),
    banner_id Nullable(String),
    rule_id Nullable(String),
    quantity Nullable(Int32),
    price Nullable(Decimal(18, 6)),
    currency LowCardinality(Nullable(String)),
    order_id Nullable(String),
    total_price Nullable(Decimal(18, 6)),
    line_items_json String DEFAULT '[]',
    marketing_source Nullable(String),
    marketing_medium Nullable(String),
    marketing_campaign Nullable(String),
    contextual_data String DEFAULT '{}',
    geo_country LowCardinality(String) DEFAULT '',
    geo_region LowCardinality(String) DEFAULT '',
    geo_city String DEFAULT '',
    device_type LowCardinality(String),
    browser LowCardinality(String) DEFAULT '',
    os LowCardinality(String) DEFAULT '',
    is_bot UInt8 DEFAULT 0,
    timestamp_clamped UInt8 DEFAULT 0,
    received_at DateTime64(3, 'UTC'),
    _partition UInt16,
    _offset UInt64
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (store_id, ts, event_id)
TTL toDateTime(ts) + INTERVAL 395 DAY
SETTINGS non_replicated_deduplication_window = 1000;
