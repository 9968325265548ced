-- 0008_job_cpu_time.sql — job CPU from cpu_time differences (docs/storage.md, "Job CPU").
--
-- Until now a node-sample's CPU (job_samples.cpu_m) was the sum of its processes' cpu_util, a
-- ~100 ms glimpse that misses the truth by 6-17 %, and a job's cpu_peak the highest of them. Now
-- cpu_m comes from each process's cpu_time difference to the job's previous node-sample on the
-- node (storage/jobcpu.h), and cpu_win_m holds the node-sample's peak candidate: the CPU over a
-- window of at least 120 s ending there, capped at its threads x 100 %; jobs.cpu_win_peak_m is
-- the largest candidate (NULL while there is none) and cpu_peak_m that, or the average while none.
--
-- job_samples_time finds a node-sample's neighbours in time (the writer reads the previous one and,
-- when a sample arrives late, the later ones it changes). job_cpu_todo lists the (job, node) pairs
-- to recompute from the raw process rows; `fjord migrate up` works it off right after this
-- migration, in C, and the writer would finish it in its next transaction. A node-sample whose raw
-- rows are gone keeps the figure it has, so a job whose raw rows expired keeps its summary.
ALTER TABLE job_samples ADD COLUMN cpu_win_m INTEGER;
ALTER TABLE jobs ADD COLUMN cpu_win_peak_m INTEGER;
CREATE INDEX job_samples_time ON job_samples (rjob_id, node_id, time);

CREATE TABLE job_cpu_todo (
    rjob_id INTEGER NOT NULL,
    node_id INTEGER NOT NULL,
    PRIMARY KEY (rjob_id, node_id)
) WITHOUT ROWID;
INSERT INTO job_cpu_todo (rjob_id, node_id) SELECT DISTINCT rjob_id, node_id FROM job_samples;
