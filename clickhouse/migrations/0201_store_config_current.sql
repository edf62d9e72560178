-- The current configuration: the newest write per (store_id, kind, item_id), tombstoned items removed.
CREATE VIEW IF NOT EXISTS store_config_current AS
SELECT store_id, kind, item_id, version, written_at, payload
FROM store_config FINAL
WHERE deleted = 0;
