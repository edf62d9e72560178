-- Product popularity by day for analysts: engagement and sales side by side (a plain view over the two
-- daily tables, so each keeps its own processor and can be replayed on its own).
CREATE VIEW IF NOT EXISTS product_popularity_daily AS
SELECT
    store_id, day, product_id,
    sum(views) AS views, sum(clicks) AS clicks, sum(add_to_carts) AS add_to_carts, sum(impressions) AS impressions,
    sum(units) AS units, sum(orders) AS orders, sum(revenue) AS revenue
FROM
(
    SELECT store_id, day, product_id, views, clicks, add_to_carts, impressions,
           toInt64(0) AS units, toInt64(0) AS orders, toDecimal128(0, 6) AS revenue
    FROM product_daily_engagement
    UNION ALL
    SELECT store_id, day, product_id, 0, 0, 0, 0, units, orders, toDecimal128(revenue, 6)
    FROM product_daily_sales
)
GROUP BY store_id, day, product_id;
