-- Current products: the newest version of each product, deleted ones left out. Filter by store_id.
CREATE VIEW IF NOT EXISTS catalog_products_current AS
SELECT
    store_id, product_id, title, handle, body_html, vendor, product_type, tags, status,
    published_at, created_at, updated_at, options, variants, images, featured_image, metafields,
    is_gift_card, combined_listing_parent_product_id, combined_listing_role,
    has_variants_that_require_components, category, price_min, price_max, source
FROM catalog_products FINAL
WHERE is_deleted = 0;
