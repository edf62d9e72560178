-- Current metaobjects (deleted ones left out), one row per (store_id, metaobject_id). Over
-- catalog_metaobjects (0229); fields and swatch are JSON strings.
CREATE VIEW IF NOT EXISTS catalog_metaobjects_current AS
SELECT store_id, metaobject_id, type, handle, display_name, fields, swatch, updated_at, source
FROM catalog_metaobjects FINAL
WHERE is_deleted = 0;
