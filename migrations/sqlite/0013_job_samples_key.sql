-- 0013_job_samples_key.sql — job_samples keyed by (job, node, time), its own order of reading.
--
-- Every reader of job_samples asks for one job's node-samples on a node in time order: the job
-- CPU upkeep (the previous node-sample, the window before a new one), the job_activity triggers
-- (the last busy node-sample), the job profile, retention's last sample of a host. They went
-- through the index job_samples_time (rjob_id, node_id, time), a second B-tree written with every
-- row, beside the table's own key (rjob_id, sample_id) that only the INSERT's duplicate check used.
-- A sample is one node at one time, so (rjob_id, node_id, time) is as unique as (rjob_id,
-- sample_id): the table is rebuilt with it as its key and the index goes, one B-tree per row
-- instead of two (Sonar ingest on SQLite, docs/benchmarks.md). Rows whose node or time is unknown
-- cannot exist (0007 filled both from the sample, which retention deletes only after them) and are
-- not copied. The triggers of 0010 and 0011 go with the old table and are made again unchanged.
CREATE TABLE job_samples_0013 (
    rjob_id INTEGER NOT NULL,      -- jobs.id
    sample_id INTEGER NOT NULL,    -- samples.id
    nproc INTEGER NOT NULL,
    cpu_m INTEGER NOT NULL,
    mem_kb INTEGER NOT NULL,
    gpu_m INTEGER NOT NULL,
    gpumem_kb INTEGER NOT NULL,
    node_id INTEGER NOT NULL,
    time INTEGER NOT NULL,
    proc_first INTEGER,
    n_procs INTEGER,
    cpu_win_m INTEGER,
    PRIMARY KEY (rjob_id, node_id, time)
) WITHOUT ROWID;

INSERT INTO job_samples_0013
SELECT rjob_id, sample_id, nproc, cpu_m, mem_kb, gpu_m, gpumem_kb, node_id, time, proc_first, n_procs, cpu_win_m
  FROM job_samples WHERE node_id IS NOT NULL AND time IS NOT NULL;

DROP TABLE job_samples;
ALTER TABLE job_samples_0013 RENAME TO job_samples;

CREATE TRIGGER job_activity_insert AFTER INSERT ON job_samples BEGIN
    INSERT INTO job_activity VALUES (NEW.rjob_id, NEW.node_id, NEW.time, NEW.time,
                                     CASE WHEN NEW.cpu_m > 0 THEN NEW.time ELSE 0 END,
                                     CASE WHEN NEW.gpu_m > 0 THEN NEW.time ELSE 0 END)
    ON CONFLICT (rjob_id, node_id) DO UPDATE SET
        first_time = min(first_time, excluded.first_time), last_time = max(last_time, excluded.last_time),
        cpu_busy_last = max(cpu_busy_last, excluded.cpu_busy_last),
        gpu_busy_last = max(gpu_busy_last, excluded.gpu_busy_last);
END;

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
