-- 0017_field_types.sql — InfluxDB's field types (float, integer, string, boolean) for line-protocol
-- series (docs/metrics.md, "Field types"); as SQLite's 0020.
--
-- A series' type is fixed by its first point (0 float, 1 integer, 2 string, 3 boolean, as
-- storage/ts/engine.h's fj_ts_ftype); a point of another type is refused, as InfluxDB refuses a
-- field type conflict. Series stored before this migration keep 4, untyped: they take floats,
-- integers and booleans as before and answer floats. The first server to add a series sets its
-- type (the insert of a key that exists does nothing), so servers sharing the database agree.
ALTER TABLE ts_series ADD COLUMN ftype smallint NOT NULL DEFAULT 4;

-- String points, a row each, written in the group's transaction (no request log needed; visible
-- to every server once committed). Re-sending a point replaces it (last write wins).
CREATE TABLE ts_strings (
    series_id integer NOT NULL,
    t bigint NOT NULL,
    v bytea NOT NULL,
    PRIMARY KEY (series_id, t)
);

-- A string series' older points packed (the writers' maintenance, storage/ts/strchunk.h): as
-- SQLite's. A series' chunks never overlap; a row of ts_strings at a chunk's time wins.
CREATE TABLE ts_string_chunk (
    series_id integer NOT NULL,
    t_last bigint NOT NULL,
    t_first bigint NOT NULL,
    count integer NOT NULL,
    blob bytea NOT NULL,
    PRIMARY KEY (series_id, t_last)
);
