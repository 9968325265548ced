-- 0016_job_activity_by_writer.sql — job_activity and job_gpu_activity of a new node-sample written
-- by the writer, not by a trigger per job_samples row.
--
-- 0010's and 0011's insert triggers ran a trigger program for every node-sample: an upsert of
-- job_activity and, for a batch job, a look-up of the job and a scan of the node-sample's
-- sample_proc_gpus rows, a quarter of SQLite's work per Sonar sample (docs/benchmarks.md). The
-- writer knows all of it when it buffers the row (the node-sample's CPU and GPU figures, its
-- processes' cards) and upserts both tables in multi-row statements of its buffers
-- (storage/sqlite/write.c, activity_rows), with the same minima and maxima, so re-sent samples and
-- any order give the same rows as before. The update triggers stay: a node-sample whose CPU is
-- computed before COMMIT (cpu_m set after its insert) and a merge (rjob_id changed) still go
-- through them. tests/integration/test_sqlite_migrations.py checks the writer's rows against
-- 0010's and 0011's backfills from the raw rows.
DROP TRIGGER job_activity_insert;
DROP TRIGGER job_gpu_activity_insert;
