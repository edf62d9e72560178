-- Searches served: per store and UTC day, how many search requests the read API answered (request
-- events of kind 'search'). Grain: (store_id, day). Platform-wide total = sum over all stores.
CREATE TABLE IF NOT EXISTS searches_served_daily
(
    store_id LowCardinality(String),
    day Date,
    searches UInt64
)
ENGINE = SummingMergeTree
ORDER BY (store_id, day)
SETTINGS non_replicated_deduplication_window = 1000;
