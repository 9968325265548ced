-- 0012_jobs_last_day.sql — jobs.last_day, the UTC day (days since 1970) of a job's latest sample:
-- last_seen / 86400, computed when read (a virtual generated column: no bytes stored).
--
-- PostgreSQL indexes this column instead of last_seen (its migration 0013 says why: an index on a
-- column every sample changes stops its in-place updates). The queries are written once for both
-- backends (storage/query), and a window's condition "last_seen >= from" names last_day beside it
-- there, so SQLite has the column too. SQLite rewrites a row and its changed index entries on every
-- update either way, so its index stays on last_seen (0010), which answers those queries as before.
ALTER TABLE jobs ADD COLUMN last_day INTEGER GENERATED ALWAYS AS (last_seen / 86400) VIRTUAL;
