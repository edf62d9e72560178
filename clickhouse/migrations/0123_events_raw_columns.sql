-- events_raw: the columns of the event fields that were accepted, validated and kept in the log but had no
-- column (0100). Writer: the `events` processor (streams/events/processor.ts), one value per event as the
-- beacon enriched it; NULL when the event type has no such field or the storefront did not send it.
-- Grain: unchanged (one event). Rows written before this migration read NULL here until a replay of the
-- `events` processor (`npm run replay -- --processor events --from earliest`) rebuilds them from the log.
-- The contract between the topic's Avro value and these columns: schemas/tables.ts.
--   marketing_term, marketing_content  utm_term / utm_content (every event type)
--   content_handle                     content_view / content_click / content_impression
--   banner_type, banner_mode           banner_impression / banner_click (mode: inject | overtake)
--   web_position, mobile_position      banner grid positions (0-based), banner events
ALTER TABLE events_raw
    ADD COLUMN IF NOT EXISTS marketing_term Nullable(String) AFTER marketing_campaign,
    ADD COLUMN IF NOT EXISTS marketing_content Nullable(String) AFTER marketing_term,
    ADD COLUMN IF NOT EXISTS content_handle Nullable(String) AFTER content_id,
    ADD COLUMN IF NOT EXISTS banner_type LowCardinality(Nullable(String)) AFTER rule_id,
    ADD COLUMN IF NOT EXISTS banner_mode LowCardinality(Nullable(String)) AFTER banner_type,
    ADD COLUMN IF NOT EXISTS web_position Nullable(Int32) AFTER banner_mode,
    ADD COLUMN IF NOT EXISTS mobile_position Nullable(Int32) AFTER web_position;
