-- Per product and location: units on hand across the product's variants there, and whether any variant
-- has stock there (location-based stock rules).
CREATE VIEW IF NOT EXISTS catalog_product_location_availability AS
SELECT
    store_id,
    product_id,
    location_id,
    sum(il.available) AS quantity,
    toUInt8(max(il.available > 0)) AS available
FROM catalog_inventory_by_location AS il
GROUP BY store_id, product_id, location_id;
