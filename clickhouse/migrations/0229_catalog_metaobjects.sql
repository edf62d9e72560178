-- Metaobjects from catalog.metaobjects.v1 (written by the `catalog_metaobjects` processor,
-- streams/catalog/metaobjects.ts): colour/pattern swatches and other structured entries that product
-- metafields reference by GID (gid://shopify/Metaobject/<metaobject_id>). One row per record, versioned
-- like catalog_products: the newest `_version` (updated_at ms, then the Kafka offset) per
-- (store_id, metaobject_id) wins; a tombstone is a row with is_deleted = 1. Read the latest state with
-- `FROM catalog_metaobjects FINAL WHERE store_id = {store:String} AND is_deleted = 0`, or the view
-- catalog_metaobjects_current. fields: JSON key → value (references as GIDs); swatch: JSON
-- {type: color|image, colors, url, alt} derived from the color-pattern fields, empty when none.
CREATE TABLE IF NOT EXISTS catalog_metaobjects
(
    store_id LowCardinality(String),
    metaobject_id UInt64,
    type LowCardinality(String) COMMENT 'definition type, e.g. shopify--color-pattern',
    handle String,
    display_name String,
    fields String COMMENT 'JSON field key → value',
    swatch String COMMENT 'JSON {type, colors, url, alt}, empty when none',
    updated_at DateTime64(3, 'UTC'),
    source LowCardinality(String),
    is_deleted UInt8,
    _version UInt128,
    _partition UInt16,
    _offset UInt64
)
ENGINE = ReplacingMergeTree(_version, is_deleted)
ORDER BY (store_id, metaobject_id)
SETTINGS non_replicated_deduplication_window = 1000;
