-- 0011_job_gpu_activity.sql — when each job last used each GPU card it had processes on, for the
-- problem-jobs report's gpu_idle rule, judged per card (docs/problems.md).
--
-- job_activity (0010) keeps a job's GPU use per node: job_samples.gpu_m sums the node's cards, so
-- a job that keeps one of four cards busy looks busy. Sonar reports GPU use per process and card
-- (sample_proc_gpus); job_gpu_activity keeps, per (job, node, card), the first and last
-- node-sample in which the job had a process on the card, and the last one in which the card
-- showed utilisation for the job (gpu_util_m > 0 summed over its processes); 0: never. One row per
-- job, node and card used.
--
-- Kept at write time by triggers on job_samples, like job_activity: a job_samples row carries the
-- range of the node-sample's process rows of its sample job (proc_first, n_procs: 0007), and the
-- writer inserts a sample job's sample_proc_gpus rows before its job_samples row (its buffers are
-- flushed in the order of FJ_SQ_BUFS, the tables before job_samples first). A merge moves
-- job_samples rows to the surviving job (update of rjob_id): their cards are read again for it.
-- Lone processes (job 0) are skipped: their range holds the other lone processes of the sample,
-- and the report does not judge them. Every column is a minimum or a maximum, so re-sent samples
-- and any arrival order give the same row. A job's rows go with the job; retention keeps them, as
-- it keeps job_activity.
CREATE TABLE job_gpu_activity (
    rjob_id INTEGER NOT NULL,      -- jobs.id
    node_id INTEGER NOT NULL,
    card INTEGER NOT NULL,         -- the card's index on the node (sample_proc_gpus.idx)
    first_time INTEGER NOT NULL,
    last_time INTEGER NOT NULL,
    busy_last INTEGER NOT NULL,
    PRIMARY KEY (rjob_id, node_id, card)
) WITHOUT ROWID;

CREATE TRIGGER job_gpu_activity_insert AFTER INSERT ON job_samples
WHEN NEW.n_procs > 0 AND (SELECT job FROM jobs WHERE id = NEW.rjob_id) <> 0 BEGIN
    INSERT INTO job_gpu_activity
    SELECT NEW.rjob_id, NEW.node_id, g.idx, NEW.time, NEW.time,
           CASE WHEN sum(g.gpu_util_m) > 0 THEN NEW.time ELSE 0 END
      FROM sample_proc_gpus g
     WHERE g.proc_id >= NEW.proc_first AND g.proc_id < NEW.proc_first + NEW.n_procs
     GROUP BY g.idx
    ON CONFLICT (rjob_id, node_id, card) DO UPDATE SET
        first_time = min(first_time, excluded.first_time), last_time = max(last_time, excluded.last_time),
        busy_last = max(busy_last, excluded.busy_last);
END;

CREATE TRIGGER job_gpu_activity_move AFTER UPDATE OF rjob_id ON job_samples
WHEN NEW.n_procs > 0 AND (SELECT job FROM jobs WHERE id = NEW.rjob_id) <> 0 BEGIN
    INSERT INTO job_gpu_activity
    SELECT NEW.rjob_id, NEW.node_id, g.idx, NEW.time, NEW.time,
           CASE WHEN sum(g.gpu_util_m) > 0 THEN NEW.time ELSE 0 END
      FROM sample_proc_gpus g
     WHERE g.proc_id >= NEW.proc_first AND g.proc_id < NEW.proc_first + NEW.n_procs
     GROUP BY g.idx
    ON CONFLICT (rjob_id, node_id, card) DO UPDATE SET
        first_time = min(first_time, excluded.first_time), last_time = max(last_time, excluded.last_time),
        busy_last = max(busy_last, excluded.busy_last);
END;

CREATE TRIGGER job_gpu_activity_job_gone AFTER DELETE ON jobs BEGIN
    DELETE FROM job_gpu_activity WHERE rjob_id = OLD.id;
END;

INSERT INTO job_gpu_activity (rjob_id, node_id, card, first_time, last_time, busy_last)
SELECT rjob_id, node_id, idx, min(time), max(time), max(CASE WHEN util > 0 THEN time ELSE 0 END)
  FROM (SELECT js.rjob_id, js.node_id, js.time, g.idx, sum(g.gpu_util_m) AS util
          FROM jobs j CROSS JOIN job_samples js ON js.rjob_id = j.id
          CROSS JOIN sample_proc_gpus g ON g.proc_id >= js.proc_first AND g.proc_id < js.proc_first + js.n_procs
         WHERE j.job <> 0 AND js.n_procs > 0 AND js.node_id IS NOT NULL AND js.time IS NOT NULL
         GROUP BY js.rjob_id, js.node_id, js.time, g.idx)
 GROUP BY rjob_id, node_id, idx;
