-- A product is available when any of its variants is (catalog_variant_availability); per location in
-- catalog_product_location_availability. Products without variants have no row here (unavailable).
CREATE VIEW IF NOT EXISTS catalog_product_availability AS
SELECT
    store_id,
    product_id,
    max(va.available) AS available,
    countIf(va.available = 1) AS available_variants,
    count() AS variants
FROM catalog_variant_availability AS va
GROUP BY store_id, product_id;
