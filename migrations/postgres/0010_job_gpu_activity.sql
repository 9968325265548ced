-- 0010_job_gpu_activity.sql — when each job last used each GPU card it had processes on, for the
-- problem-jobs report's gpu_idle rule, judged per card (docs/problems.md). The same table and
-- meaning as SQLite's migration 0011 (read its comment): per (job, node, card) the first and last
-- node-sample in which the job had a process on the card, and the last in which the card showed
-- utilisation for the job (gpu_util_m > 0, summed over its processes); 0: never.
--
-- Kept by a trigger on job_samples: the writer inserts a node-sample's sample_proc_gpus rows
-- before the rectified jobs and their job_samples rows (storage/pg/write.c), so the trigger finds
-- the job's cards by (node_id, time, job, epoch) through sample_proc_gpus_node_time. A merge
-- inserts the merged job's rows into the surviving job, which fires it as well. Lone processes
-- (job 0) are skipped, as in SQLite. Not partitioned: kept when retention drops the weeks of the
-- raw rows.
CREATE TABLE job_gpu_activity (
    rjob_id bigint NOT NULL,
    node_id bigint NOT NULL,
    card bigint NOT NULL,
    first_time bigint NOT NULL,
    last_time bigint NOT NULL,
    busy_last bigint NOT NULL,
    PRIMARY KEY (rjob_id, node_id, card)
);

CREATE FUNCTION fj_job_gpu_activity_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_gpu_activity
    SELECT NEW.rjob_id, NEW.node_id, g.idx, NEW.time, NEW.time,
           CASE WHEN sum(g.gpu_util_m) > 0 THEN NEW.time ELSE 0 END
      FROM jobs j JOIN sample_proc_gpus g ON g.node_id = NEW.node_id AND g.time = NEW.time
                                        AND g.job = j.job AND g.epoch = j.epoch
     WHERE j.id = NEW.rjob_id AND j.job <> 0
     GROUP BY g.idx
    ON CONFLICT (rjob_id, node_id, card) DO UPDATE SET
        first_time = LEAST(job_gpu_activity.first_time, EXCLUDED.first_time),
        last_time = GREATEST(job_gpu_activity.last_time, EXCLUDED.last_time),
        busy_last = GREATEST(job_gpu_activity.busy_last, EXCLUDED.busy_last);
    RETURN NULL;
END $$;

CREATE FUNCTION fj_job_gpu_activity_job_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM job_gpu_activity WHERE rjob_id = OLD.id;
    RETURN NULL;
END $$;

CREATE TRIGGER job_gpu_activity_insert AFTER INSERT ON job_samples
    FOR EACH ROW EXECUTE FUNCTION fj_job_gpu_activity_note();
CREATE TRIGGER job_gpu_activity_move AFTER UPDATE OF rjob_id ON job_samples
    FOR EACH ROW EXECUTE FUNCTION fj_job_gpu_activity_note();
CREATE TRIGGER job_gpu_activity_job_gone AFTER DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION fj_job_gpu_activity_job_gone();

INSERT INTO job_gpu_activity (rjob_id, node_id, card, first_time, last_time, busy_last)
SELECT rjob_id, node_id, idx, min(time), max(time), max(CASE WHEN util > 0 THEN time ELSE 0 END)
  FROM (SELECT js.rjob_id, js.node_id, js.time, g.idx, sum(g.gpu_util_m) AS util
          FROM jobs j JOIN job_samples js ON js.rjob_id = j.id
          JOIN sample_proc_gpus g ON g.node_id = js.node_id AND g.time = js.time AND g.job = j.job
                                 AND g.epoch = j.epoch
         WHERE j.job <> 0
         GROUP BY js.rjob_id, js.node_id, js.time, g.idx) u
 GROUP BY rjob_id, node_id, idx;
