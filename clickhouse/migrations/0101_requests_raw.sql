-- Request events emitted by the read API (topic storefront.requests.v1), one row per storefront API
-- request, written by the `requests` processor; a repeated request_id within the dedup horizon is
-- dropped first. Grain: one request. `query` is the normalized query (lower case, trimmed, whitespace
-- collapsed) or ''. `voter` casts trending votes: the session id, else the device id, else the request
-- id. Retention from EVENTS_RETENTION_DAYS.
CREATE TABLE IF NOT EXISTS requests_raw
(
    store_id LowCardinality(String),
    ts DateTime64(3, 'UTC'),
    request_id String,
    kind LowCardinality(String),
    query String DEFAULT '',
    session_id String DEFAULT '',
    device_id String DEFAULT '',
    customer_id Nullable(String),
    voter String,
    geo_country LowCardinality(String) DEFAULT '',
    market LowCardinality(String) DEFAULT '',
    device_type LowCardinality(String),
    result_count UInt32,
    total_results Nullable(UInt64),
    result_product_ids Array(String),
    collection_handle Nullable(String),
    block_id Nullable(String),
    anchor_id Nullable(String),
    status_code UInt16,
    latency_ms Float32,
    cache_hit Nullable(UInt8),
    _partition UInt16,
    _offset UInt64
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (store_id, ts, request_id)
TTL toDateTime(ts) + INTERVAL 395 DAY
SETTINGS non_replicated_deduplication_window = 1000;
