-- 0010_job_activity.sql — when each job was last busy on each of its nodes, for the problem-jobs
-- report (GET /api/v1/problems; docs/problems.md).
--
-- Two of the report's rules ask how long a job ran without doing anything at its end: GPUs left
-- idle over the job's last hours, and deadweight (processes left behind, using nothing). The job
-- summary (jobs) holds sums and peaks, not when activity stopped, and answering it from job_samples
-- would read every node-sample of every job of the window. job_activity keeps, per (job, node),
-- the first and last node-sample and the last one that used CPU (cpu_m > 0: its processes'
-- cpu_time advanced) and the last one that used a GPU (gpu_m > 0): one row per job and node.
--
-- Maintained at write time by triggers on job_samples, so both writers keep it without a line of
-- their own: a new node-sample (insert), its CPU figure computed before COMMIT or recomputed when a
-- neighbour arrived late (update of cpu_m), a merge of two instances (update of rjob_id). Every
-- column is a minimum or a maximum, so duplicates, arrival order and merges give the same row. A
-- job's row goes with the job (a merged-away instance); retention deletes job_samples but not
-- job_activity, which outlives the raw rows as the job summary does. An update that lowers the
-- last busy node-sample's figure to 0 reads the last busy time again from the rows (below).
-- Times are seconds; 0: never.
CREATE TABLE job_activity (
    rjob_id INTEGER NOT NULL,      -- jobs.id
    node_id INTEGER NOT NULL,
    first_time INTEGER NOT NULL,
    last_time INTEGER NOT NULL,
    cpu_busy_last INTEGER NOT NULL,
    gpu_busy_last INTEGER NOT NULL,
    PRIMARY KEY (rjob_id, node_id)
) WITHOUT ROWID;

CREATE TRIGGER job_activity_insert AFTER INSERT ON job_samples BEGIN
    INSERT INTO job_activity VALUES (NEW.rjob_id, NEW.node_id, NEW.time, NEW.time,
                                     CASE WHEN NEW.cpu_m > 0 THEN NEW.time ELSE 0 END,
                                     CASE WHEN NEW.gpu_m > 0 THEN NEW.time ELSE 0 END)
    ON CONFLICT (rjob_id, node_id) DO UPDATE SET
        first_time = min(first_time, excluded.first_time), last_time = max(last_time, excluded.last_time),
        cpu_busy_last = max(cpu_busy_last, excluded.cpu_busy_last),
        gpu_busy_last = max(gpu_busy_last, excluded.gpu_busy_last);
END;

-- An update can also lower a figure to 0 (a late sample before it: the CPU interval now starts
-- there, and its cpu_time did not advance). When that node-sample was the last busy one, the last
-- busy time is read again from the job's rows on the node (job_samples_time) — rare, and exact.
CREATE TRIGGER job_activity_update AFTER UPDATE OF rjob_id, cpu_m, gpu_m ON job_samples BEGIN
    INSERT INTO job_activity VALUES (NEW.rjob_id, NEW.node_id, NEW.time, NEW.time,
                                     CASE WHEN NEW.cpu_m > 0 THEN NEW.time ELSE 0 END,
                                     CASE WHEN NEW.gpu_m > 0 THEN NEW.time ELSE 0 END)
    ON CONFLICT (rjob_id, node_id) DO UPDATE SET
        first_time = min(first_time, excluded.first_time), last_time = max(last_time, excluded.last_time),
        cpu_busy_last = max(cpu_busy_last, excluded.cpu_busy_last),
        gpu_busy_last = max(gpu_busy_last, excluded.gpu_busy_last);
    UPDATE job_activity
       SET cpu_busy_last = coalesce((SELECT max(time) FROM job_samples WHERE rjob_id = NEW.rjob_id
                                        AND node_id = NEW.node_id AND cpu_m > 0), 0)
     WHERE OLD.cpu_m > 0 AND NEW.cpu_m <= 0 AND rjob_id = NEW.rjob_id AND node_id = NEW.node_id
       AND cpu_busy_last = NEW.time;
    UPDATE job_activity
       SET gpu_busy_last = coalesce((SELECT max(time) FROM job_samples WHERE rjob_id = NEW.rjob_id
                                        AND node_id = NEW.node_id AND gpu_m > 0), 0)
     WHERE OLD.gpu_m > 0 AND NEW.gpu_m <= 0 AND rjob_id = NEW.rjob_id AND node_id = NEW.node_id
       AND gpu_busy_last = NEW.time;
END;

CREATE TRIGGER job_activity_job_gone AFTER DELETE ON jobs BEGIN
    DELETE FROM job_activity WHERE rjob_id = OLD.id;
END;

-- The report reads the jobs of a window by their end: jobs that ended (or were last seen) in it.
CREATE INDEX jobs_last_seen ON jobs (cluster_id, last_seen);

INSERT INTO job_activity (rjob_id, node_id, first_time, last_time, cpu_busy_last, gpu_busy_last)
SELECT rjob_id, node_id, min(time), max(time), max(CASE WHEN cpu_m > 0 THEN time ELSE 0 END),
       max(CASE WHEN gpu_m > 0 THEN time ELSE 0 END)
  FROM job_samples WHERE node_id IS NOT NULL AND time IS NOT NULL GROUP BY rjob_id, node_id;
