-- Whether each current variant can be sold. With inventory levels: untracked, continue-selling, or a
-- positive total across locations; without any level: the platform's own flag on the product record.
CREATE VIEW IF NOT EXISTS catalog_variant_availability AS
SELECT
    v.store_id AS store_id,
    v.product_id AS product_id,
    v.variant_id AS variant_id,
    toUInt8(if(lv.levels > 0, v.inventory_management IS NULL OR v.inventory_policy = 'continue' OR lv.total > 0, v.available = 1)) AS available,
    if(lv.levels > 0, lv.total, ifNull(v.inventory_quantity, 0)) AS quantity,
    lv.levels AS locations
FROM catalog_variants_current AS v
LEFT JOIN
(
    SELECT store_id, variant_id, count() AS levels, sum(available) AS total
    FROM catalog_inventory_by_location
    GROUP BY store_id, variant_id
) AS lv ON lv.store_id = v.store_id AND lv.variant_id = v.variant_id;
