-- Current variants: one row per variant of each current product, in position order. `available` is
-- the platform's flag (untracked, continue-selling or quantity > 0); per-location stock and the
-- inventory-aware flag are in catalog_inventory_by_location / catalog_variant_availability.
CREATE VIEW IF NOT EXISTS catalog_variants_current AS
SELECT
    store_id,
    product_id,
    v.id AS variant_id,
    v.title AS title,
    v.sku AS sku,
    v.barcode AS barcode,
    v.price AS price,
    v.compare_at_price AS compare_at_price,
    v.option1 AS option1,
    v.option2 AS option2,
    v.option3 AS option3,
    v.position AS position,
    v.available AS available,
    v.inventory_quantity AS inventory_quantity,
    v.inventory_item_id AS inventory_item_id,
    v.inventory_policy AS inventory_policy,
    v.inventory_management AS inventory_management,
    v.requires_components AS requires_components,
    v.image_id AS image_id
FROM catalog_products FINAL
ARRAY JOIN variants AS v
WHERE is_deleted = 0;
