-- Beacon events dropped by validation (topic storefront.events.rejected.v1), with the reason, so
-- integrators can see why events did not count. Grain: one rejected event. 30-day TTL.
CREATE TABLE IF NOT EXISTS rejected_events_raw
(
    store_id LowCardinality(String),
    ts DateTime64(3, 'UTC'),
    code LowCardinality(String),
    reason String,
    path String,
    event_type String DEFAULT '',
    raw_json String,
    _partition UInt16,
    _offset UInt64
)
ENGINE = MergeTree
PARTITION BY toYYYYMMDD(ts)
ORDER BY (store_id, ts)
TTL toDateTime(ts) + INTERVAL 30 DAY
SETTINGS non_replicated_deduplication_window = 1000;
