-- Price-list entries from catalog.pricing.v1 (records keyed `store:price:<list>:<variant>`): market and
-- B2B prices per variant. A market without its own platform price list uses price_list_id
-- `market-<code>`. Versioned like catalog_products. product_id 0 = not given by the source.
CREATE TABLE IF NOT EXISTS catalog_prices
(
    store_id LowCardinality(String),
    price_list_id String,
    variant_id UInt64,
    product_id UInt64,
    currency LowCardinality(String),
    price Decimal(18, 4),
    compare_at_price Nullable(Decimal(18, 4)),
    updated_at DateTime64(3, 'UTC'),
    source LowCardinality(String),
    is_deleted UInt8,
    _version UInt128,
    _partition UInt16,
    _offset UInt64
)
ENGINE = ReplacingMergeTree(_version, is_deleted)
ORDER BY (store_id, price_list_id, variant_id)
SETTINGS non_replicated_deduplication_window = 1000;
