-- Skip indexes for the dedup ledger lookups (streams/runtime/claims.ts): after Redis lost the dedup
-- claims, the processors look ids up by value for one dedup horizon. Parts written before this
-- migration are not indexed (the lookup still works, it reads more).
ALTER TABLE events_raw ADD INDEX IF NOT EXISTS event_id_bf event_id TYPE bloom_filter(0.01) GRANULARITY 4;
ALTER TABLE requests_raw ADD INDEX IF NOT EXISTS request_id_bf request_id TYPE bloom_filter(0.01) GRANULARITY 4;
