-- B2B catalogs from catalog.pricing.v1 (records keyed `store:b2b_catalog:<id>`): which company locations
-- a catalog is assigned to, its price list, and the products and collections it includes
-- (all_products = 1: every product). Versioned like catalog_products.
CREATE TABLE IF NOT EXISTS catalog_b2b_catalogs
(
    store_id LowCardinality(String),
    catalog_id String,
    title String,
    status LowCardinality(String) COMMENT 'active | draft | archived',
    company_location_ids Array(UInt64),
    price_list_id Nullable(String),
    all_products UInt8,
    product_ids Array(UInt64),
    collection_ids Array(UInt64),
    updated_at DateTime64(3, 'UTC'),
    source LowCardinality(String),
    is_deleted UInt8,
    _version UInt128,
    _partition UInt16,
    _offset UInt64
)
ENGINE = ReplacingMergeTree(_version, is_deleted)
ORDER BY (store_id, catalog_id)
SETTINGS non_replicated_deduplication_window = 1000;
