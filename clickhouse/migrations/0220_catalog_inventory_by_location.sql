-- Stock per current variant and location: levels keyed by inventory item joined through the variant's
-- inventory_item_id, plus levels keyed by variant id. Levels of unknown items are left out.
CREATE VIEW IF NOT EXISTS catalog_inventory_by_location AS
SELECT v.store_id AS store_id, v.product_id AS product_id, v.variant_id AS variant_id, l.location_id AS location_id, l.available AS available, l.updated_at AS updated_at
FROM catalog_variants_current AS v
INNER JOIN
(
    SELECT store_id, inventory_item_id, location_id, available, updated_at
    FROM catalog_inventory_levels FINAL
    WHERE is_deleted = 0 AND inventory_item_id != 0
) AS l ON l.store_id = v.store_id AND l.inventory_item_id = v.inventory_item_id
UNION ALL
SELECT v.store_id AS store_id, v.product_id AS product_id, v.variant_id AS variant_id, l.location_id AS location_id, l.available AS available, l.updated_at AS updated_at
FROM catalog_variants_current AS v
INNER JOIN
(
    SELECT store_id, variant_id, location_id, available, updated_at
    FROM catalog_inventory_levels FINAL
    WHERE is_deleted = 0 AND inventory_item_id = 0 AND variant_id != 0
) AS l ON l.store_id = v.store_id AND l.variant_id = v.variant_id;
