-- Product projection of the compacted topic catalog.products.v1 (written by the `catalog_products`
-- processor, services/catalog/projections.ts). One row per record; the newest version per
-- (store_id, product_id) wins: `_version` = updated_at in ms (high 64 bits) then the Kafka offset (low
-- 64 bits), so a late, older update never replaces a newer one. A tombstone (delete) is a row with
-- is_deleted = 1 whose version is the record timestamp. Read the latest state with
-- `FROM catalog_products FINAL WHERE store_id = {store:String} AND is_deleted = 0`, or the view
-- catalog_products_current. Variants are an array of named tuples (see catalog_variants_current);
-- options, images, metafields and category are JSON strings (schemas/catalog.ts). Money in major units.
CREATE TABLE IF NOT EXISTS catalog_products
(
    store_id LowCardinality(String),
    product_id UInt64,
    title String,
    handle String,
    body_html String,
    vendor String,
    product_type String,
    tags Array(String),
    status LowCardinality(String) COMMENT 'active | draft | archived',
    published_at Nullable(DateTime64(3, 'UTC')) COMMENT 'null = not published to the online store',
    created_at Nullable(DateTime64(3, 'UTC')),
    updated_at DateTime64(3, 'UTC') COMMENT 'platform update time (tombstones: delete time)',
    options String COMMENT 'JSON [{name, position, values}]',
    variants Array(Tuple(
        id UInt64,
        title String,
        sku String,
        barcode String,
        price Decimal(18, 4),
        compare_at_price Nullable(Decimal(18, 4)),
        option1 Nullable(String),
        option2 Nullable(String),
        option3 Nullable(String),
        position UInt32,
        available UInt8,
        inventory_quantity Nullable(Int32),
        inventory_item_id UInt64,
        inventory_policy LowCardinality(String),
        inventory_management Nullable(String),
        requires_components UInt8,
        image_id Nullable(UInt64))) COMMENT 'in position order',
    images String COMMENT 'JSON [{id, src, alt, width, height, position, variant_ids}] in position order',
    featured_image String COMMENT 'src of the first image, empty when none',
    metafields String COMMENT 'JSON {namespace: {key: value}}',
    is_gift_card UInt8,
    combined_listing_parent_product_id Nullable(UInt64),
    combined_listing_role Nullable(String),
    has_variants_that_require_components UInt8,
    category String COMMENT 'JSON {id, name, full_name}, empty when none',
    price_min Decimal(18, 4) COMMENT 'lowest variant price (0 without variants)',
    price_max Decimal(18, 4),
    source LowCardinality(String) COMMENT 'webhook | import',
    is_deleted UInt8,
    _version UInt128,
    _partition UInt16,
    _offset UInt64
)
ENGINE = ReplacingMergeTree(_version, is_deleted)
ORDER BY (store_id, product_id)
SETTINGS non_replicated_deduplication_window = 1000, index_granularity = 256;
