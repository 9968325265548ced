-- 0009_job_activity.sql — when each job was last busy on each of its nodes, for the problem-jobs
-- report (GET /api/v1/problems; docs/problems.md). The same table and meaning as SQLite's
-- migration 0010 (read its comment): per (job, node) the first and last node-sample, the last that
-- used CPU (cpu_m > 0) and the last that used a GPU (gpu_m > 0); 0: never. Kept by triggers on
-- job_samples (the writer's COPY and its moves of a merge fire them as its INSERTs do), every
-- column a minimum or maximum, read again from the rows when the last busy node-sample's figure is
-- lowered to 0; a job's rows go with the job. Not partitioned: one row per job and
-- node, kept when retention drops the weeks of job_samples.
CREATE TABLE job_activity (
    rjob_id bigint NOT NULL,
    node_id bigint NOT NULL,
    first_time bigint NOT NULL,
    last_time bigint NOT NULL,
    cpu_busy_last bigint NOT NULL,
    gpu_busy_last bigint NOT NULL,
    PRIMARY KEY (rjob_id, node_id)
);

CREATE FUNCTION fj_job_activity_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_activity VALUES (NEW.rjob_id, NEW.node_id, NEW.time, NEW.time,
                                     CASE WHEN NEW.cpu_m > 0 THEN NEW.time ELSE 0 END,
                                     CASE WHEN NEW.gpu_m > 0 THEN NEW.time ELSE 0 END)
    ON CONFLICT (rjob_id, node_id) DO UPDATE SET
        first_time = LEAST(job_activity.first_time, EXCLUDED.first_time),
        last_time = GREATEST(job_activity.last_time, EXCLUDED.last_time),
        cpu_busy_last = GREATEST(job_activity.cpu_busy_last, EXCLUDED.cpu_busy_last),
        gpu_busy_last = GREATEST(job_activity.gpu_busy_last, EXCLUDED.gpu_busy_last);
    -- a figure lowered to 0 on the last busy node-sample: read the last busy time again
    IF TG_OP = 'UPDATE' AND OLD.cpu_m > 0 AND NEW.cpu_m <= 0 THEN
        UPDATE job_activity
           SET cpu_busy_last = coalesce((SELECT max(time) FROM job_samples WHERE rjob_id = NEW.rjob_id
                                            AND node_id = NEW.node_id AND cpu_m > 0), 0)
         WHERE rjob_id = NEW.rjob_id AND node_id = NEW.node_id AND cpu_busy_last = NEW.time;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.gpu_m > 0 AND NEW.gpu_m <= 0 THEN
        UPDATE job_activity
           SET gpu_busy_last = coalesce((SELECT max(time) FROM job_samples WHERE rjob_id = NEW.rjob_id
                                            AND node_id = NEW.node_id AND gpu_m > 0), 0)
         WHERE rjob_id = NEW.rjob_id AND node_id = NEW.node_id AND gpu_busy_last = NEW.time;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION fj_job_activity_job_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM job_activity WHERE rjob_id = OLD.id;
    RETURN NULL;
END $$;

CREATE TRIGGER job_activity_insert AFTER INSERT ON job_samples
    FOR EACH ROW EXECUTE FUNCTION fj_job_activity_note();
CREATE TRIGGER job_activity_update AFTER UPDATE OF rjob_id, cpu_m, gpu_m ON job_samples
    FOR EACH ROW EXECUTE FUNCTION fj_job_activity_note();
CREATE TRIGGER job_activity_job_gone AFTER DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION fj_job_activity_job_gone();

CREATE INDEX jobs_last_seen ON jobs (cluster_id, last_seen);

INSERT INTO job_activity (rjob_id, node_id, first_time, last_time, cpu_busy_last, gpu_busy_last)
SELECT rjob_id, node_id, min(time), max(time), max(CASE WHEN cpu_m > 0 THEN time ELSE 0 END),
       max(CASE WHEN gpu_m > 0 THEN time ELSE 0 END)
  FROM job_samples GROUP BY rjob_id, node_id;
