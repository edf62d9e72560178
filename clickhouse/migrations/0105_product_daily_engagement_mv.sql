CREATE MATERIALIZED VIEW IF NOT EXISTS product_daily_engagement_mv TO product_daily_engagement AS
SELECT
    store_id,
    toDate(ts) AS day,
    assumeNotNull(product_id) AS product_id,
    countIf(event_type = 'product_view') AS views,
    countIf(event_type = 'product_click') AS clicks,
    countIf(event_type = 'add_to_cart') AS add_to_carts,
    countIf(event_type = 'product_impression') AS impressions
FROM events_raw
WHERE product_id IS NOT NULL AND is_bot = 0
  AND event_type IN ('product_view', 'product_click', 'add_to_cart', 'product_impression')
GROUP BY store_id, day, product_id;
