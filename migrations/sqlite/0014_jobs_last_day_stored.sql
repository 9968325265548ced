-- 0014_jobs_last_day_stored.sql — jobs found by the day of their last sample, an index the writer
-- touches once a day per job instead of at every sample.
--
-- The job list and the problem-jobs report find a window's jobs by `last_day >= from / 86400`
-- beside `last_seen >= from` (0012). On SQLite last_day was a virtual column and the index was
-- jobs_last_seen (cluster_id, last_seen) from 0010: every job's row is updated at every sample
-- (last_seen moves), and every such update rewrote its entry in that index. last_day is now a
-- stored column indexed by jobs_last_day (cluster_id, last_day): the writer sets it with the row it
-- inserts and again only when a job's last sample moves to a later day (storage/sqlite/write.c), so
-- the per-sample update leaves the index alone. last_day is last_seen / 86400 in every row: the
-- writer is the only code that changes last_seen, and tests/integration/test_job_cpu_memory.py
-- checks the two agree after a workload that crosses midnight.
DROP INDEX jobs_last_seen;
ALTER TABLE jobs DROP COLUMN last_day;
ALTER TABLE jobs ADD COLUMN last_day INTEGER;
UPDATE jobs SET last_day = last_seen / 86400;
CREATE INDEX jobs_last_day ON jobs (cluster_id, last_day);
