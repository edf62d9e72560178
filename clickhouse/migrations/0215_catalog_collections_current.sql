-- Current collections (deleted ones left out). Filter by store_id; look up by handle or collection_id.
CREATE VIEW IF NOT EXISTS catalog_collections_current AS
SELECT
    store_id, collection_id, handle, title, body_html, collection_type, sort_order, default_sort_order,
    published, published_at, image, metafields, updated_at, source
FROM catalog_collections FINAL
WHERE is_deleted = 0;
