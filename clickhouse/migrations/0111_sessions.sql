-- Sessions: 30-minute inactivity sessions built by the `events` processor. A client session_id that goes
-- quiet for 30 minutes (event time) starts a new session with the next `seq`. Grain: (store_id,
-- session_id, seq); rows are partial per processed batch, so read with min/max/sum … GROUP BY (or FINAL).
CREATE TABLE IF NOT EXISTS sessions
(
    store_id LowCardinality(String),
    session_id String,
    seq UInt32,
    started_at SimpleAggregateFunction(min, DateTime64(3, 'UTC')),
    ended_at SimpleAggregateFunction(max, DateTime64(3, 'UTC')),
    events SimpleAggregateFunction(sum, UInt64),
    product_views SimpleAggregateFunction(sum, UInt64),
    add_to_carts SimpleAggregateFunction(sum, UInt64),
    searches SimpleAggregateFunction(sum, UInt64),
    country SimpleAggregateFunction(max, LowCardinality(String))
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(started_at)
ORDER BY (store_id, session_id, seq)
SETTINGS non_replicated_deduplication_window = 1000;
