-- Visual features of product, article and page images (image search; content search's image signal).
-- Writer: the `images_products` and `images_content` processors (streams/images), which fetch each image
-- URL of a changed catalog record and describe it (services/common/image-features.ts). Grain: one row
-- per item version (store, item_type, item_id); image_* arrays are parallel, one entry per image in the
-- record's order. image_status is `ok` or why an image has no features (timeout, http_404, too_large,
-- unsupported_format, truncated, …; its vector is then empty). ReplacingMergeTree: read with FINAL and
-- is_deleted = 0 for the current features. `model` names the feature provider (local-v1: 192 floats).
CREATE TABLE IF NOT EXISTS image_features
(
    store_id LowCardinality(String),
    item_type LowCardinality(String) COMMENT 'product | article | page',
    item_id UInt64,
    model LowCardinality(String),
    image_srcs Array(String),
    image_status Array(LowCardinality(String)),
    image_hashes Array(String) COMMENT '64-bit dHash, 16 hex digits',
    image_vectors Array(Array(Float32)),
    updated_at DateTime64(3, 'UTC') COMMENT 'updated_at of the catalog record described',
    computed_at DateTime64(3, 'UTC'),
    is_deleted UInt8,
    _version UInt128,
    _partition UInt16,
    _offset UInt64
)
ENGINE = ReplacingMergeTree(_version, is_deleted)
ORDER BY (store_id, item_type, item_id)
SETTINGS non_replicated_deduplication_window = 1000;
