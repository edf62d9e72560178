CREATE MATERIALIZED VIEW IF NOT EXISTS searches_served_daily_mv TO searches_served_daily AS
SELECT store_id, toDate(ts) AS day, count() AS searches
FROM requests_raw
WHERE kind = 'search' AND status_code < 400
GROUP BY store_id, day;
