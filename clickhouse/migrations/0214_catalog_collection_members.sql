-- Ordered collection membership, from catalog.collections.v1 records keyed `store:id:members`. One row
-- per version: the whole ordered list (position = index + 1), so a reorder or removal replaces it.
CREATE TABLE IF NOT EXISTS catalog_collection_members
(
    store_id LowCardinality(String),
    collection_id UInt64,
    product_ids Array(UInt64) COMMENT 'merchandised order',
    updated_at DateTime64(3, 'UTC'),
    source LowCardinality(String),
    is_deleted UInt8,
    _version UInt128,
    _partition UInt16,
    _offset UInt64
)
ENGINE = ReplacingMergeTree(_version, is_deleted)
ORDER BY (store_id, collection_id)
SETTINGS non_replicated_deduplication_window = 1000;
