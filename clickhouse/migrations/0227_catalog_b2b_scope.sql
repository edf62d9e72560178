-- The products in each active B2B catalog: its listed products plus the members of its listed
-- collections. Catalogs with all_products = 1 are not expanded here (they scope prices, not products).
CREATE VIEW IF NOT EXISTS catalog_b2b_scope AS
SELECT store_id, catalog_id, product_id
FROM
(
    SELECT store_id, catalog_id, product_id
    FROM catalog_b2b_catalogs FINAL
    ARRAY JOIN product_ids AS product_id
    WHERE is_deleted = 0 AND status = 'active' AND all_products = 0
    UNION ALL
    SELECT c.store_id AS store_id, c.catalog_id AS catalog_id, m.product_id AS product_id
    FROM
    (
        SELECT store_id, catalog_id, collection_id
        FROM catalog_b2b_catalogs FINAL
        ARRAY JOIN collection_ids AS collection_id
        WHERE is_deleted = 0 AND status = 'active' AND all_products = 0
    ) AS c
    INNER JOIN catalog_collection_products AS m ON m.store_id = c.store_id AND m.collection_id = c.collection_id
)
GROUP BY store_id, catalog_id, product_id;
