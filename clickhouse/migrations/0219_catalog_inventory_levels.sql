-- Inventory levels from catalog.inventory.v1: available quantity of an inventory item at a location.
-- A webhook names the inventory item (inventory_item_id; the variant is found through
-- catalog_variants_current), an import may name the variant directly; 0 = not given. Versioned like
-- catalog_products (updated_at ms then offset); a tombstone (disconnected location) has is_deleted = 1.
CREATE TABLE IF NOT EXISTS catalog_inventory_levels
(
    store_id LowCardinality(String),
    inventory_item_id UInt64,
    variant_id UInt64,
    location_id UInt64,
    available Int32,
    updated_at DateTime64(3, 'UTC'),
    source LowCardinality(String),
    is_deleted UInt8,
    _version UInt128,
    _partition UInt16,
    _offset UInt64
)
ENGINE = ReplacingMergeTree(_version, is_deleted)
ORDER BY (store_id, inventory_item_id, variant_id, location_id)
SETTINGS non_replicated_deduplication_window = 1000;
