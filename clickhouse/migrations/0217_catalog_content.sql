-- Articles and pages from catalog.content.v1 (content search). Versioned like catalog_products.
-- summary_text: HTML stripped except images (~500 characters); body_text: all text, for search.
-- seo_hidden = 1 (metafield seo.hidden) excludes an item from content search.
CREATE TABLE IF NOT EXISTS catalog_content
(
    store_id LowCardinality(String),
    content_type LowCardinality(String) COMMENT 'article | page',
    content_id UInt64,
    handle String,
    title String,
    body_html String,
    summary_text String,
    body_text String,
    author Nullable(String),
    tags Array(String),
    image String COMMENT 'JSON {url, width, height, altText}, empty when none',
    blog_id Nullable(UInt64),
    blog_handle Nullable(String),
    published_at Nullable(DateTime64(3, 'UTC')) COMMENT 'null = not published',
    created_at Nullable(DateTime64(3, 'UTC')),
    updated_at DateTime64(3, 'UTC'),
    seo_hidden UInt8,
    metafields String,
    source LowCardinality(String),
    is_deleted UInt8,
    _version UInt128,
    _partition UInt16,
    _offset UInt64
)
ENGINE = ReplacingMergeTree(_version, is_deleted)
ORDER BY (store_id, content_type, content_id)
SETTINGS non_replicated_deduplication_window = 1000;
