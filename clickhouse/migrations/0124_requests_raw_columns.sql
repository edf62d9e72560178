-- requests_raw: the columns of the request-event fields that had no column (0101). Writer: the `requests`
-- processor (streams/requests/processor.ts), one value per request as the read API emitted it; NULL when
-- the endpoint does not set the field. Grain: unchanged (one request). Rows written before this migration
-- read NULL ('' / '{}' for the non-nullable ones) until a replay of the `requests` processor
-- (`npm run replay -- --processor requests --from earliest`) rebuilds them from the log.
-- `query` stays the normalized query (the trending key the views read); the query as sent is `query_text`.
-- The contract between the topic's Avro value and these columns: schemas/tables.ts.
--   query_text          the query as sent (search, autocomplete, content, prepare)
--   search_id           prepared search id (prepare, search, feedback)
--   geo_region          context.geo.region, else from the client IP
--   shopping_channel    web | app
--   page, page_size     requested page (1-based) and page size (the event's `limit`)
--   sort_order_code     the sort order applied
--   content_type        content search filter: article, page or NULL for both
--   sdk_client          X-SDK-Client header (name/version)
--   context_json        the validated, normalized request context, JSON
--   details_json        kind-specific details, JSON (feedback rating/text, image id, applied rules, redirect)
ALTER TABLE requests_raw
    ADD COLUMN IF NOT EXISTS query_text Nullable(String) AFTER query,
    ADD COLUMN IF NOT EXISTS search_id Nullable(String) AFTER query_text,
    ADD COLUMN IF NOT EXISTS geo_region LowCardinality(String) DEFAULT '' AFTER geo_country,
    ADD COLUMN IF NOT EXISTS shopping_channel LowCardinality(Nullable(String)) AFTER market,
    ADD COLUMN IF NOT EXISTS page Nullable(UInt32) AFTER total_results,
    ADD COLUMN IF NOT EXISTS page_size Nullable(UInt32) AFTER page,
    ADD COLUMN IF NOT EXISTS sort_order_code LowCardinality(Nullable(String)) AFTER page_size,
    ADD COLUMN IF NOT EXISTS content_type LowCardinality(Nullable(String)) AFTER anchor_id,
    ADD COLUMN IF NOT EXISTS sdk_client LowCardinality(Nullable(String)) AFTER cache_hit,
    ADD COLUMN IF NOT EXISTS context_json String DEFAULT '{}' AFTER sdk_client,
    ADD COLUMN IF NOT EXISTS details_json Nullable(String) AFTER context_json;
