-- Collection projection of catalog.collections.v1 records keyed `store:id` (metadata; membership is
-- catalog_collection_members). Versioned like catalog_products: `_version` = updated_at ms then offset,
-- is_deleted = 1 for a tombstone. `default_sort_order` comes from the collection metafield
-- default_sort_order (our sort order code; null = the store default).
CREATE TABLE IF NOT EXISTS catalog_collections
(
    store_id LowCardinality(String),
    collection_id UInt64,
    handle String,
    title String,
    body_html String,
    collection_type LowCardinality(String) COMMENT 'custom | smart',
    sort_order LowCardinality(String) COMMENT 'platform sort order (manual, best-selling, …)',
    default_sort_order Nullable(String),
    published UInt8,
    published_at Nullable(DateTime64(3, 'UTC')),
    image String COMMENT 'JSON {src, alt, width, height}, empty when none',
    metafields String COMMENT 'JSON {namespace: {key: value}}',
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
