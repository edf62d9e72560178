-- Every trending vote, whichever way the search reached us: searches served by the storefront API
-- (trending_queries_hourly, from requests_raw) and `search` events sent to POST /beacon
-- (trending_search_events_hourly, from events_raw). A voter who did both in one hour counts once when
-- read with uniqExactMerge(voters) grouped by (store_id, country, bucket, query) or coarser.
CREATE VIEW IF NOT EXISTS trending_queries AS
SELECT store_id, country, bucket, query, voters, searches, zero_results, results_sum FROM trending_queries_hourly
UNION ALL
SELECT store_id, country, bucket, query, voters, searches, zero_results, results_sum FROM trending_search_events_hourly;
