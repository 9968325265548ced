-- 0013_jobs_last_day.sql — a job's row updated in place again: the index that finds a window's jobs
-- by their end is on the day of the last sample, not on its time.
--
-- The writer rewrites a job's summary row at every sample of the job. 0008 gave jobs room on each
-- page so that those updates stay on the page (HOT: no new index entries, the old version pruned
-- from the page without VACUUM), which holds only while no indexed column changes; 0009's index on
-- (cluster_id, last_seen) made every one of them a new row version with an entry in each of the
-- table's five indexes. Measured with tests/bench/sonar_bench.sh (100 nodes x 20 samples):
-- jobs 7.0 MB after VACUUM against 2.3 MB compacted, and 10 % of the server's CPU.
--
-- last_day is last_seen / 86400, the UTC day (days since 1970) of the job's latest sample, kept by
-- PostgreSQL itself (a stored generated column). PostgreSQL decides HOT by comparing the indexed
-- columns' old and new values, so an update changes the index only on the first sample of a day.
-- A window's condition "last_seen >= from" is written with "last_day >= from / 86400" beside it
-- (storage/query: the job list, the problem-jobs report), which it implies, for this index to
-- find the rows; last_seen then filters them. SQLite has the same column (its migration 0012).
ALTER TABLE jobs ADD COLUMN last_day bigint GENERATED ALWAYS AS (last_seen / 86400) STORED;
DROP INDEX jobs_last_seen;
CREATE INDEX jobs_last_day ON jobs (cluster_id, last_day);

-- More room on each page than 0008's 70 %: a new version goes on the page only while the page
-- has room for it, and the versions it replaces are pruned only once no open transaction can see
-- them, which with several writers committing side by side is not at once. Measured with the
-- same benchmark (jobs after VACUUM, 100 nodes x 20 samples; 1,000 nodes after its load phases):
-- fillfactor 90: 7.2 MB, 87 MB; 70: 4.2, 73; 50: 3.3, 59; 35: 4.4, 82 (the reserve outweighs
-- what it saves). New pages get it; existing ones keep theirs until rewritten.
ALTER TABLE jobs SET (fillfactor = 50);

-- job_activity's row of a (job, node) is also updated at every sample, on no indexed column: room
-- on its pages keeps those updates HOT too (its bytes after VACUUM: 1.8 MB -> 1.1 MB above).
ALTER TABLE job_activity SET (fillfactor = 50);
