-- 0013_ts_series_key.sql — an index on the whole series key, for the metrics engine's lazy
-- catalog: the engine no longer loads every series at start but looks a key up on its first use
-- (docs/metrics.md, "Lazy catalog"), one probe of this index. It replaces ts_series_host
-- (cluster, host, metric), a prefix of it, which the per-host listings keep using through it.
-- Not UNIQUE: the engine never writes a key twice, and a start must not fail on a database that
-- somehow holds one twice (the lookup then takes either).
CREATE INDEX ts_series_key ON ts_series(cluster, host, metric, type, type_id, stype, stype_id);
DROP INDEX ts_series_host;
