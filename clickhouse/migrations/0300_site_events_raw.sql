-- Public-site submissions (topic site.events.v1), one row per accepted form or arcade score, written by
-- the `site` processor; a repeated event_id within the dedup horizon is dropped first. Grain: one
-- submission. The public site belongs to the platform, not to a store: `site` is the site's name
-- ('public') and leads every key as store_id does elsewhere. `fields_json` holds the validated form
-- fields; `player`/`score` are set for kind 'arcade_score' (the 404 page's leaderboard:
-- max(score) per player). Addresses are personal data: `email` is kept for the mailer, the client IP
-- only as a truncated SHA-256.
CREATE TABLE IF NOT EXISTS site_events_raw
(
    site LowCardinality(String) DEFAULT 'public',
    received_at DateTime64(3, 'UTC'),
    event_id String,
    kind LowCardinality(String),
    email Nullable(String),
    fields_json String,
    player Nullable(String),
    score Nullable(UInt32),
    client_ip_hash Nullable(String),
    user_agent Nullable(String),
    _partition UInt16,
    _offset UInt64,
    INDEX event_id_bf event_id TYPE bloom_filter(0.01) GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(received_at)
ORDER BY (site, kind, received_at, event_id)
SETTINGS non_replicated_deduplication_window = 1000;
