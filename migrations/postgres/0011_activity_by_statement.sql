-- 0011_activity_by_statement.sql — job_activity and job_gpu_activity (0009, 0010) kept from the
-- rows an INSERT into job_samples added, once per statement, instead of once per row.
--
-- The writer inserts a whole group's job_samples rows in one statement (storage/pg/write.c); a row
-- trigger ran its upserts once per row, and job_gpu_activity's, a join through sample_proc_gpus,
-- was planned anew each time: measured with auto_explain, 80 % of the write path's time in the
-- database. A statement trigger reads the inserted rows as a transition table and upserts each
-- (job, node) and (job, node, card) once, with the same figures: first and last times are the
-- least and greatest over the rows, busy times the greatest, as the row triggers' LEAST and
-- GREATEST gave them row by row. Keys go in sorted, so two writers upsert in the same order.
--
-- The UPDATE triggers (a figure lowered, a row moved) stay row triggers: PostgreSQL allows no
-- transition table on a trigger with a column list, and updates are few.
DROP TRIGGER job_activity_insert ON job_samples;
DROP TRIGGER job_gpu_activity_insert ON job_samples;

CREATE FUNCTION fj_job_activity_note_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_activity
    SELECT rjob_id, node_id, min(time), max(time), max(CASE WHEN cpu_m > 0 THEN time ELSE 0 END),
           max(CASE WHEN gpu_m > 0 THEN time ELSE 0 END)
      FROM fj_added GROUP BY rjob_id, node_id ORDER BY rjob_id, node_id
    ON CONFLICT (rjob_id, node_id) DO UPDATE SET
        first_time = LEAST(job_activity.first_time, EXCLUDED.first_time),
        last_time = GREATEST(job_activity.last_time, EXCLUDED.last_time),
        cpu_busy_last = GREATEST(job_activity.cpu_busy_last, EXCLUDED.cpu_busy_last),
        gpu_busy_last = GREATEST(job_activity.gpu_busy_last, EXCLUDED.gpu_busy_last);
    RETURN NULL;
END $$;

CREATE FUNCTION fj_job_gpu_activity_note_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_gpu_activity
    SELECT rjob_id, node_id, idx, min(time), max(time), max(CASE WHEN util > 0 THEN time ELSE 0 END)
      FROM (SELECT a.rjob_id, a.node_id, a.time, g.idx, sum(g.gpu_util_m) AS util
              FROM fj_added a JOIN jobs j ON j.id = a.rjob_id
              JOIN sample_proc_gpus g ON g.node_id = a.node_id AND g.time = a.time AND g.job = j.job
                                     AND g.epoch = j.epoch
             WHERE j.job <> 0
             GROUP BY a.rjob_id, a.node_id, a.time, g.idx) u
     GROUP BY rjob_id, node_id, idx ORDER BY rjob_id, node_id, idx
    ON CONFLICT (rjob_id, node_id, card) DO UPDATE SET
        first_time = LEAST(job_gpu_activity.first_time, EXCLUDED.first_time),
        last_time = GREATEST(job_gpu_activity.last_time, EXCLUDED.last_time),
        busy_last = GREATEST(job_gpu_activity.busy_last, EXCLUDED.busy_last);
    RETURN NULL;
END $$;

CREATE TRIGGER job_activity_insert AFTER INSERT ON job_samples REFERENCING NEW TABLE AS fj_added
    FOR EACH STATEMENT EXECUTE FUNCTION fj_job_activity_note_rows();
CREATE TRIGGER job_gpu_activity_insert AFTER INSERT ON job_samples REFERENCING NEW TABLE AS fj_added
    FOR EACH STATEMENT EXECUTE FUNCTION fj_job_gpu_activity_note_rows();
