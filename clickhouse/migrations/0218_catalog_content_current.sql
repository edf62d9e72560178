-- Current articles and pages (deleted ones left out; unpublished and seo-hidden ones included, flagged).
CREATE VIEW IF NOT EXISTS catalog_content_current AS
SELECT
    store_id, content_type, content_id, handle, title, body_html, summary_text, body_text, author, tags,
    image, blog_id, blog_handle, published_at, created_at, updated_at, seo_hidden, metafields, source
FROM catalog_content FINAL
WHERE is_deleted = 0;
