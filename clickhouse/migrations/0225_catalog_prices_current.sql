-- Current price per (price list, variant), deleted entries left out; the product id is taken from the
-- current variant when the source did not give it.
CREATE VIEW IF NOT EXISTS catalog_prices_current AS
SELECT
    p.store_id AS store_id,
    p.price_list_id AS price_list_id,
    p.variant_id AS variant_id,
    if(p.product_id != 0, p.product_id, v.product_id) AS product_id,
    p.currency AS currency,
    p.price AS price,
    p.compare_at_price AS compare_at_price,
    p.updated_at AS updated_at
FROM
(
    SELECT store_id, price_list_id, variant_id, product_id, currency, price, compare_at_price, updated_at
    FROM catalog_prices FINAL
    WHERE is_deleted = 0
) AS p
LEFT JOIN
(
    SELECT store_id, variant_id, any(product_id) AS product_id
    FROM catalog_variants_current
    GROUP BY store_id, variant_id
) AS v ON v.store_id = p.store_id AND v.variant_id = p.variant_id;
