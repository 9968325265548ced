-- 0017_job_activity_last_time_read.sql — job_activity's last_time read from the raw rows while
-- they exist, so the writer need not rewrite the row at every node-sample.
--
-- Since 0016 the writer upserts a job's job_activity row for each of its node-samples, and nearly
-- every one changed only last_time (most node-samples of a running job are neither its first on
-- the node nor busier than the last): a fifth of SQLite's work per Sonar sample for one column
-- that job_samples' key (rjob_id, node_id, time, 0013) already holds. The writer now writes the
-- row only when first_time, cpu_busy_last or gpu_busy_last moves (storage/sqlite/write.c,
-- activity_rows), so the stored last_time is a lower bound, and readers read this view: the later
-- of the stored last_time and the pair's latest job_samples row, one seek of that key. Retention
-- folds the latest time of the rows it deletes into the stored last_time first
-- (storage/sqlite/retention.c), so the answer outlives the raw rows as before. PostgreSQL's
-- writer keeps last_time current; its view of the same name (PostgreSQL 0014) reads the column.
CREATE VIEW job_activity_now AS
SELECT a.rjob_id, a.node_id, a.first_time,
       max(a.last_time, coalesce((SELECT max(js.time) FROM job_samples js
                                  WHERE js.rjob_id = a.rjob_id AND js.node_id = a.node_id), 0)) AS last_time,
       a.cpu_busy_last, a.gpu_busy_last
FROM job_activity a;
