-- Store configuration projection (analysts): one row per write to the compacted topic stores.config.v1,
-- written by the store-config directory in the app process. Latest state per item:
-- `SELECT … FROM store_config FINAL WHERE store_id = {store:String} AND deleted = 0`, or the view
-- store_config_current. `offset` (the Kafka offset; one key always lives in one partition) is the
-- replacing version; `deleted` = 1 marks a tombstone. `payload` is the item as JSON (schemas/config.ts).
CREATE TABLE IF NOT EXISTS store_config
(
    store_id String,
    kind LowCardinality(String),
    item_id String,
    version String COMMENT 'ULID of the write; empty for tombstones',
    written_at DateTime64(3, 'UTC') COMMENT 'when the admin wrote it (tombstones: the record timestamp)',
    deleted UInt8,
    payload String COMMENT 'the item as JSON; empty for tombstones',
    `partition` UInt32,
    `offset` UInt64
)
ENGINE = ReplacingMergeTree(`offset`, deleted)
ORDER BY (store_id, kind, item_id)
SETTINGS non_replicated_deduplication_window = 1000;
