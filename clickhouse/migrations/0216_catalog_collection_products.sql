-- Collection membership with positions: one row per (collection, product), position 1-based in the
-- collection's merchandised order. Only collections whose metadata is current (not deleted) appear.
CREATE VIEW IF NOT EXISTS catalog_collection_products AS
SELECT
    m.store_id AS store_id,
    m.collection_id AS collection_id,
    c.handle AS collection_handle,
    product_id,
    position
FROM
(
    SELECT store_id, collection_id, product_ids
    FROM catalog_collection_members FINAL
    WHERE is_deleted = 0
) AS m
ARRAY JOIN
    m.product_ids AS product_id,
    arrayEnumerate(m.product_ids) AS position
INNER JOIN catalog_collections_current AS c ON c.store_id = m.store_id AND c.collection_id = m.collection_id;
