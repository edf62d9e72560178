-- Co-view pairs: how many sessions viewed both product_a and product_b (product_view events). Stored in
-- both directions (a→b and b→a) so "related to X" is a prefix read; the diagonal (a = b) is the number
-- of sessions that viewed the product, the denominator of the popularity-normalized similarity
-- cosine = n_ab / sqrt(n_aa · n_bb). Each new product in a session pairs with at most the 20 most recent
-- distinct products of that session. Grain: (store_id, product_a, product_b, day of the pairing view).
CREATE TABLE IF NOT EXISTS co_view_pairs
(
    store_id LowCardinality(String),
    product_a UInt64,
    product_b UInt64,
    day Date,
    sessions UInt64
)
ENGINE = SummingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (store_id, product_a, product_b, day)
TTL day + INTERVAL 180 DAY
SETTINGS non_replicated_deduplication_window = 1000;
