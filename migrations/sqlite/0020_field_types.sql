-- 0020_field_types.sql — InfluxDB's field types (float, integer, string, boolean) for line-protocol
-- series (docs/metrics.md, "Field types").
--
-- A series' type is fixed by its first point (0 float, 1 integer, 2 string, 3 boolean, as
-- storage/ts/engine.h's fj_ts_ftype); a point of another type is refused, as InfluxDB refuses a
-- field type conflict. Series stored before this migration keep 4, untyped: they take floats,
-- integers and booleans as before (all stored as doubles) and answer floats, so an upgrade
-- refuses nothing that was taken before.
ALTER TABLE ts_series ADD COLUMN ftype INTEGER NOT NULL DEFAULT 4;

-- String points, a row each, written in the group's transaction (so they need no request log and
-- are visible once committed). Numbers and booleans stay in the engine's chunks (ts_chunk).
-- Re-sending a point replaces it (last write wins). v: the bytes as sent (may hold NUL).
CREATE TABLE ts_strings (
    series_id INTEGER NOT NULL,
    t INTEGER NOT NULL,
    v BLOB NOT NULL,
    PRIMARY KEY (series_id, t)
) WITHOUT ROWID;

-- A string series' older points packed (the writer's maintenance, storage/ts/strchunk.h: times as
-- a numeric chunk, the values length-prefixed and zstd'd): a chunk's points are no longer rows.
-- A series' chunks never overlap (packing merges those it overlaps); a row of ts_strings at a
-- chunk's time is a later write and wins.
CREATE TABLE ts_string_chunk (
    series_id INTEGER NOT NULL,
    t_last INTEGER NOT NULL,
    t_first INTEGER NOT NULL,
    count INTEGER NOT NULL,
    blob BLOB NOT NULL,
    PRIMARY KEY (series_id, t_last)
) WITHOUT ROWID;
