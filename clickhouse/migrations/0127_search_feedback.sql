-- Search feedback (topic storefront.feedback.v1), one row per feedback record, written by the
-- `feedback` processor; a repeated feedback_id within the dedup horizon is dropped first. Grain: one
-- feedback record. `search_id` is the rated search: join requests_raw ON search_id (kind 'prepare' and
-- 'search' rows carry it) or ON request_id = search_id (feedback on an execute's attributionToken) to see
-- what was served. The search context columns are filled when the search was still cached (15 minutes):
-- has_search_context = 1; `product_feedback` holds (product_id, rating, feedback) tuples.
CREATE TABLE IF NOT EXISTS search_feedback
(
    store_id LowCardinality(String),
    received_at DateTime64(3, 'UTC'),
    feedback_id String,
    search_id String,
    rating LowCardinality(Nullable(String)),
    text_feedback Nullable(String),
    product_feedback Array(Tuple(product_id UInt64, rating Nullable(String), feedback Nullable(String))),
    session_id Nullable(String),
    customer_id Nullable(String),
    has_search_context Bool,
    query Nullable(String),
    normalized_query Nullable(String),
    expanded_queries Array(String),
    intent_modifiers_json Nullable(String),
    _partition UInt16,
    _offset UInt64,
    INDEX feedback_id_bf feedback_id TYPE bloom_filter(0.01) GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(received_at)
ORDER BY (store_id, received_at, feedback_id)
SETTINGS non_replicated_deduplication_window = 1000;
