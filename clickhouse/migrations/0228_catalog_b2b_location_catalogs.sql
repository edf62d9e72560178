-- Company location → assigned active B2B catalogs and their price lists (as the catalogs declare them;
-- the store configuration's b2b_company_location items are the other source, see docs/catalog.md).
CREATE VIEW IF NOT EXISTS catalog_b2b_location_catalogs AS
SELECT store_id, company_location_id, catalog_id, price_list_id, all_products
FROM catalog_b2b_catalogs FINAL
ARRAY JOIN company_location_ids AS company_location_id
WHERE is_deleted = 0 AND status = 'active';
