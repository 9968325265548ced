-- 0014_job_activity_now.sql — the view shared SQL reads job_activity through.
--
-- SQLite's writer leaves job_activity.last_time behind while the pair's raw rows hold it, and its
-- view job_activity_now (SQLite 0017) reads the later of the two. PostgreSQL's writer keeps the
-- column current (one statement per batch, 0011), so its view is the table as it is: the
-- problem-jobs report (storage/query/problems.c) reads the same name on both backends.
CREATE VIEW job_activity_now AS
SELECT rjob_id, node_id, first_time, last_time, cpu_busy_last, gpu_busy_last FROM job_activity;
